"""The regression gate: a current result set against a stored baseline.

Runs are paired by their place under the results root
(``<scenario>/<autoscaler>[/rate-<r>]``); both sets must hold the same runs,
else the comparison is refused (exit 2) naming what is missing on each side.
Each gated metric of the catalog has a direction and a tolerance: the share
by which it may get worse than the baseline before it counts as a
regression. Tolerances are relative to the baseline value, so a metric whose
baseline is 0 (no failures) may not grow at all.

The gate trusts nothing it reads: every summary on both sides is checked
first (``check_summary``: ``complete`` a JSON boolean, every number finite,
counts non-negative integers, gated metrics non-negative numbers), so a
``goodput_rps: NaN`` or ``"complete": "false"`` is refused (exit 2) instead of
comparing false against true. Incomplete runs (interrupted, crashed) are
refused too unless ``allow_incomplete``; then a current run that did not
complete is a regression by itself.

Seeds separate a regression from noise. Runs repeated over seeds
(``<run>/seed-<n>/``) are judged per run *group* on their means: a change
beyond tolerance in the worse direction is a regression only when it is also
significant, p < ``ALPHA`` (0.05) — the paired t-test over the per-seed
differences when both sides ran the same seeds (the seed fixes the arrivals,
so pairing removes their noise), else Welch's t-test (reports/stats.py) —
and is reported as ``noise`` otherwise. Each such delta carries its p-value
and the 95 % interval of current - baseline. With one seed per run the gate
cannot tell the two apart: it judges on tolerance alone and says so
(``Comparison.noise_blind``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from scalearena.contracts.errors import UserError
from scalearena.reports.catalog import BY_ID, METRICS, Metric
from scalearena.reports.compare_config import RunFilter, config_changes, select
from scalearena.reports.load import ResultSet, Run, load_results
from scalearena.reports.stats import compare_seeds
from scalearena.reports.trust import check_summary

Verdict = Literal["improved", "same", "within", "regressed", "noise", "missing", "new", "n/a"]
ALPHA = 0.05  # a worsening beyond tolerance with p >= ALPHA is seed noise, not a regression
_SEED = re.compile(r"/seed-(\d+)$")
DEFAULT_TOLERANCES: dict[str, float] = {m.id: m.tolerance_pct for m in METRICS if m.tolerance_pct is not None}
_TOL = re.compile(r"^\s*([A-Za-z0-9_.]+)\s*=\s*(?:([+-]?\d+(?:\.\d+)?)\s*%?|(off|none))\s*$", re.IGNORECASE)


def parse_tolerances(items: list[str] | tuple[str, ...]) -> dict[str, float]:
    """Defaults, overridden by ``metric=pct`` items (sign ignored: the direction is the metric's;
    ``metric=off`` stops gating it)."""
    tol = dict(DEFAULT_TOLERANCES)
    for item in items:
        m = _TOL.match(item)
        if not m:
            raise UserError(f"--tolerance {item!r}: bad syntax", expected="METRIC=PCT, e.g. ttft_p99=15 or cost=off")
        metric_id, pct, off = m.group(1), m.group(2), m.group(3)
        if metric_id not in BY_ID:
            raise UserError(f"--tolerance {item!r}: unknown metric {metric_id!r}",
                            expected="one of " + ", ".join(sorted(BY_ID)))
        if BY_ID[metric_id].direction == "none":
            raise UserError(f"--tolerance {item!r}: {metric_id} has no better direction and cannot be gated")
        if off:
            tol.pop(metric_id, None)
        else:
            tol[metric_id] = abs(float(pct))
    return tol


@dataclass(frozen=True)
class Delta:
    key: str  # run key: scenario/autoscaler[/sweep]
    metric: Metric
    baseline: float | None
    current: float | None
    tolerance_pct: float | None
    verdict: Verdict
    n: int = 1  # seeds on each side (the fewer)
    p_value: float | None = None  # paired t or Welch (``test``), with several seeds
    ci_half: float | None = None  # 95 % half width of current - baseline
    test: str = ""  # "paired t" | "Welch t"

    @property
    def noise_text(self) -> str:
        """The seeds' say on this change: p and the interval of current - baseline, or that there is none."""
        if self.n < 2:
            return "noise-blind (1 seed)"
        if self.p_value is None:
            return f"{self.n} seeds"
        ci = "" if self.ci_half is None else f", ±{self.ci_half:.3g}"
        return f"p={self.p_value:.2g}{ci} ({self.test}, {self.n} seeds)"

    @property
    def change_pct(self) -> float | None:
        if self.baseline is None or self.current is None or self.baseline == 0:
            return None
        return (self.current - self.baseline) / abs(self.baseline) * 100.0

    @property
    def change_text(self) -> str:
        if self.baseline is None or self.current is None:
            return "–"
        pct = self.change_pct
        diff = self.current - self.baseline
        return f"{diff:+.4g}" + (f" ({pct:+.1f} %)" if pct is not None else "")

    @property
    def beyond_tolerance(self) -> bool:
        """The change (either way) is larger than the tolerance; False for ungated metrics."""
        if self.tolerance_pct is None or self.baseline is None or self.current is None:
            return False
        return abs(self.current - self.baseline) > self.tolerance_pct / 100.0 * abs(self.baseline) * (1 + 1e-9)


@dataclass
class Comparison:
    baseline: ResultSet
    current: ResultSet
    tolerances: dict[str, float]
    deltas: list[Delta] = field(default_factory=list)
    incomplete: list[str] = field(default_factory=list)  # current runs that did not finish
    config_changes: list[str] = field(default_factory=list)  # SLO/workload settings that differ between sides

    @property
    def regressions(self) -> list[Delta]:
        return [d for d in self.deltas if d.verdict in ("regressed", "missing") and d.tolerance_pct is not None]

    @property
    def noisy(self) -> list[Delta]:
        """Gated metrics worse beyond tolerance whose seeds say it may be noise (p >= ALPHA)."""
        return [d for d in self.deltas if d.verdict == "noise" and d.tolerance_pct is not None]

    @property
    def improvements(self) -> list[Delta]:
        """Gated metrics that got better by more than their tolerance."""
        return [d for d in self.deltas if d.verdict == "improved" and d.beyond_tolerance]

    @property
    def passed(self) -> bool:
        return not self.regressions and not self.incomplete

    @property
    def seeds(self) -> int:
        """Seeds per run group on the side with fewer (1: no seed folders)."""
        return min((d.n for d in self.deltas), default=1)

    @property
    def noise_blind(self) -> bool:
        return self.seeds < 2

    def keys(self) -> list[str]:
        return list(dict.fromkeys(group_key(r.key) for r in self.current.runs))


def judge(metric: Metric, base: float | None, cur: float | None, tol_pct: float | None) -> Verdict:
    if base is None and cur is None:
        return "n/a"
    if base is None:
        return "new"
    if cur is None:
        return "missing"
    if cur == base:
        return "same"
    worse = (cur - base) if metric.direction == "lower" else (base - cur)
    if metric.direction == "none":
        return "within"
    if worse < 0:
        return "improved"
    if tol_pct is None:
        return "within"
    allowed = tol_pct / 100.0 * abs(base)
    return "regressed" if worse > allowed * (1 + 1e-9) else "within"


def compare(baseline_dir: str | Path, current_dir: str | Path, tolerances: dict[str, float] | None = None,
            allow_incomplete: bool = False, *, only: RunFilter | None = None) -> Comparison:
    """Pair the runs of both folders (those ``only`` selects) and judge every metric of every run."""
    base, cur = select(load_results(baseline_dir), only), select(load_results(current_dir), only)
    if only and not cur.runs:
        raise UserError(f"no run matches {only.describe()}", where=str(current_dir),
                        expected="a glob matching at least one run, e.g. --scenario 'exp1-*'")
    for run in base.runs + cur.runs:
        check_summary(run)
    if not allow_incomplete:
        _refuse_incomplete(base, cur)
    if base.single_run and cur.single_run:  # two run folders: pair them whatever their names
        cur.runs[0].key = base.runs[0].key
        cur.by_key = {cur.runs[0].key: cur.runs[0]}
    base_groups, cur_groups = {group_key(k) for k in base.by_key}, {group_key(k) for k in cur.by_key}
    only_base = sorted(base_groups - cur_groups)
    only_cur = sorted(cur_groups - base_groups)
    if only_base or only_cur:
        parts = []
        if only_base:
            parts.append(f"missing from current: {', '.join(only_base)}")
        if only_cur:
            parts.append(f"missing from baseline: {', '.join(only_cur)}")
        raise UserError("result sets do not match: " + "; ".join(parts), where=f"{baseline_dir} vs {current_dir}",
                        expected="the same scenario/autoscaler[/sweep] runs on both sides (their seeds may differ)")
    tol = DEFAULT_TOLERANCES.copy() if tolerances is None else tolerances
    return _judge_all(base, cur, tol)


def _refuse_incomplete(base: ResultSet, cur: ResultSet) -> None:
    sides = [(name, [r.key for r in rs.runs if r.summary["complete"] is False])
             for name, rs in (("baseline", base), ("current", cur))]
    if any(keys for _, keys in sides):
        listed = "; ".join(f"{name}: {', '.join(keys)}" for name, keys in sides if keys)
        raise UserError(f"incomplete runs (interrupted or failed) cannot be gated: {listed}",
                        where=f"{base.root} vs {cur.root}",
                        expected="complete runs, or --allow-incomplete (an incomplete current run then fails)")


def group_key(key: str) -> str:
    """A run's key without its seed folder: the runs of one group differ only in their seed."""
    return _SEED.sub("", key)


def _seed(run: Run) -> int | None:
    m = _SEED.search(run.key)
    return int(m.group(1)) if m else None


def _noise(metric: Metric, base: list[Run], cur: list[Run]) -> tuple[float | None, float | None, str]:
    """(p-value, 95 % half width of current - baseline, test) over the seeds of one group."""
    bv, cv = [metric.value(r.summary) for r in base], [metric.value(r.summary) for r in cur]
    c = compare_seeds(cv, bv, [_seed(r) for r in cur], [_seed(r) for r in base])
    d = c.diff
    return c.p_value, (None if d.n < 2 or d.half_width != d.half_width else d.half_width), c.test


def _mean(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def _judge_all(base: ResultSet, cur: ResultSet, tol: dict[str, float]) -> Comparison:
    shared = [r.key for r in cur.runs if r.key in base.by_key]
    result = Comparison(base, cur, tol, config_changes=config_changes(base, cur, shared))
    groups: dict[str, tuple[list[Run], list[Run]]] = {}
    for run in base.runs:
        groups.setdefault(group_key(run.key), ([], []))[0].append(run)
    for run in cur.runs:
        b = base.by_key.get(run.key)
        was_complete = b is None or b.summary.get("complete") is not False
        if run.summary.get("complete") is False and was_complete:
            result.incomplete.append(run.key)
        groups[group_key(run.key)][1].append(run)
    for key in dict.fromkeys(group_key(r.key) for r in cur.runs):
        bs, cs = groups[key]
        n = min(len(bs), len(cs))
        for m in METRICS:
            bv, cv = _mean([m.value(r.summary) for r in bs]), _mean([m.value(r.summary) for r in cs])
            t = tol.get(m.id)
            verdict = judge(m, bv, cv, t)
            p = half = None
            test = ""
            if n > 1 and bv is not None and cv is not None:
                p, half, test = _noise(m, bs, cs)
                if verdict == "regressed" and p is not None and p >= ALPHA:
                    verdict = "noise"
            result.deltas.append(Delta(key, m, bv, cv, t, verdict, n, p, half, test))
    return result
