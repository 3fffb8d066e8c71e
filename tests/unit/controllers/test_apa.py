"""``apa``: AIBrix's control law, upstream's table tests, and the loop around it (window, cooldown, bounds)."""
from __future__ import annotations

import pytest
from pydantic import ValidationError

from scalearena.controllers.apa import APA, APAConfig, APAMetric, apa_replicas
from tests.unit.viewkit import FakeMetrics, pod, variant, view

# vllm-project/aibrix pkg/controller/podautoscaler/algorithm/apa_test.go, TestAPAAlgorithm_ComputeTargetReplicas:
# (name, current pods, target, current use per pod, up tol, up rate, down tol, down rate, expected)
UPSTREAM = [
    ("basic_scale_up", 2, 30, 45, 0.1, 2, 0.1, 2, 3),  # 45/30 = 1.5 > 1.1: ceil(2 x 1.5) = 3 <= ceil(2 x 2) = 4
    ("scale_up_upto_ceiling", 2, 30, 35, 0.1, 2, 0.1, 2, 3),  # 1.167 > 1.1: ceil(2.33) = 3
    ("scale_up_upto_max_scale_up", 2, 30, 90, 0.1, 2, 0.1, 2, 4),  # ceil(2 x 3) = 6 capped at ceil(2 x 2) = 4
    ("scale_up_upto_max_scale_up_ceiling", 2, 30, 90, 0.1, 2.5, 0.1, 2, 5),  # cap ceil(2 x 2.5) = 5
    ("basic_scale_down", 6, 30, 20, 0.1, 2, 0.1, 2, 4),  # 0.667 < 0.9: ceil(6 x 0.667) = 4 >= floor(6/2) = 3
    ("scale_down_upto_ceiling", 6, 30, 18, 0.1, 2, 0.1, 2, 4),  # ceil(6 x 0.6) = ceil(3.6) = 4
    ("scale_down_upto_max_scale_down", 6, 30, 10, 0.1, 2, 0.1, 2, 3),  # ceil(2) = 2 raised to floor(6/2) = 3
    ("scale_down_upto_max_scale_down_floor", 6, 30, 5, 0.1, 2, 0.1, 2.5, 2),  # ceil(1) = 1 raised to floor(2.4) = 2
    ("no_scaling_as_within_up_tolerance", 2, 30, 33, 0.1, 2, 0.1, 2, 2),  # 1.1 is not > 1.1
    ("no_scaling_as_within_down_tolerance", 2, 30, 27, 0.1, 2, 0.1, 2, 2),  # 0.9 is not < 0.9
]


@pytest.mark.parametrize("name,n,target,use,up_tol,up_rate,down_tol,down_rate,expected", UPSTREAM,
                         ids=[u[0] for u in UPSTREAM])
def test_upstream_compute_target_replicas(name, n, target, use, up_tol, up_rate, down_tol, down_rate, expected):
    assert apa_replicas(float(n), use, target, up_tol, down_tol, up_rate, down_rate) == expected


def kv_view(now, spec, kvs, **kw):
    return view(now, variant(spec=spec, pods=[pod(i, kv=k) for i, k in enumerate(kvs)], **kw))


def test_default_metric_is_kv_at_half_and_the_law_runs_on_the_pod_mean():
    apa = APA(APAConfig())
    # pods at 0.9 and 0.7: mean 0.8, / 0.5 = 1.6 > 1.1 -> ceil(2 x 1.6) = ceil(3.2) = 4 <= ceil(2 x 2) = 4
    (d,) = apa.decide(0.0, kv_view(0.0, 2, [0.9, 0.7]))
    assert d.desired_replicas == 4
    assert d.reasons[0].values["value_per_pod"] == pytest.approx(0.8)
    assert d.reasons[0].values["ratio"] == pytest.approx(1.6)


def test_the_metric_is_averaged_over_the_observe_window():
    apa = APA(APAConfig(observe_window_s=60))
    apa.decide(0.0, kv_view(0.0, 4, [0.5] * 4))  # ratio 1.0: hold
    # window (t > -30 at t=30): samples 0.5 and 0.8 -> 0.65 / 0.5 = 1.3 > 1.1 -> ceil(4 x 1.3) = ceil(5.2) = 6
    (d,) = apa.decide(30.0, kv_view(30.0, 4, [0.8] * 4))
    assert d.desired_replicas == 6
    # at t=90 the t=0 and t=30 samples have left the 60 s window; only 0.55 counts: 1.1 is inside the band
    (d,) = apa.decide(90.0, kv_view(90.0, 6, [0.55] * 6))
    assert d.desired_replicas == 6


def test_scale_down_waits_for_the_cooldown_window():
    apa = APA(APAConfig(observe_window_s=1, scale_down_cooldown_s=300))
    (d,) = apa.decide(0.0, kv_view(0.0, 4, [0.5] * 4))  # ratio 1: recommendation 4
    assert d.desired_replicas == 4
    # 0.2 / 0.5 = 0.4 < 0.9: ceil(4 x 0.4) = 2 >= floor(4/2) = 2 -> 2, but the window holds the t=0 recommendation 4
    (d,) = apa.decide(15.0, kv_view(15.0, 4, [0.2] * 4))
    assert d.desired_replicas == 4
    assert any(r.rule == "scale_down_cooldown" for r in d.reasons)
    # t=301: the recommendation 4 from t=0 is out of (1, 301]; the one from t=15 (2) remains: 2
    (d,) = apa.decide(301.0, kv_view(301.0, 4, [0.2] * 4))
    assert d.desired_replicas == 2


def test_largest_metric_proposal_wins():
    cfg = APAConfig(metrics=[APAMetric(metric="vllm:kv_cache_usage_perc", target_value=0.5),
                             APAMetric(metric="vllm:num_requests_waiting", target_value=2)])
    apa = APA(cfg)
    v = view(0.0, variant(spec=2, pods=[pod(0, kv=0.5, waiting=6), pod(1, kv=0.5, waiting=4)]))
    # kv 0.5/0.5 = 1 -> 2; waiting mean 5 / 2 = 2.5 -> ceil(2 x 2.5) = 5 capped at ceil(2 x 2) = 4
    (d,) = apa.decide(0.0, v)
    assert d.desired_replicas == 4
    assert [r.values["proposal"] for r in d.reasons if r.rule == "apa"] == [2, 4]


def test_bounds_and_scale_to_zero_rule():
    apa = APA(APAConfig(scale_down_cooldown_s=0))
    # ratio 0 -> ceil(0) = 0 raised to floor(2/2) = 1; min_replicas 0 without scale_to_zero still keeps 1
    (d,) = apa.decide(0.0, kv_view(0.0, 2, [0.0, 0.0], min_replicas=0))
    assert d.desired_replicas == 1
    apa = APA(APAConfig())  # a fresh window: 1.0 / 0.5 = 2.0 -> ceil(8 x 2) = 16 = cap ceil(8 x 2), then max 10
    (d,) = apa.decide(0.0, kv_view(0.0, 8, [1.0] * 8, max_replicas=10))
    assert d.desired_replicas == 10 and d.reasons[-1].rule == "clamp"


def test_holds_without_metrics_or_samples():
    apa = APA(APAConfig())
    v = view(0.0, variant(spec=3, metrics_available=False), metrics=FakeMetrics(unavailable=True))
    (d,) = apa.decide(0.0, v)
    assert (d.desired_replicas, d.reasons[0].rule) == (3, "metrics_unavailable")
    (d,) = apa.decide(15.0, view(15.0, variant(spec=3, pods=[], ready=0)))
    assert (d.desired_replicas, d.reasons[0].rule) == (3, "no_metric_data")


@pytest.mark.parametrize("bad", [{"up_fluctuation_tolerance": -0.1}, {"max_scale_up_rate": 0.5},
                                 {"metrics": []}, {"observe_window_s": 0}, {"tolerance": 0.1}])
def test_config_rejects_bad_values(bad):
    with pytest.raises(ValidationError):
        APAConfig(**bad)
