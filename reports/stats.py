"""Statistics over seeds: a mean with its 95 % confidence interval, the difference of two means with
its interval, and Welch's t-test.

Several seeds of one (scenario, autoscaler, sweep point) are independent samples of the same
experiment. ``estimate`` gives their mean and Student-t 95 % interval; ``difference`` the interval
of mean(a) - mean(b): paired by seed (a t interval on the per-seed differences) when both sides
ran the same seeds, else Welch's unequal-variance interval; ``welch`` the two-sided p-value of
Welch's t-test, which ``compare`` uses to tell a regression from seed noise. The t quantiles and
the test come from SciPy (``scipy.stats.t``, ``scipy.stats.ttest_ind(equal_var=False)``); only the
degenerate cases SciPy answers with NaN (fewer than two samples, zero variance) are decided here.
docs/reports.md states the method.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

LEVEL = 0.95  # confidence level of every interval


def t_quantile(df: float, level: float = LEVEL) -> float:
    """Two-sided Student-t critical value (e.g. df 4 -> 2.776); NaN for df <= 0."""
    from scipy import stats as sps  # imported when needed: scipy.stats costs ~1 s of start-up per process

    return float(sps.t.ppf(0.5 + level / 2, df)) if df > 0 else math.nan


def wilson_low(share: float, n: int, level: float = LEVEL) -> float:
    """The lower end of the Wilson score interval of a share measured over ``n`` trials (the ``share`` of
    ``n`` requests that met the SLO): the lowest attainment the run is consistent with at ``level``. The
    closed form (Wilson 1927) by hand, checked against scipy's ``binomtest(...).proportion_ci(method=
    "wilson")`` in the tests: importing scipy.stats costs about a second, and a report with one seed needs
    nothing else from it. z is the normal quantile (1.959964 at 95 %)."""
    if n <= 0:
        return share
    z = NormalDist().inv_cdf(0.5 + level / 2)
    z2n = z * z / n
    centre = share + z2n / 2
    spread = z * math.sqrt(max(0.0, share * (1 - share) / n + z2n / (4 * n)))
    return max(0.0, (centre - spread) / (1 + z2n))


@dataclass(frozen=True)
class Estimate:
    mean: float
    half_width: float  # 95 % CI half width; NaN with one sample
    n: int

    @property
    def low(self) -> float:
        return self.mean - self.half_width

    @property
    def high(self) -> float:
        return self.mean + self.half_width

    def fmt(self, spec: str = ".2f") -> str:
        if math.isnan(self.mean):
            return "n/a"
        if self.n < 2 or math.isnan(self.half_width):
            return f"{self.mean:{spec}}"
        return f"{self.mean:{spec}} ± {self.half_width:{spec}}"

    def excludes_zero(self) -> bool:
        """The interval lies wholly above or below 0 (False without an interval)."""
        return self.n >= 2 and not math.isnan(self.half_width) and (self.low > 0 or self.high < 0)


def _clean(values: Sequence[float | None]) -> list[float]:
    return [float(v) for v in values if v is not None and not math.isnan(float(v))]


def estimate(values: Sequence[float | None]) -> Estimate:
    """Mean and 95 % Student-t interval (None and NaN values are dropped)."""
    xs = _clean(values)
    n = len(xs)
    if n == 0:
        return Estimate(math.nan, math.nan, 0)
    mean = float(np.mean(xs))
    if n == 1:
        return Estimate(mean, math.nan, 1)
    se = float(np.std(xs, ddof=1)) / math.sqrt(n)
    return Estimate(mean, t_quantile(n - 1) * se, n)


def welch_df(va: float, na: int, vb: float, nb: int) -> float:
    """Welch-Satterthwaite degrees of freedom for sample variances ``va``, ``vb``."""
    qa, qb = va / na, vb / nb
    den = qa * qa / (na - 1) + qb * qb / (nb - 1)
    return (qa + qb) ** 2 / den if den > 0 else math.inf


def difference(a: Sequence[float | None], b: Sequence[float | None],
               seeds_a: Sequence[int] | None = None, seeds_b: Sequence[int] | None = None) -> Estimate:
    """mean(a) - mean(b) with its 95 % interval. With seeds given for both and the same seed set on
    both sides, paired (``estimate`` of the per-seed differences); else Welch's interval."""
    if seeds_a is not None and seeds_b is not None and sorted(seeds_a) == sorted(seeds_b) \
            and len(set(seeds_a)) == len(seeds_a) and len(a) == len(seeds_a) and len(b) == len(seeds_b):
        by_b = dict(zip(seeds_b, b, strict=True))
        pairs = [(x, by_b[s]) for s, x in zip(seeds_a, a, strict=True)]
        return estimate([None if x is None or y is None else x - y for x, y in pairs])
    xa, xb = _clean(a), _clean(b)
    if not xa or not xb:
        return Estimate(math.nan, math.nan, 0)
    mean = float(np.mean(xa) - np.mean(xb))
    if len(xa) < 2 or len(xb) < 2:
        return Estimate(mean, math.nan, 1)
    va, vb = float(np.var(xa, ddof=1)), float(np.var(xb, ddof=1))
    se = math.sqrt(va / len(xa) + vb / len(xb))
    df = welch_df(va, len(xa), vb, len(xb))
    half = 0.0 if se == 0 else t_quantile(df) * se
    return Estimate(mean, half, min(len(xa), len(xb)))


def paired_p(a: Sequence[float | None], b: Sequence[float | None]) -> float | None:
    """Two-sided p-value of the paired t-test (``scipy.stats.ttest_rel``) over aligned pairs (a pair with a
    None or NaN is dropped); None with fewer than two pairs. Differences without spread: 1.0 when they
    are all 0, else 0.0."""
    pairs = [(float(x), float(y)) for x, y in zip(a, b, strict=True)
             if x is not None and y is not None and not math.isnan(float(x)) and not math.isnan(float(y))]
    if len(pairs) < 2:
        return None
    d = [x - y for x, y in pairs]
    if np.var(d) == 0:
        return 1.0 if d[0] == 0 else 0.0
    from scipy import stats as sps

    return float(sps.ttest_rel([x for x, _ in pairs], [y for _, y in pairs]).pvalue)


def welch(a: Sequence[float | None], b: Sequence[float | None]) -> float | None:
    """Two-sided p-value of Welch's t-test of equal means; None with fewer than two values a side.
    Both sides without spread: 1.0 when the means are equal, else 0.0 (no noise can explain it)."""
    xa, xb = _clean(a), _clean(b)
    if len(xa) < 2 or len(xb) < 2:
        return None
    if np.var(xa) == 0 and np.var(xb) == 0:
        return 1.0 if np.mean(xa) == np.mean(xb) else 0.0
    from scipy import stats as sps

    return float(sps.ttest_ind(xa, xb, equal_var=False).pvalue)


@dataclass(frozen=True)
class SeedComparison:
    """mean(a) - mean(b) over seeds, the p-value of its test and which test it was."""

    diff: Estimate
    p_value: float | None
    paired: bool

    @property
    def test(self) -> str:
        return "paired t" if self.paired else "Welch t"


def compare_seeds(a: Sequence[float | None], b: Sequence[float | None],
                  seeds_a: Sequence[int | None] | None = None,
                  seeds_b: Sequence[int | None] | None = None) -> SeedComparison:
    """The one rule for comparing two sets of seeded runs (suite pairs, compare's noise test): paired (the
    difference's interval and ``paired_p``) when both sides ran the same seeds, each once; else Welch's
    interval and ``welch``."""
    paired = (seeds_a is not None and seeds_b is not None and None not in seeds_a and None not in seeds_b
              and len(a) == len(seeds_a) and len(b) == len(seeds_b) and len(set(seeds_a)) == len(seeds_a)
              and sorted(seeds_a) == sorted(seeds_b))  # type: ignore[type-var]  # no None: checked above
    if not paired:
        return SeedComparison(difference(a, b), welch(a, b), False)
    sa, sb = [x for x in seeds_a or () if x is not None], [x for x in seeds_b or () if x is not None]
    by_b = dict(zip(sb, b, strict=True))
    return SeedComparison(difference(a, b, sa, sb), paired_p(a, [by_b[s] for s in sa]), True)

