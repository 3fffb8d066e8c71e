"""KEDA model: activation (0 -> 1), cooldown (1 -> 0), the generated HPA (1 <-> N), fallback."""
from __future__ import annotations

import pytest
from pydantic import ValidationError

from scalearena.controllers.keda import KEDA, KEDAConfig
from tests.unit.viewkit import pods, variant, view


def at(keda: KEDA, t: float, v, queue: int = 0) -> int:
    return keda.decide(t, view(t, v, router_queue={"m": queue}))[0].desired_replicas


def test_defaults():
    c = KEDAConfig()
    assert (c.polling_interval_s, c.cooldown_period_s, c.threshold, c.activation_threshold) == (30, 300, 3, 0)
    assert (c.query, c.metric_type, c.fallback) == ("queue", "AverageValue", None)


def test_activation_is_strictly_above_the_activation_threshold():
    k = KEDA(KEDAConfig(activation_threshold=5))
    zero = variant(spec=0, min_replicas=0)
    assert at(k, 0, zero, queue=5) == 0  # 5 > 5 is false: inactive, stays at 0
    assert at(k, 30, zero, queue=6) == 1  # next poll (30 s later): 6 > 5 -> KEDA scales 0 -> 1


def test_activation_waits_for_the_polling_interval():
    k = KEDA(KEDAConfig())
    zero = variant(spec=0, min_replicas=0)
    assert at(k, 0, zero, queue=0) == 0  # poll at 0: inactive
    assert at(k, 15, zero, queue=4) == 0  # HPA sync only; the HPA is disabled at 0 replicas
    assert at(k, 30, zero, queue=4) == 1  # poll at 30: 4 > 0 -> activate


def test_generated_hpa_scales_one_to_n():
    k = KEDA(KEDAConfig())
    # 2 pods waiting 5 + 7 plus 6 at the gateway = 18; AverageValue 3 -> ratio 18 / (3 * 2) = 3
    # -> ceil(18 / 3) = 6; the generated HPA has no behavior: legacy limit max(2 x 2, 4) = 4 -> 4
    d = k.decide(0, view(0, variant(spec=2, pods=pods(5, 7)), router_queue={"m": 6}))[0]
    assert d.desired_replicas == 4
    assert {r.rule for r in d.reasons} >= {"trigger", "metric", "max_over_metrics", "desired"}


def test_cooldown_before_scaling_to_zero():
    k = KEDA(KEDAConfig())
    one = variant(spec=1, pods=pods(0), min_replicas=0)
    assert at(k, 0, one, queue=2) == 1  # poll at 0: active, last active 0
    # polls at 30 .. 300 are inactive, but 0 + 300 < t fails up to t = 300 -> the HPA keeps min 1
    for t in range(15, 301, 15):
        assert at(k, t, one) == 1, t
    assert at(k, 330, one) == 0  # poll at 330: 0 + 300 < 330 -> KEDA scales to 0


def test_no_cooldown_when_min_replica_count_is_positive():
    k = KEDA(KEDAConfig())
    one = variant(spec=1, pods=pods(0), min_replicas=1)
    assert all(at(k, t, one) == 1 for t in range(0, 1000, 15))


def test_trigger_error_without_fallback_holds_even_past_cooldown():
    k = KEDA(KEDAConfig())
    assert at(k, 0, variant(spec=3, pods=pods(2, 2, 2), min_replicas=0), queue=1) == 3
    dark = variant(spec=3, ready=3, min_replicas=0, metrics_available=False)
    for t in range(15, 1000, 15):
        d = k.decide(t, view(t, dark))[0]
        assert d.desired_replicas == 3, t
    assert d.reasons[0].rule == "trigger_error"


def test_fallback_after_more_than_failure_threshold_failures():
    k = KEDA(KEDAConfig(fallback={"failure_threshold": 3, "replicas": 4}))
    dark = variant(spec=2, ready=2, metrics_available=False)
    assert at(k, 0, dark) == 2  # failure 1 (poll): no fallback yet
    assert at(k, 15, dark) == 2  # failure 2
    assert at(k, 30, dark) == 2  # failure 3: 3 > 3 is false (poll: trigger failing, keep 2)
    # failure 4 > 3: the HPA gets 4 x 3 = 12 -> ceil(12 / 3) = 4 (ratio 12 / (3 x 2) = 2, limit 6)
    assert at(k, 45, dark) == 4
    d = k.decide(60, view(60, variant(spec=4, ready=4, metrics_available=False)))[0]
    # poll at 60: KEDA >= 2.15's executor only logs a failing trigger with fallback.replicas != 0 (no direct
    # scale); the HPA is fed 4 x 3 = 12 -> ratio 12 / (3 x 4) = 1.0, within tolerance -> stays 4
    assert (d.desired_replicas, d.reasons[-1].rule) == (4, "desired")
    assert d.reasons[0].rule == "trigger_error" and "fallback active" in d.reasons[0].message
    # metrics back: failures reset, the HPA scales on the real value again
    back = variant(spec=4, pods=pods(3, 3, 3, 3))  # 12 / (3 x 4) = 1.0 -> within tolerance -> 4
    assert at(k, 75, back) == 4
    assert k._states["v"].failures == {"queue": 0}


@pytest.mark.parametrize(
    "bad",
    [
        {"polling_interval_s": 0},
        {"threshold": 0},
        {"activation_threshold": -1},
        {"fallback": {"failure_threshold": -1, "replicas": 2}},
        {"fallback": {"failure_threshold": 3, "replicas": 2}, "metric_type": "Value"},
        {"query": "cpu"},
        {"cooldownPeriod": 10},
    ],
)
def test_config_rejects_out_of_range(bad):
    with pytest.raises(ValidationError):
        KEDAConfig(**bad)
