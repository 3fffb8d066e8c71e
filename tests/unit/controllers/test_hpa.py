"""HPA model: replica calculator, tolerance edge, missing/unready pods, gates.

Expected values are worked out by hand from upstream's rules (comments show
the arithmetic); quantities are milli-units as the metrics API hands them over.
"""
from __future__ import annotations

import pytest
from pydantic import ValidationError

from scalearena.contracts.series import KV_USAGE, NUM_WAITING
from scalearena.controllers.hpa import HPA, HPAConfig
from tests.unit.viewkit import pod, pods, variant, view

KV_ONLY = [{"type": "Pods", "metric": KV_USAGE, "average_value": 0.5}]
QUEUE_ONLY = [{"type": "Pods", "metric": NUM_WAITING, "average_value": 3}]
NO_DOWN_WINDOW = {"scale_down": {"stabilization_window_seconds": 0}}


def hpa(**kw) -> HPA:
    return HPA(HPAConfig(**kw))


def kv_pods(*kv: float):
    return tuple(pod(i, kv=x) for i, x in enumerate(kv))


def test_defaults_are_the_paper_baseline():
    c = HPAConfig()
    assert [(m.metric, m.average_value) for m in c.metrics] == [(NUM_WAITING, 3.0), (KV_USAGE, 0.5)]
    assert (c.period_s, c.tolerance, c.downscale_stabilization_s) == (15.0, 0.1, 300)


@pytest.mark.parametrize(
    ("kv", "desired", "rule"),
    [
        (0.545, 2, "tolerance"),  # 545m/500m = 1.09 -> |1.09-1| <= 0.1 -> keep 2
        (0.555, 3, "scaled"),  # 555m/500m = 1.11 -> ceil(1.11 * 2) = ceil(2.22) = 3
    ],
)
def test_tolerance_edge(kv, desired, rule):
    d = hpa(metrics=KV_ONLY).decide(0, view(0, variant(spec=2, pods=kv_pods(kv, kv))))[0]
    assert d.desired_replicas == desired
    metric = next(r for r in d.reasons if r.rule == "metric")
    assert metric.values["rule"] == rule
    assert metric.values["ratio"] == pytest.approx(kv / 0.5)


def test_max_over_metrics_and_every_metric_reported():
    # queue: waiting (6, 6) avg 6 / 3 = ratio 2 -> ceil(2 * 2) = 4
    # kv:    (0.75, 0.75) avg 0.75 / 0.5 = ratio 1.5 -> ceil(1.5 * 2) = 3      -> max = 4
    p = (pod(0, kv=0.75, waiting=6), pod(1, kv=0.75, waiting=6))
    d = hpa().decide(0, view(0, variant(spec=2, pods=p)))[0]
    assert d.desired_replicas == 4
    proposals = {r.values["metric"]: r.values["proposal"] for r in d.reasons if r.rule == "metric"}
    assert proposals == {NUM_WAITING: 4, KV_USAGE: 3}


def test_missing_pods_count_as_zero_on_scale_up():
    # 4 ready, samples (9, 9): ratio 9/3 = 3 > 1, the 2 missing count 0 -> (9,9,0,0) avg 4.5
    # ratio 1.5 -> ceil(1.5 * 4) = 6
    d = hpa(metrics=QUEUE_ONLY).decide(0, view(0, variant(spec=4, ready=4, pods=pods(9, 9))))[0]
    assert d.desired_replicas == 6
    assert next(r for r in d.reasons if r.rule == "metric").values["rule"] == "scaled_with_missing"


def test_missing_pods_count_as_target_on_scale_down():
    # 4 ready, samples (0, 0): ratio 0 < 1, the 2 missing count 3 (the target) -> (0,0,3,3) avg 1.5
    # ratio 0.5 -> ceil(0.5 * 4) = 2
    h = hpa(metrics=QUEUE_ONLY, behavior=NO_DOWN_WINDOW)
    d = h.decide(0, view(0, variant(spec=4, ready=4, pods=pods(0, 0))))[0]
    assert d.desired_replicas == 2


def test_missing_pods_that_flip_the_direction_keep_the_scale():
    # 3 ready, one sample 4: ratio 4/3 = 1.33 > 1; missing count 0 -> 4000m // 3 = 1333m
    # ratio 0.444 < 1: the direction flips -> keep 3
    d = hpa(metrics=QUEUE_ONLY).decide(0, view(0, variant(spec=3, ready=3, pods=pods(4))))[0]
    assert d.desired_replicas == 3
    assert next(r for r in d.reasons if r.rule == "metric").values["rule"] == "direction_flip"


def test_pending_pods_dampen_a_scale_up():
    # 2 ready (6, 6): ratio 2; 2 pending count 0 on a scale-up -> (6,6,0,0) avg 3 -> ratio 1.0 -> keep 4
    d = hpa(metrics=QUEUE_ONLY).decide(0, view(0, variant(spec=4, pods=pods(6, 6), pending=2)))[0]
    assert d.desired_replicas == 4


def test_pending_pods_ignored_on_a_scale_down():
    # 2 ready (0, 0): ratio 0, pending are left out -> ceil(0 * 2) = 0 -> clamp to min 1
    h = hpa(metrics=QUEUE_ONLY, behavior=NO_DOWN_WINDOW)
    d = h.decide(0, view(0, variant(spec=4, pods=pods(0, 0), pending=2)))[0]
    assert d.desired_replicas == 1
    assert any(r.rule == "clamp" for r in d.reasons)


def test_metrics_unavailable_keeps_the_scale():
    d = hpa().decide(0, view(0, variant(spec=5, ready=5, metrics_available=False)))[0]
    assert d.desired_replicas == 5
    assert d.reasons[0].rule == "metrics_unavailable"


def test_no_samples_at_all_is_an_invalid_metric_and_keeps_the_scale():
    d = hpa().decide(0, view(0, variant(spec=3, ready=3, pods=())))[0]
    assert d.desired_replicas == 3
    assert any(r.rule == "metrics_invalid" for r in d.reasons)


def test_zero_replicas_without_the_gate_disables_scaling():
    d = hpa().decide(0, view(0, variant(spec=0, min_replicas=0)))[0]
    assert (d.desired_replicas, d.reasons[0].rule) == (0, "scaling_disabled")


def test_scale_to_zero_needs_the_gate():
    idle = variant(spec=1, pods=pods(0), min_replicas=0)
    # without the gate min is raised to 1: proposal ceil(0 * 1) = 0 is clamped to 1
    assert hpa(metrics=QUEUE_ONLY, behavior=NO_DOWN_WINDOW).decide(0, view(0, idle))[0].desired_replicas == 1
    gated = hpa(metrics=QUEUE_ONLY, behavior=NO_DOWN_WINDOW, scale_to_zero=True)
    assert gated.decide(0, view(0, idle))[0].desired_replicas == 0


def test_external_average_value_scales_from_zero_with_the_gate():
    # External AverageValue: 7 queued at the gateway, target 3 per pod -> ceil(7 / 3) = 3
    ext = [{"type": "External", "signal": "queue", "average_value": 3}]
    h = hpa(metrics=ext, scale_to_zero=True)
    d = h.decide(0, view(0, variant(spec=0, min_replicas=0), router_queue={"m": 7}))[0]
    assert d.desired_replicas == 3


def test_external_value_target_uses_ready_pods():
    # External Value: sum waiting (5 + 7) = 12, target 4 -> ratio 3 -> ceil(3 * 2 ready) = 6
    ext = [{"type": "External", "signal": "waiting_sum", "value": 4}]
    d = hpa(metrics=ext).decide(0, view(0, variant(spec=2, pods=pods(5, 7))))[0]
    assert d.desired_replicas == 6


def test_spec_outside_bounds_is_brought_inside_first():
    d = hpa().decide(0, view(0, variant(spec=12, pods=pods(0, 0), max_replicas=10)))[0]
    assert (d.desired_replicas, d.reasons[0].rule) == (10, "clamp")


@pytest.mark.parametrize(
    "bad",
    [
        {"tolerance": -0.1},
        {"bogus": 1},
        {"metrics": []},
        {"metrics": [{"type": "External", "signal": "queue", "value": 1, "average_value": 1}]},
        {"metrics": [{"type": "Pods", "metric": "cpu", "average_value": 1}]},
        {"behavior": {"scale_up": {"policies": [{"type": "Pods", "value": 0, "period_seconds": 15}]}}},
        {"behavior": {"scale_down": {"stabilization_window_seconds": 3601}}},
        {"behavior": {"scale_down": {"select_policy": "Sometimes"}}},
    ],
)
def test_config_rejects_out_of_range(bad):
    with pytest.raises(ValidationError):
        HPAConfig(**bad)
