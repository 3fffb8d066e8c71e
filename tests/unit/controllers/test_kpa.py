"""KPA model: stable/panic windows, entering and leaving panic, rate limits, scale-to-zero grace.

The tests set target 10 in flight x utilisation 0.7 = 7 per pod; stable window 60 s,
panic window 6 s; one sample per 2 s tick.
"""
from __future__ import annotations

import pytest
from pydantic import ValidationError

from scalearena.controllers.kpa import KPA, KPAConfig
from tests.unit.viewkit import pod, variant, view


def tick(k: KPA, t: float, inflight: int, ready: int = 1, spec: int | None = None, min_replicas: int = 1,
         max_replicas: int = 50):
    # one pod sample carrying `inflight` running requests, extrapolated to `ready` pods
    v = variant(spec=ready if spec is None else spec, pods=(pod(0, running=inflight),), ready=ready,
                min_replicas=min_replicas, max_replicas=max_replicas)
    return k.decide(t, view(t, v))[0]


def test_target_value():
    assert KPAConfig().target_value == pytest.approx(2.8)  # default 4 x 0.7
    assert KPAConfig(target=10).target_value == pytest.approx(7.0)  # 10 x 0.7
    assert KPAConfig(target=None).target_value == pytest.approx(70.0)  # Knative default 100 x 0.7
    assert KPAConfig(target=None, container_concurrency=4).target_value == pytest.approx(2.8)  # 4 x 0.7
    assert KPAConfig(target=10, container_concurrency=4).target_value == pytest.approx(2.8)  # cc caps target


def test_panic_mode_enter_hold_and_leave():
    k = KPA(KPAConfig(target=10))
    for t in range(0, 56, 2):  # t = 0..54: 7 in flight on 1 pod -> ceil(7 / 7) = 1
        assert tick(k, t, 7).desired_replicas == 1
    # t=56: burst of 35. panic window (50, 56] = {7, 7, 35} -> 49 / 3 = 16.33 -> ceil(16.33 / 7) = 3
    # 3 / 1 ready = 300 % >= 200 % -> panic. stable (0..56, 29 samples) = (28 x 7 + 35) / 29 = 7.97 -> 2
    # panic: max(2, 3) = 3
    d = tick(k, 56, 35)
    assert d.desired_replicas == 3 and any(r.rule == "panic" for r in d.reasons)
    # t=58, 60: the 35 is still in the panic window (16.33 -> 3): still over, panic extended to t=60
    assert tick(k, 58, 7).desired_replicas == 3
    assert tick(k, 60, 7).desired_replicas == 3
    # t=62..120: panic window = {7,7,7} -> 1, below the threshold, but panic lasts until 60 + 60 < t:
    # no scale-down while panicking -> hold max panic pods 3
    for t in range(62, 121, 2):
        assert tick(k, t, 7).desired_replicas == 3, t
    # t=122: 60 + 60 < 122 -> leave panic; stable window (62, 122] is all 7 -> 1
    d = tick(k, 122, 7)
    assert d.desired_replicas == 1 and not d.reasons[0].values["panicking"]


def test_stable_mode_follows_the_stable_average():
    k = KPA(KPAConfig(target=10))
    # 2 ready pods, 10 in flight each -> 20 total; ceil(20 / 7) = 3; panic 3 / 2 = 150 % < 200 %
    assert tick(k, 0, 10, ready=2).desired_replicas == 3


def test_max_scale_down_rate_halves_at_most():
    k = KPA(KPAConfig(target=10))
    # found with 8 ready: starts in panic (upstream newAutoscaler), holding 8 for one stable window
    assert tick(k, 0, 0, ready=8).desired_replicas == 8
    assert tick(k, 60, 0, ready=8).desired_replicas == 8  # 0 + 60 < 60 is false: still panicking
    # t=62: panic over; nothing in flight: ceil(0 / 7) = 0, but floor(8 / 2) = 4
    assert tick(k, 62, 0, ready=8).desired_replicas == 4


def test_max_scale_up_rate():
    k = KPA(KPAConfig(target=10, max_scale_up_rate=2))
    # 2 ready x 350 = 700 in flight -> ceil(700 / 7) = 100 (panic too), capped at ceil(2 x 2) = 4
    assert tick(k, 0, 350, ready=2).desired_replicas == 4


def test_scale_to_zero_after_the_grace_period():
    k = KPA(KPAConfig(target=10))
    # idle from t=0 with min 0: desired 0 -> keep 1 until t > 0 + 30
    assert tick(k, 0, 0, min_replicas=0).desired_replicas == 1
    assert tick(k, 30, 0, min_replicas=0).desired_replicas == 1
    assert tick(k, 32, 0, min_replicas=0).desired_replicas == 0


def test_scale_from_zero_on_gateway_queue():
    k = KPA(KPAConfig(target=10))
    # no ready pod: the gateway's 5 queued requests are the concurrency -> ceil(5 / 7) = 1
    v = variant(spec=0, ready=0, min_replicas=0)
    assert k.decide(0, view(0, v, router_queue={"m": 5}))[0].desired_replicas == 1


def test_min_replicas_blocks_scale_to_zero():
    k = KPA(KPAConfig(target=10))
    assert tick(k, 100, 0, min_replicas=1).desired_replicas == 1


def test_metrics_unavailable_holds():
    d = KPA(KPAConfig(target=10)).decide(0, view(0, variant(spec=4, ready=4, metrics_available=False)))[0]
    assert d.desired_replicas == 4


@pytest.mark.parametrize("bad", [{"stable_window_s": 5}, {"panic_threshold_percentage": 100},
                                 {"max_scale_down_rate": 1}, {"target_utilization": 0},
                                 {"scale_to_zero_grace_s": 1}, {"panic_window": 6}])
def test_config_rejects_out_of_range(bad):
    with pytest.raises(ValidationError):
        KPAConfig(**bad)
