"""The bounds of a scenario point as the suite and tune pages read them from OUT/frontier.json (written by
harness/sizing/frontier.py): the oracle frontier's runs, which become ``verdict.Point`` s of the bound regret is
measured against (reports/verdict.py ``Frontier``), and llm-d-autoscaling #1499's "perfect system"
(harness/sizing/perfect_system.py), a reference shown next to it. Both are averaged over seeds like any point
(the frontier per setting). Reading only: no number here is computed from runs.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scalearena.reports.catalog import BY_ID, Metric
from scalearena.reports.stats import estimate
from scalearena.reports.verdict import Point

FRONTIER_FILE = "frontier.json"  # harness/sizing/frontier.py writes it when a suite runs the oracle frontier


def _rows(doc: Any, key: str) -> list[dict[str, Any]]:
    rows = doc.get(key) if isinstance(doc, dict) else None
    return [r for r in rows if isinstance(r, dict) and isinstance(r.get("summary"), dict)] if isinstance(rows, list) else []


def bound_rows(doc: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A frontier document's (frontier.json, or tune.json's ``frontier``) run rows and perfect-system rows."""
    return _rows(doc, "points"), _rows(doc, "perfect_system")


def read_bounds(root: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """OUT/frontier.json's rows (none without one, or when it cannot be read: the report then says there is
    no frontier)."""
    try:
        doc = json.loads((Path(root) / FRONTIER_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return [], []
    return bound_rows(doc)


def _select(rows: list[dict[str, Any]], scenario: str | None, point: str) -> list[dict[str, Any]]:
    return [r for r in rows if scenario is None or (r.get("scenario") == scenario and r.get("point", "") == point)]


def _mean(m: Metric, summaries: list[dict[str, Any]]) -> float | None:
    e = estimate([m.value(x) for x in summaries])
    return None if e.n == 0 else e.mean


def frontier_points(rows: list[dict[str, Any]], cost: Metric, scenario: str | None = None,
                    point: str = "") -> list[Point]:
    """The frontier's points of one scenario and sweep point (``scenario`` None: every row, a tuning study's),
    one per setting, the mean over its seeds; complete only when every seed's run completed."""
    by_setting: dict[str, list[dict[str, Any]]] = {}
    for r in _select(rows, scenario, point):
        by_setting.setdefault(str(r.get("setting")), []).append(r["summary"])
    out = []
    for setting, ss in by_setting.items():
        floor = setting == "floor"
        out.append(Point(name="floor" if floor else f"oracle {setting}", cost=_mean(cost, ss),
                         gpu_hours=_mean(BY_ID["gpu_hours"], ss), attainment=_mean(BY_ID["slo_attainment"], ss),
                         goodput_rps=_mean(BY_ID["goodput_rps"], ss), bound=True,
                         complete=all(x.get("complete") is True for x in ss), n=len(ss), floor=floor, frontier=True))
    return sorted(out, key=lambda p: (p.cost is None, p.cost or 0.0, p.name))


@dataclass(frozen=True)
class Perfect:
    """#1499's perfect system at one scenario point, means over seeds."""

    gpu_hours: float | None
    cost: float | None  # in the page's cost unit
    peak_gpus: float | None
    windows_over_max: float  # windows the variants at max_replicas could not serve within the SLO (mean)
    windows: int
    n: int


def perfect_reference(rows: list[dict[str, Any]], cost: Metric, scenario: str | None = None,
                      point: str = "") -> Perfect | None:
    ss = [r["summary"] for r in _select(rows, scenario, point)]
    if not ss:
        return None
    peak = estimate([x.get("peak_gpus") for x in ss])
    return Perfect(_mean(BY_ID["gpu_hours"], ss), _mean(cost, ss), None if peak.n == 0 else peak.mean,
                   sum(float(x.get("windows_over_max") or 0) for x in ss) / len(ss), int(ss[0].get("windows") or 0),
                   len(ss))
