"""The regression gate: a current result set against a stored baseline.

Runs are paired by their place under the results root
(``<scenario>/<autoscaler>[/rate-<r>]``); both sets must hold the same runs,
else the comparison is refused (exit 2) naming what is missing on each side.
Each gated metric of the catalog has a direction and a tolerance: the share
by which it may get worse than the baseline before it counts as a
regression. Tolerances are relative to the baseline value, so a metric whose
baseline is 0 (no failures) may not grow at all. A current run that did not
complete is a regression by itself.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from scalearena.contracts.errors import UserError

from .catalog import BY_ID, METRICS, Metric
from .load import ResultSet, load_results

Verdict = Literal["improved", "same", "within", "regressed", "missing", "new", "n/a"]
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


@dataclass
class Comparison:
    baseline: ResultSet
    current: ResultSet
    tolerances: dict[str, float]
    deltas: list[Delta] = field(default_factory=list)
    incomplete: list[str] = field(default_factory=list)  # current runs that did not finish

    @property
    def regressions(self) -> list[Delta]:
        return [d for d in self.deltas if d.verdict in ("regressed", "missing") and d.tolerance_pct is not None]

    @property
    def passed(self) -> bool:
        return not self.regressions and not self.incomplete

    def keys(self) -> list[str]:
        return [r.key for r in self.current.runs]


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


def compare(baseline_dir: str | Path, current_dir: str | Path, tolerances: dict[str, float] | None = None
            ) -> Comparison:
    base, cur = load_results(baseline_dir), load_results(current_dir)
    if base.single_run and cur.single_run:  # two run folders: pair them whatever their names
        cur.runs[0].key = base.runs[0].key
        cur.by_key = {cur.runs[0].key: cur.runs[0]}
    only_base = sorted(set(base.by_key) - set(cur.by_key))
    only_cur = sorted(set(cur.by_key) - set(base.by_key))
    if only_base or only_cur:
        parts = []
        if only_base:
            parts.append(f"missing from current: {', '.join(only_base)}")
        if only_cur:
            parts.append(f"missing from baseline: {', '.join(only_cur)}")
        raise UserError("result sets do not match: " + "; ".join(parts), where=f"{baseline_dir} vs {current_dir}",
                        expected="the same scenario/autoscaler[/sweep] runs on both sides")
    tol = DEFAULT_TOLERANCES.copy() if tolerances is None else tolerances
    result = Comparison(base, cur, tol)
    for run in cur.runs:
        b = base.by_key[run.key]
        if run.summary.get("complete") is False and b.summary.get("complete") is not False:
            result.incomplete.append(run.key)
        for m in METRICS:
            bv, cv = m.value(b.summary), m.value(run.summary)
            t = tol.get(m.id)
            result.deltas.append(Delta(run.key, m, bv, cv, t, judge(m, bv, cv, t)))
    return result
