"""HPA behavior: the 300 s scale-down stabilisation window and the rate policies.

Every sync below is 15 s apart, as the HPA controller runs by default.
"""
from __future__ import annotations

from scalearena.contracts.series import KV_USAGE, NUM_WAITING
from scalearena.controllers.hpa import HPA, HPAConfig
from tests.unit.viewkit import pod, pods, variant, view

KV_ONLY = [{"type": "Pods", "metric": KV_USAGE, "average_value": 0.5}]
QUEUE_ONLY = [{"type": "Pods", "metric": NUM_WAITING, "average_value": 3}]


def kv_view(now: float, spec: int, kv: float):
    return view(now, variant(spec=spec, pods=tuple(pod(i, kv=kv) for i in range(spec))))


def test_scale_down_waits_for_the_stabilisation_window():
    h = HPA(HPAConfig(metrics=KV_ONLY))
    # t=0: 4 pods at kv 0.5 -> ratio 1.0 -> 4 (the window is also seeded with current 4)
    assert h.decide(0, kv_view(0, 4, 0.5))[0].desired_replicas == 4
    # t=15..285: kv 0.25 -> ratio 0.5 -> recommendation ceil(0.5 * 4) = 2, but the highest
    # recommendation in (t-300, t] still includes t=0's 4 -> stay at 4
    for t in range(15, 300, 15):
        d = h.decide(t, kv_view(t, 4, 0.25))[0]
        assert d.desired_replicas == 4, t
    assert any(r.rule == "stabilisation" for r in d.reasons)
    # t=300: the window (0, 300] holds only 2s (t=0 is not after the cutoff 0) -> 2;
    # rate limit 100 % per 15 s allows down to int(4 * 0) = 0 -> 2 stands
    assert h.decide(300, kv_view(300, 4, 0.25))[0].desired_replicas == 2


def test_scale_down_window_takes_the_highest_recent_recommendation():
    h = HPA(HPAConfig(metrics=KV_ONLY, behavior={"scale_down": {"stabilization_window_seconds": 60}}))
    h.decide(0, kv_view(0, 8, 0.5))  # seed 8 at t=0, recommendation 8
    # t=15: kv 0.375 -> ratio 0.75 -> ceil(0.75 * 8) = 6; window holds 8 -> 8
    assert h.decide(15, kv_view(15, 8, 0.375))[0].desired_replicas == 8
    # t=30: kv 0.25 -> ratio 0.5 -> 4; window (t-60, t] = {8, 8, 6, 4} -> 8
    assert h.decide(30, kv_view(30, 8, 0.25))[0].desired_replicas == 8
    # t=60: 4 again; window (0, 60] = {6 @15, 4 @30, 4 @60} -> highest 6
    assert h.decide(60, kv_view(60, 8, 0.25))[0].desired_replicas == 6


def test_scale_up_rate_limit_four_pods_or_double():
    h = HPA(HPAConfig(metrics=QUEUE_ONLY))
    # 2 pods with 30 waiting each: ratio 30/3 = 10 -> ceil(10 * 2) = 20
    # limit = max(2 + 4, ceil(2 * (1 + 100 %))) = max(6, 4) = 6
    d = h.decide(0, view(0, variant(spec=2, pods=pods(30, 30), max_replicas=50)))[0]
    assert d.desired_replicas == 6
    assert any(r.rule == "rate_limit" for r in d.reasons)
    # t=5, spec now 6 (2 ready + 4 pending): the +4 at t=0 is inside (5-15, 5] ->
    # period start 6 - 4 = 2 -> limit max(2 + 4, 4) = 6 -> hold
    d = h.decide(5, view(5, variant(spec=6, pods=pods(30, 30), pending=4, max_replicas=50)))[0]
    assert d.desired_replicas == 6
    # t=15: the t=0 event is not after the cutoff 0 -> start 6 -> limit max(6 + 4, 12) = 12
    six = pods(30, 30, 30, 30, 30, 30)
    assert h.decide(15, view(15, variant(spec=6, pods=six, max_replicas=50)))[0].desired_replicas == 12


def test_select_policy_min_takes_the_smaller_step():
    rules = {"scale_up": {"select_policy": "Min"}}
    h = HPA(HPAConfig(metrics=QUEUE_ONLY, behavior=rules))
    # policies Pods 4 -> 2 + 4 = 6 and Percent 100 -> 4; Min -> 4
    assert h.decide(0, view(0, variant(spec=2, pods=pods(30, 30), max_replicas=50)))[0].desired_replicas == 4


def test_select_policy_disabled_blocks_the_direction():
    h = HPA(HPAConfig(metrics=QUEUE_ONLY, behavior={"scale_up": {"select_policy": "Disabled"}}))
    assert h.decide(0, view(0, variant(spec=2, pods=pods(30, 30))))[0].desired_replicas == 2


def test_custom_scale_down_policy_one_pod_per_minute():
    rules = {"scale_down": {"stabilization_window_seconds": 0,
                            "policies": [{"type": "Pods", "value": 1, "period_seconds": 60}]}}
    h = HPA(HPAConfig(metrics=QUEUE_ONLY, behavior=rules))
    # 5 idle pods -> ratio 0 -> 0, clamped by the policy to 5 - 1 = 4
    assert h.decide(0, view(0, variant(spec=5, pods=pods(0, 0, 0, 0, 0))))[0].desired_replicas == 4
    # t=30: the -1 at t=0 is in (30-60, 30] -> period start 4 + 1 = 5 -> limit 4 -> hold
    assert h.decide(30, view(30, variant(spec=4, pods=pods(0, 0, 0, 0))))[0].desired_replicas == 4
    # t=60: the event is not after the cutoff 0 -> start 4 -> limit 3
    assert h.decide(60, view(60, variant(spec=4, pods=pods(0, 0, 0, 0))))[0].desired_replicas == 3


def test_max_replicas_is_reported_as_a_clamp():
    h = HPA(HPAConfig(metrics=QUEUE_ONLY))
    # ratio 10 -> 20, policy limit 6, max 5 -> 5 (the max binds, not the policy)
    d = h.decide(0, view(0, variant(spec=2, pods=pods(30, 30), max_replicas=5)))[0]
    assert d.desired_replicas == 5
    assert [r.rule for r in d.reasons if r.rule in ("clamp", "rate_limit")] == ["clamp"]
