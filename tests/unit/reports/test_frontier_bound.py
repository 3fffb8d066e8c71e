"""Does the oracle frontier bound the paper suite's deployable autoscalers? Checked on the stored sim baseline
(baselines/sim: the 46 summaries and frontier.json of `make baseline`, which runs the frontier), so it is a
pure test and follows the baseline whenever that is refreshed.

It does everywhere since regret reads the bound at the low end of a point's attainment interval
(reports/verdict.py, wilson_low). Before, physical-validation at 6 req/s (the 10-replica cap serves ~5
req/s, every run misses the SLO on > 85 % of requests) had keda below the bound: 14.2 % at 1.255 GPU-h
against the full plan's 15.1 % at 1.698; over its ~3,600 requests 14.2 % is consistent with 13.1 %, where
the bound is below keda's cost (docs/metrics.md, "What the oracle knows and does not").
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from scalearena.harness.config.frontier_spec import FrontierSpec
from scalearena.reports import suite_decide
from scalearena.reports.catalog import BY_ID
from scalearena.reports.load import load_results

BASELINE = Path(__file__).resolve().parents[3] / "baselines" / "sim"
# wva-headroom left this list when the simulator began to run and bill the 120 s drain like every backend
# (docs/metrics.md "The run's window"); keda when regret began to allow for the attainment's noise (issue 28)
KNOWN_VIOLATIONS: dict[tuple[str, str], list[str]] = {}


def _decisions() -> dict[tuple[str, str], suite_decide.PointDecision]:
    rs = load_results(BASELINE)
    out = {}
    for sc in rs.scenarios():
        for d in suite_decide.decisions(rs, [r for r in rs.runs if r.scenario == sc], BY_ID["gpu_hours"], 0.95):
            out[(sc, d.point)] = d
    return out


def test_the_baseline_holds_the_default_frontier_of_every_scenario_point() -> None:
    path = BASELINE / "frontier.json"
    assert path.is_file(), "baselines/sim/frontier.json missing: refresh with `make baseline` (it runs the frontier)"
    doc = json.loads(path.read_text())
    spec = FrontierSpec(enabled=True)
    assert doc["utilization"] == sorted(spec.utilization, reverse=True) and doc["floor"] is True
    points = {(r["scenario"], r["point"]) for r in doc["points"]}
    assert points == set(_decisions())  # 6 scenario points: exp1, exp2, physical-validation at 2, 3, 5, 6 req/s
    assert len(doc["points"]) == 6 * 7 and all(r["summary"].get("complete") is True for r in doc["points"])


def test_no_deployable_autoscaler_beats_the_bound_beyond_noise_except_in_overload() -> None:
    found = {k: d.verdict.violations for k, d in _decisions().items() if d.verdict.violations}
    assert found == KNOWN_VIOLATIONS


@pytest.mark.parametrize("key", [("exp1-staircase", ""), ("exp2-cost-aware", ""),
                                 ("physical-validation", "rate-2"), ("physical-validation", "rate-3")])
def test_every_regret_is_a_number_at_least_zero_where_the_bound_holds(key: tuple[str, str]) -> None:
    d = _decisions()[key]
    for name, r in d.verdict.regret.items():
        assert r.gpu_hours is not None and r.gpu_hours >= 0, (name, r)
    # static (one replica all run long) is the floor plan itself: regret exactly 0
    assert d.verdict.regret["static"].gpu_hours == 0.0
