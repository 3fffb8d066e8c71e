"""KEDA triggers: several triggers, PromQL queries read as KEDA's prometheus scaler reads them,
idleReplicaCount, initialCooldownPeriod, fallback behaviors and scalingModifiers."""
from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from scalearena.contracts.errors import MetricsUnavailable
from scalearena.controllers.keda import KEDA, KEDAConfig
from scalearena.controllers.keda_scaler import prometheus_value
from tests.unit.viewkit import FakeMetrics, pods, variant, view


class PromFake(FakeMetrics):
    """A metrics source answering PromQL from a table {query: result} (Prometheus API ``data.result``)."""

    def __init__(self, results: dict[str, Any], unavailable: bool = False) -> None:
        super().__init__(unavailable=unavailable)
        self.results = results

    def query(self, expr: str, at: float | None = None) -> Any:
        self._check()
        return self.results[expr]


def series(*values: float) -> list[dict[str, Any]]:
    return [{"metric": {"pod": f"p{i}"}, "value": [0.0, repr(v)]} for i, v in enumerate(values)]


def run(k: KEDA, t: float, v, results: dict[str, Any] | None = None, queue: int = 0, dark: bool = False):
    return k.decide(t, view(t, v, router_queue={"m": queue}, metrics=PromFake(results or {}, dark)))[0]


Q1, Q2 = "sum(vllm:num_requests_waiting)", "sum(llm_d_epp_flow_control_queue_size)"
TWO = [{"name": "waiting", "query": Q1, "threshold": 3}, {"name": "epp", "query": Q2, "threshold": 5}]


# -- prometheus scaler reading (kedacore/keda pkg/scalers/prometheus_scaler.go ExecutePromQuery) --

def test_empty_result_is_zero_or_an_error():
    assert prometheus_value([], "q", ignore_null_values=True) == 0.0
    with pytest.raises(MetricsUnavailable, match="the result is empty"):
        prometheus_value([], "q", ignore_null_values=False)


def test_several_series_are_an_error_not_a_sum():
    with pytest.raises(MetricsUnavailable, match="returned multiple elements"):
        prometheus_value(series(1, 2), "q", ignore_null_values=True)


@pytest.mark.parametrize("raw", ["+Inf", "-Inf"])
def test_inf_reads_zero_only_when_ignoring_nulls(raw):
    # prometheus_scaler_test.go (kedacore/keda main) "+Inf" / "+Inf but shouldn't ignore" / "-Inf" / "-Inf but
    # shouldn't ignore": 0 without error, else an error
    result = [{"metric": {}, "value": [0.0, raw]}]
    assert prometheus_value(result, "q", ignore_null_values=True) == 0.0
    with pytest.raises(MetricsUnavailable, match="returns"):
        prometheus_value(result, "q", ignore_null_values=False)


@pytest.mark.parametrize("ignore", [True, False])
def test_nan_is_no_error_and_reads_zero(ignore):
    # ExecutePromQuery checks only math.IsInf, so "NaN" (0 / 0 at idle: sum(rate(x_sum)) / sum(rate(x_count)))
    # is a value; quantityFromFloat64 makes the metric 0. Not counted toward fallback even without
    # ignoreNullValues (an error here would hold the target, and with fallback move it, where KEDA scales in)
    assert prometheus_value([{"metric": {}, "value": [0.0, "NaN"]}], "q", ignore_null_values=ignore) == 0.0


def test_a_scalar_result_is_an_error():
    with pytest.raises(MetricsUnavailable, match="did not return a vector"):
        prometheus_value([0.0, "3"], "scalar(x)", ignore_null_values=True)


# -- several triggers --

def test_hpa_takes_the_largest_per_trigger_proposal():
    k = KEDA(KEDAConfig(triggers=TWO))
    # waiting 7 / 3 -> ceil 2.33 = 3; epp 18 / 5 -> ceil 3.6 = 4; largest 4 (legacy limit max(2 x 2, 4) = 4)
    d = run(k, 0, variant(spec=2, pods=pods(1, 1)), {Q1: series(7), Q2: series(18)})
    assert d.desired_replicas == 4
    assert [r.values["proposal"] for r in d.reasons if r.rule == "metric"] == [3, 4]


def test_active_when_any_trigger_is_active():
    trig = [{**TWO[0], "activation_threshold": 10}, {**TWO[1], "activation_threshold": 1}]
    k = KEDA(KEDAConfig(triggers=trig))
    zero = variant(spec=0, min_replicas=0)
    assert run(k, 0, zero, {Q1: series(5), Q2: series(1)}).desired_replicas == 0  # 5 <= 10, 1 <= 1
    assert run(k, 30, zero, {Q1: series(5), Q2: series(2)}).desired_replicas == 1  # 2 > 1: active


def test_one_trigger_failing_blocks_a_scale_down_but_not_a_scale_up():
    k = KEDA(KEDAConfig(triggers=TWO))
    # waiting fails (two series); epp 5 / 5 = 1 replica < current 4: upstream keeps 4 with an invalid metric
    d = run(k, 0, variant(spec=4, pods=pods(0, 0, 0, 0)), {Q1: series(1, 2), Q2: series(5)})
    assert d.desired_replicas == 4 and d.reasons[0].rule == "trigger_error"
    # epp 40 / 5 = 8 > 4: the valid metric scales up (legacy limit max(2 x 4, 4) = 8)
    d = run(k, 15, variant(spec=4, pods=pods(0, 0, 0, 0)), {Q1: series(1, 2), Q2: series(40)})
    assert d.desired_replicas == 8


# -- idleReplicaCount and initialCooldownPeriod (scale_scaledobjects.go RequestScale) --

def test_idle_replica_count_goes_to_idle_and_activation_to_min():
    k = KEDA(KEDAConfig(idle_replica_count=0, cooldown_period_s=60))
    three = variant(spec=3, pods=pods(0, 0, 0), min_replicas=3)
    assert run(k, 0, three, queue=1).desired_replicas == 3  # active at 0
    assert run(k, 30, three).desired_replicas == 3  # inactive: 0 + 60 < 30 is false
    assert run(k, 60, three).desired_replicas == 3  # 0 + 60 < 60 is false
    d = run(k, 90, three)  # 60 < 90: scale to idleReplicaCount 0
    assert (d.desired_replicas, d.reasons[-1].rule) == (0, "keda_deactivate")
    idle = variant(spec=0, min_replicas=3)
    assert run(k, 120, idle, queue=2).desired_replicas == 3  # active below min: max(min, 1) = 3


def test_initial_cooldown_holds_a_never_active_target():
    k = KEDA(KEDAConfig(initial_cooldown_period_s=60))
    one = variant(spec=1, pods=pods(0), min_replicas=0)
    assert [run(k, t, one).desired_replicas for t in (0, 30)] == [1, 1]  # created 0 + 60 > 30
    assert run(k, 60, one).desired_replicas == 0  # 60 s old: CreationTimestamp (whole s) is past


def test_no_initial_cooldown_scales_in_at_the_first_poll():
    k = KEDA(KEDAConfig())
    assert run(k, 0, variant(spec=2, pods=pods(0, 0), min_replicas=0)).desired_replicas == 0


# -- fallback behaviors, fed through the HPA (pkg/fallback/fallback.go doFallback) --

@pytest.mark.parametrize(("behavior", "current", "want"), [
    ("static", 3, 5),  # fallback.replicas
    ("currentReplicas", 3, 3),
    ("currentReplicasIfHigher", 3, 5), ("currentReplicasIfHigher", 7, 7),
    ("currentReplicasIfLower", 3, 3), ("currentReplicasIfLower", 7, 5),
])
def test_fallback_behaviors(behavior, current, want):
    # a behavior with no scale-down window, so the HPA moves to the fallback count at once (scale-up: 4 pods
    # or 100 % per 15 s allows 3 -> 5)
    k = KEDA(KEDAConfig(fallback={"failure_threshold": 0, "replicas": 5, "behavior": behavior},
                        behavior={"scale_down": {"stabilization_window_seconds": 0}}))
    # failure 1 > 0 at the first sync; value int(3) x r -> ceil(3 x r / 3) = r
    d = run(k, 15, variant(spec=current, ready=current, metrics_available=False))
    assert d.desired_replicas == want


def test_fallback_target_is_truncated_to_an_integer():
    # threshold 2.5: KEDA feeds int64(2.5) x 4 = 8 -> ceil(8 / 2.5) = 4 (3.2 rounded up), not 4 x 2.5 = 10
    k = KEDA(KEDAConfig(threshold=2.5, fallback={"failure_threshold": 0, "replicas": 4}))
    d = run(k, 15, variant(spec=2, ready=2, metrics_available=False))
    assert d.desired_replicas == 4
    k = KEDA(KEDAConfig(threshold=2.5, fallback={"failure_threshold": 0, "replicas": 10}))
    # int(2.5) x 10 = 20 -> ceil(20 / 2.5) = 8 (legacy limit max(2 x 4, 4) = 8)
    assert run(k, 15, variant(spec=4, ready=4, metrics_available=False)).desired_replicas == 8


def test_fallback_with_zero_replicas_lets_keda_scale_to_zero():
    # scale_scaledobjects.go: the fallback case needs Fallback.Replicas != 0; with 0 an erroring, inactive
    # object falls through to the scale-to-zero case (never active: LastActiveTime nil)
    k = KEDA(KEDAConfig(fallback={"failure_threshold": 3, "replicas": 0}))
    assert run(k, 0, variant(spec=2, ready=2, min_replicas=0, metrics_available=False)).desired_replicas == 0
    k = KEDA(KEDAConfig(fallback={"failure_threshold": 3, "replicas": 2}))
    assert run(k, 0, variant(spec=2, ready=2, min_replicas=0, metrics_available=False)).desired_replicas == 2


# -- scalingModifiers --

def test_composite_metric_replaces_the_triggers():
    sm = {"formula": "waiting + 2 * epp", "target": 4, "activation_target": 2}
    k = KEDA(KEDAConfig(triggers=TWO, scaling_modifiers=sm))
    # composite 3 + 2 x 5 = 13, target 4 -> ceil(13 / 4) = 4 from 2 (legacy limit 4)
    d = run(k, 0, variant(spec=2, pods=pods(0, 0)), {Q1: series(3), Q2: series(5)})
    assert d.desired_replicas == 4
    assert [r.values["metric"] for r in d.reasons if r.rule == "metric"] == ["composite-metric"]
    zero = variant(spec=0, min_replicas=0)
    assert run(k, 30, zero, {Q1: series(2), Q2: series(0)}).desired_replicas == 0  # 2 > 2 is false
    assert run(k, 60, zero, {Q1: series(2), Q2: series(0.5)}).desired_replicas == 1  # 3 > 2: active


def test_composite_fallback_uses_the_modifiers_target():
    sm = {"formula": "waiting + epp", "target": 2}
    k = KEDA(KEDAConfig(triggers=TWO, scaling_modifiers=sm, fallback={"failure_threshold": 0, "replicas": 3}))
    # waiting fails once > 0: composite = int(2) x 3 = 6 -> ceil(6 / 2) = 3
    d = run(k, 15, variant(spec=1, pods=pods(0)), {Q1: series(1, 1), Q2: series(0)})
    assert d.desired_replicas == 3


@pytest.mark.parametrize(("cfg", "match"), [
    ({"triggers": TWO, "threshold": 2}, "not both"),
    ({"triggers": [TWO[0], TWO[0]]}, "unique"),
    ({"triggers": [{"query": Q1, "threshold": 1}], "scaling_modifiers": {"formula": "x", "target": 1}}, "named"),
    ({"triggers": TWO, "scaling_modifiers": {"formula": "waiting +", "target": 1}}, "column 10"),
    ({"triggers": TWO, "scaling_modifiers": {"formula": "waiting + cpu", "target": 1}}, "unknown name cpu"),
    ({"triggers": TWO, "scaling_modifiers": {"formula": "waiting > 1", "target": 1}}, "returns a bool"),
    ({"triggers": TWO, "scaling_modifiers": {"formula": "waiting", "target": 1.5},
      "fallback": {"failure_threshold": 1, "replicas": 1}}, "whole-number"),
    ({"triggers": [{**TWO[0], "metric_type": "Value"}], "fallback": {"failure_threshold": 1, "replicas": 1}},
     "AverageValue"),
    ({"triggers": [{"query": "sum(", "threshold": 1}]}, "not PromQL"),
    ({"fallback": {"failure_threshold": 1, "replicas": 1, "behavior": "sometimes"}}, "behavior"),
])
def test_config_errors_name_the_problem(cfg, match):
    with pytest.raises(ValidationError, match=match):
        KEDAConfig(**cfg)


def test_keda_asks_prometheus_at_the_last_whole_wall_second() -> None:
    """prometheus_scaler.go formats its query's ``time`` as RFC 3339 without a fraction: a sync at 96.57 s on a
    load that began 0.159 s past a wall second reads Prometheus as of 95.841 s, before a scrape at 96.05 s."""
    from scalearena.controllers.base import ClusterView
    from scalearena.controllers.keda_scaler import Trigger, read_trigger
    from scalearena.harness.metrics.memory import MemoryMetrics

    m = MemoryMetrics()
    m.query_grid = (1.0, 0.841)  # wall seconds at 0.841 + k (t0 = x.159 wall), time scale 1
    assert m.keda_query_time(96.57) == pytest.approx(95.841)  # 0.841 + floor(95.729) = 95.841
    assert m.keda_query_time(96.841) == pytest.approx(96.841)  # on a whole second: that second
    assert m.keda_query_time(5.0) == pytest.approx(4.841)
    m.query_grid = (2.0, 1.5)  # time scale 2: a wall second is two scenario seconds
    assert m.keda_query_time(96.57) == pytest.approx(95.5)  # 1.5 + 2 x floor(47.535) = 95.5
    assert MemoryMetrics().keda_query_time(15.0) == 15.0  # the default grid: whole seconds from the load's start

    asked: list[tuple[str, float | None]] = []

    class Source:
        def query(self, expr: str, at: float | None = None) -> list[dict[str, Any]]:
            asked.append((expr, at))
            return [{"metric": {}, "value": [at, "11"]}]

        def keda_query_time(self, now: float) -> float:
            return now - 0.729

    v = view(96.57, variant("a", pods=pods(0)), metrics=Source())
    assert isinstance(v, ClusterView)
    t = Trigger(name="queue", query="sum(llm_d_epp_flow_control_queue_size)", threshold=1.0)
    assert read_trigger(v, v.variants[0], t) == (11.0, True)
    assert asked == [("sum(llm_d_epp_flow_control_queue_size)", pytest.approx(95.841))]
