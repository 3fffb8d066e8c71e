"""Statistics over the seeds of a suite: mean and 95 % interval per metric, autoscaler and sweep point,
and the difference of every autoscaler pair with its interval and p-value.

A suite run with ``seeds: [..]`` repeats every run in ``seed-<n>/`` folders; the runs of one
(scenario, sweep point, autoscaler) are independent samples (``suite_decide.groups``). The numbers
come from reports/stats.py (Student-t intervals; when both autoscalers ran the same seeds the paired
difference and the paired t-test's p-value, else Welch's interval and p-value): this module only groups runs and lays the
results out, for the suite page and for ``OUT/suite_summary.json``, which carries every value the
page shows. With one seed per group there is no interval (``half_width`` null) and the page says so.
"""
from __future__ import annotations

import itertools
import math
from typing import Any

from scalearena.reports.catalog import BY_ID, Metric
from scalearena.reports.load import ResultSet, Run, natural_key
from scalearena.reports.stats import Estimate, compare_seeds, estimate
from scalearena.reports.suite_decide import groups

# Metrics of the pairwise differences: what a choice between two autoscalers turns on.
PAIR_METRICS = ("slo_attainment", "goodput_rps", "cost", "ttft_p99")
SUMMARY_FILE = "suite_summary.json"


def _num(x: float) -> float | None:
    return None if math.isnan(x) else x


def estimate_json(e: Estimate, values: list[float | None]) -> dict[str, Any]:
    return {"mean": _num(e.mean), "half_width": _num(e.half_width), "low": _num(e.low), "high": _num(e.high),
            "n": e.n, "values": values}


def group_stats(runs: list[Run], metrics: list[Metric]) -> dict[tuple[str, str], dict[str, Any]]:
    """(point, autoscaler) -> {"seeds": [...], metric id: (Estimate, per-seed values)}."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for key, group in groups(runs).items():
        entry: dict[str, Any] = {"seeds": [r.seed for r in group], "runs": group}
        for m in metrics:
            values = [m.value(r.summary) for r in group]
            entry[m.id] = (estimate(values), values)
        out[key] = entry
    return out


def pair_differences(stats: dict[tuple[str, str], dict[str, Any]], metrics: list[Metric]) -> list[dict[str, Any]]:
    """Every pair of autoscalers at one point, for each metric: mean(a) - mean(b) with its 95 %
    interval (paired by seed when both ran the same seeds, else Welch) and the matching p-value."""
    out = []
    by_point: dict[str, list[str]] = {}
    for point, autoscaler in stats:
        by_point.setdefault(point, []).append(autoscaler)
    for point in sorted(by_point, key=natural_key):
        for a, b in itertools.combinations(sorted(by_point[point]), 2):
            sa, sb = stats[(point, a)], stats[(point, b)]
            for m in metrics:
                va, vb = sa[m.id][1], sb[m.id][1]
                c = compare_seeds(va, vb, sa["seeds"], sb["seeds"])
                d, p = c.diff, c.p_value
                out.append({"point": point, "a": a, "b": b, "metric": m.id, "diff": _num(d.mean),
                            "half_width": _num(d.half_width), "n": d.n, "paired": c.paired, "p_value": p,
                            "significant": d.excludes_zero()})
    return out


def pair_metrics(cost: Metric) -> list[Metric]:
    return [cost if m == "cost" else BY_ID[m] for m in PAIR_METRICS]


def suite_summary(rs: ResultSet, metrics: list[Metric], cost: Metric) -> dict[str, Any]:
    """``OUT/suite_summary.json``: per scenario, point and autoscaler every table metric's mean, 95 %
    interval and per-seed values; per point every autoscaler pair's differences (module docstring)."""
    scenarios: dict[str, Any] = {}
    for name in rs.scenarios():
        runs = [r for r in rs.runs if r.scenario == name]
        stats = group_stats(runs, list(dict.fromkeys([*metrics, *pair_metrics(cost)])))
        pairs = pair_differences(stats, pair_metrics(cost))
        scenarios[name] = {
            "groups": [{"point": p, "autoscaler": a, "seeds": s["seeds"],
                        "metrics": {m.id: estimate_json(*s[m.id]) for m in metrics}}
                       for (p, a), s in stats.items()],
            "pairs": pairs,
        }
    seeds = max((len(g["seeds"]) for sc in scenarios.values() for g in sc["groups"]), default=0)
    return {"confidence": 0.95, "interval": "Student t over seeds (reports/stats.py)", "max_seeds": seeds,
            "difference": "paired t (interval and p) when both autoscalers ran the same seeds, else Welch's t",
            "cost_metric": cost.id, "scenarios": scenarios}
