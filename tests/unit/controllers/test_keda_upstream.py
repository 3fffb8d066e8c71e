"""KEDA cases ported from KEDA's own tests (facts only: inputs and expected outputs; our code).

Sources (kedacore/keda main):
- pkg/scaling/executor/scale_scaledobjects_test.go @ 03b6a23 (RequestScale: activation, idle, minReplicaCount,
  errors, fallback with an erroring trigger);
- pkg/fallback/fallback_test.go @ 10fb40f (health counting and the normalised fallback metric);
- pkg/scaling/scale_handler_test.go @ 05b3da7 (getScaledObjectState with an erroring trigger, the formula);
- pkg/scaling/modifiers/formula_test.go @ 1d134ae (the composite metric, fallback with several triggers).
Not ported: pause annotations, force-activation annotation, status conditions / HPA health (scalearena keeps no
ScaledObject status), strictCooldownBehavior (an operator flag), ScaledJob cases, and the
``scalingModifiers`` / ``triggerScoped`` fallback behaviors of newer KEDA (this model follows 2.18's four).

Every case drives ``controllers.keda.KEDA`` through ``decide`` at HPA sync times (15 s), one prometheus trigger
whose PromQL the fake source answers (or fails), AverageValue targets.
"""
from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from scalearena.contracts.errors import MetricsUnavailable
from scalearena.controllers.keda import KEDA, KEDAConfig
from tests.unit.viewkit import FakeMetrics, variant, view

Q, Q2 = "sum(queue)", "sum(other)"


class Source(FakeMetrics):
    """PromQL answers by query; a query mapped to None fails (a scaler error)."""

    def __init__(self, values: dict[str, float | None]) -> None:
        super().__init__()
        self.values = values

    def query(self, expr: str, at: float | None = None) -> list[dict[str, Any]]:
        v = self.values[expr]
        if v is None:
            raise MetricsUnavailable("some error")
        return [{"metric": {}, "value": [0.0, repr(v)]}]


def keda(**kw: Any) -> KEDA:
    triggers = kw.pop("triggers", [{"name": "t", "query": Q, "threshold": kw.pop("threshold", 1)}])
    return KEDA(KEDAConfig(polling_interval_s=15, triggers=triggers, **kw))


def decide(k: KEDA, t: float, current: int, values: dict[str, float | None], lo: int = 1, hi: int = 100):
    v = variant(spec=current, min_replicas=lo, max_replicas=hi, ready=current)
    (d,) = k.decide(t, view(t, v, metrics=Source(values)))
    return d


def rules(d) -> list[str]:
    return [r.rule for r in d.reasons]


# (upstream test, idleReplicaCount, minReplicaCount, current, trigger value (None: error), expected desired, rule)
EXECUTOR = [
    ("TestScaleToMinReplicasWhenNotActive", None, 0, 10, 0.0, 0, "keda_deactivate"),
    ("TestScaleToMinReplicasFromLowerInitialReplicaCount", None, 5, 1, 0.0, 5, "clamp"),
    ("TestScaleFromMinReplicasWhenActive", None, 0, 0, 5.0, 1, "keda_activate"),
    ("TestScaleToIdleReplicasWhenNotActive", 0, 5, 10, 0.0, 0, "keda_deactivate"),
    ("TestScaleFromIdleToMinReplicasWhenActive", 0, 5, 0, 5.0, 5, "keda_activate"),
    ("TestEventWitTriggerInfo", 0, 5, 2, 5.0, 5, "keda_activate"),  # "Scaled ... from 2 to 5"
    # isActive=false, isError=true, no fallback: the executor changes nothing and the HPA cannot read the metric
    ("TestRequestScale_ScalerError_HPAHealthy", None, 1, 1, None, 1, "trigger_error"),
]


@pytest.mark.parametrize(("name", "idle", "lo", "current", "value", "expected", "rule"), EXECUTOR,
                         ids=[c[0] for c in EXECUTOR])
def test_request_scale(name, idle, lo, current, value, expected, rule):
    # a first poll: never active before, initialCooldownPeriod 0 (already past in KEDA's whole-second clock)
    d = decide(keda(idle_replica_count=idle), 0.0, current, {Q: value}, lo=lo)
    assert d.desired_replicas == expected
    assert rule in rules(d)


def test_request_scale_with_an_erroring_trigger_and_fallback_leaves_it_to_the_hpa():
    # TestRequestScale_ScalerErrorWithFallback_HPAHealthy: Fallback{Replicas: 5} (failureThreshold 0), an erroring
    # trigger: the executor does not scale; the HPA is fed int(1) x 5 = 5 -> ceil(5 / 1) = 5 (up 10 pods / 15 s)
    k = keda(fallback={"failure_threshold": 0, "replicas": 5},
             behavior={"scale_up": {"policies": [{"type": "Pods", "value": 10, "period_seconds": 15}]}})
    d = decide(k, 0.0, 1, {Q: None})
    assert d.desired_replicas == 5
    assert not {"keda_activate", "keda_deactivate"} & set(rules(d))
    assert "fallback active" in d.reasons[0].message


def test_a_fallback_object_needs_average_value_triggers():
    # fallback_test "behave as if fallback is disabled when the metrics spec target type is not average value";
    # KEDA's admission webhook (CheckFallbackValid) refuses such an object, and so does the config
    with pytest.raises(ValidationError, match="AverageValue"):
        keda(triggers=[{"name": "t", "query": Q, "threshold": 1, "metric_type": "Value"}],
             fallback={"failure_threshold": 3, "replicas": 10})
    # "fallback is enabled but scaledobject has invalid parameter" (failureThreshold -3)
    with pytest.raises(ValidationError):
        keda(fallback={"failure_threshold": -3, "replicas": 10})


# -- pkg/fallback/fallback_test.go: health counted per HPA metric request, fallback past the threshold --

def test_the_metric_passes_through_when_fallback_is_disabled():
    # "should return the expected metric when fallback is disabled": value 5, target 3 -> the HPA sees 5:
    # ratio 5 / (3 x 1) = 1.67 -> ceil(5 / 3) = 2
    d = decide(keda(threshold=3), 0.0, 1, {Q: 5.0})
    metric = next(r for r in d.reasons if r.rule == "metric")
    assert (metric.values["usage"], d.desired_replicas) == (5.0, 2)


def test_the_error_propagates_when_fallback_is_disabled():
    # "should propagate the error when fallback is disabled": the HPA gets an error and holds
    d = decide(keda(threshold=3), 0.0, 4, {Q: None})
    assert d.desired_replicas == 4 and rules(d)[0] == "trigger_error"


def test_failures_are_counted_per_sync_reset_on_success_and_fallback_past_the_threshold():
    k = keda(threshold=10, fallback={"failure_threshold": 3, "replicas": 10})
    failures = []
    for i in range(4):  # "should bump the number of failures when metrics call fails": 1, 2, 3, then 4 > 3
        d = decide(k, 15.0 * i, 5, {Q: None})
        failures.append(d.reasons[0].values["triggers"]["t"]["failures"])
        if i < 3:
            assert d.desired_replicas == 5  # failures 1..3 <= threshold 3: the error stands, the HPA holds
    assert failures == [1, 2, 3, 4]
    # "should return a normalised metric when number of failures are beyond threshold": int(10) x 1000 x 10
    # milli = 100 (the HPA's usage per replica 100 / 5 = 20) -> ceil(100 / 10) = 10 replicas (legacy limit
    # max(2 x 5, 4) = 10)
    metric = next(r for r in d.reasons if r.rule == "metric")
    assert (metric.values["usage"], d.desired_replicas) == (20.0, 10)
    # "should reset the health status when scaler metrics are available": back to 0, the real value again
    d = decide(k, 60.0, 10, {Q: 6.0})
    assert d.reasons[0].values["triggers"]["t"]["failures"] == 0
    assert d.reasons[0].values["triggers"]["t"]["value"] == 6.0
    assert next(r for r in d.reasons if r.rule == "metric").values["usage"] == 0.6  # 6 over 10 replicas


def test_polls_between_syncs_do_not_count_failures():
    # GetMetricsWithFallback runs in GetScaledObjectMetrics (the HPA's request), not in the poll loop's
    # getScaledObjectState: 5 s polls between 15 s syncs leave the count at one per sync
    k = KEDA(KEDAConfig(polling_interval_s=5, triggers=[{"name": "t", "query": Q, "threshold": 1}],
                        fallback={"failure_threshold": 3, "replicas": 2}))
    seen = []
    for t in range(0, 35, 5):
        out = k.decide(t, view(t, variant(spec=1, ready=1), metrics=Source({Q: None})))
        seen += [(t, d.reasons[0].values["triggers"]["t"]["failures"]) for d in out]
    # decisions at the syncs only (the polls changed nothing): 0, 15, 30 -> 1, 2, 3
    assert seen == [(0, 1), (15, 2), (30, 3)]


# -- pkg/scaling/scale_handler_test.go: getScaledObjectState --

def test_an_erroring_trigger_alone_is_inactive_and_in_error():
    # TestCheckScaledObjectScalersWithError: isActive false, isError true -> from 0 nothing activates
    d = decide(keda(), 0.0, 0, {Q: None}, lo=0)
    assert d.desired_replicas == 0
    assert (d.reasons[0].rule, d.reasons[0].values["active"]) == ("trigger_error", False)


def test_one_active_trigger_activates_even_when_another_fails():
    # TestCheckScaledObjectFindFirstActiveNotIgnoreOthers: isActive true, isError true
    k = keda(triggers=[{"name": "a", "query": Q, "threshold": 1}, {"name": "b", "query": Q2, "threshold": 1}])
    d = decide(k, 0.0, 0, {Q: 10.0, Q2: None}, lo=0)
    assert (d.desired_replicas, d.reasons[0].values["active"]) == (1, True)
    assert "keda_activate" in rules(d)


def test_the_formula_composes_the_triggers():
    # TestScalingModifiersFormula / TestCalculateScalingModifiersFormula: trigger_one = 2, trigger_two = 5,
    # "trigger_one + trigger_two" -> composite 7 (7000 milli); target 2 -> ceil(7 / 2) = 4 from 2 replicas
    k = keda(triggers=[{"name": "trigger_one", "query": Q, "threshold": 2},
                       {"name": "trigger_two", "query": Q2, "threshold": 5}],
             scaling_modifiers={"formula": "trigger_one + trigger_two", "target": 2})
    d = decide(k, 0.0, 2, {Q: 2.0, Q2: 5.0})
    assert d.reasons[0].values["composite"] == 7.0
    assert d.desired_replicas == 4


def test_fallback_with_several_triggers_is_one_composite_not_a_sum():
    # TestHandleScalingModifiersFallbackDoesNotMultiplyByTriggerCount: max(trigger_1, trigger_2), target 1,
    # fallback failureThreshold 4 replicas 12, both triggers failing: the composite is 1 x 12 = 12, not 24
    k = keda(triggers=[{"name": "trigger_1", "query": Q, "threshold": 1},
                       {"name": "trigger_2", "query": Q2, "threshold": 1}],
             scaling_modifiers={"formula": "max(trigger_1, trigger_2)", "target": 1},
             fallback={"failure_threshold": 4, "replicas": 12})
    for i in range(5):  # failures 1..5; the 5th sync is past the threshold 4
        d = decide(k, 15.0 * i, 10, {Q: None, Q2: None}, hi=100)
    metric = next(r for r in d.reasons if r.rule == "metric")  # usage per replica: 12 / 10 = 1.2
    assert (metric.values["usage"], d.desired_replicas) == (1.2, 12)


def test_a_failing_trigger_is_nil_in_the_formula():
    # calculateScalingModifiersFormula builds the env from the metrics that were read: a failed trigger is
    # absent and expr reads it as nil. llm-d's queue-guard relies on it: `pending ?? 0`
    formula = "demand <= replicas ? demand : max(demand - (pending ?? 0), replicas)"
    k = keda(triggers=[{"name": "demand", "query": Q, "threshold": 1},
                       {"name": "replicas", "query": Q2, "threshold": 1},
                       {"name": "pending", "query": "sum(pending)", "threshold": 1}],
             scaling_modifiers={"formula": formula, "target": 1})
    # demand 6 > replicas 2, pending fails: max(6 - 0, 2) = 6 -> ceil(6 / 1) = 6 (legacy limit max(4, 4) = 4)
    d = decide(k, 0.0, 2, {Q: 6.0, Q2: 2.0, "sum(pending)": None})
    assert d.reasons[0].values["composite"] == 6.0
    assert d.desired_replicas == 4
    # with pending readable (3): max(6 - 3, 2) = 3
    d = decide(keda(triggers=k.config.triggers, scaling_modifiers=k.config.scaling_modifiers), 0.0, 2,
               {Q: 6.0, Q2: 2.0, "sum(pending)": 3.0})
    assert (d.reasons[0].values["composite"], d.desired_replicas) == (3.0, 3)
    # nil in arithmetic is an error, as in expr: no composite, the HPA holds
    bad = keda(triggers=k.config.triggers, scaling_modifiers={"formula": "demand - pending", "target": 1})
    d = decide(bad, 0.0, 2, {Q: 6.0, Q2: 2.0, "sum(pending)": None})
    assert d.reasons[0].values["composite"] is None and d.desired_replicas == 2


def test_with_a_formula_an_erroring_trigger_makes_the_object_inactive():
    # getScaledObjectState with modifiers: active only when no trigger failed (value > activationTarget)
    k = keda(triggers=[{"name": "a", "query": Q, "threshold": 1}, {"name": "b", "query": Q2, "threshold": 1}],
             scaling_modifiers={"formula": "a + (b ?? 0)", "target": 1})
    d = decide(k, 0.0, 0, {Q: 10.0, Q2: None}, lo=0)
    assert (d.reasons[0].values["active"], d.desired_replicas) == (False, 0)
