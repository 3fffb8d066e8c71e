"""Does the oracle frontier bound the paper suite's deployable autoscalers? Checked on the stored sim baseline
(baselines/sim: the 46 summaries and frontier.json of `make baseline`, which runs the frontier), so it is a
pure test and follows the baseline whenever that is refreshed.

Where it does not, and why (docs/metrics.md, "What the oracle knows and does not"): physical-validation at
6 req/s, where the 10-replica cap serves ~5 req/s and every run misses the SLO on > 85 % of requests.
There attainment is set by the queue each minute inherits and by Poisson dips, not by capacity: the
frontier's plans (and their mixes) hold 10 replicas from the first minute, which buys 5-7 % per minute
until the queue drains in a dip, while keda's and wva-headroom's slow ramps pay for fewer replicas early
and reach 10 in time for the same late dips (keda: 14.2 % at 1.255 GPU-h, the full plan 15.1 % at 1.698).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from scalearena.harness.frontier_spec import FrontierSpec
from scalearena.reports import suite_decide
from scalearena.reports.catalog import BY_ID
from scalearena.reports.load import load_results

BASELINE = Path(__file__).resolve().parents[2] / "baselines" / "sim"
# wva-headroom left this list when the simulator began to run and bill the 120 s drain like every backend
# (docs/metrics.md "The run's window"); keda still lands under the bound at 6 req/s (issue: the oracle is no bound)
KNOWN_VIOLATIONS = {("physical-validation", "rate-6"): ["keda"]}


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
    assert len(doc["points"]) == 6 * 6 and all(r["summary"].get("complete") is True for r in doc["points"])


def test_no_deployable_autoscaler_beats_the_bound_beyond_noise_except_in_overload() -> None:
    found = {k: d.verdict.violations for k, d in _decisions().items() if d.verdict.violations}
    assert found == KNOWN_VIOLATIONS
    for key in found:  # only where nothing gets near the target: the frontier's best attainment is under 20 %
        hull = _decisions()[key].verdict.frontier.hull()
        assert hull[-1][0] < 0.2


@pytest.mark.parametrize("key", [("exp1-staircase", ""), ("exp2-cost-aware", ""),
                                 ("physical-validation", "rate-2"), ("physical-validation", "rate-3")])
def test_every_regret_is_a_number_at_least_zero_where_the_bound_holds(key: tuple[str, str]) -> None:
    d = _decisions()[key]
    for name, r in d.verdict.regret.items():
        assert r.gpu_hours is not None and r.gpu_hours >= 0, (name, r)
    # static (one replica all run long) is the floor plan itself: regret exactly 0
    assert d.verdict.regret["static"].gpu_hours == 0.0
