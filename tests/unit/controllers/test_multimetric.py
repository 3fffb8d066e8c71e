"""Multi-metric controller (SPEC 1b): EWMA, rules A-D in order, both cooldowns, bounds."""
from __future__ import annotations

import pytest
from pydantic import ValidationError

from scalearena.controllers.multimetric import MultiMetric, MultiMetricConfig
from tests.unit.viewkit import FakeMetrics, pod, variant, view


def pods_of(n: int, gpu: float, waiting: int = 0, kv: float = 0.0):
    return tuple(pod(i, gpu=gpu, waiting=waiting, kv=kv) for i in range(n))


def step(mm: MultiMetric, t: float, spec: int, gpu: float, waiting: int = 0, kv: float = 0.0,
         p99_s: float | None = None, max_replicas: int = 10):
    v = variant(spec=spec, pods=pods_of(spec, gpu, waiting, kv), min_replicas=1, max_replicas=max_replicas)
    return mm.decide(t, view(t, v, metrics=FakeMetrics(p99_s=p99_s)))[0]


def test_ewma_smooths_gpu_with_alpha_0_3():
    mm = MultiMetric(MultiMetricConfig())
    step(mm, 0, 2, gpu=1.0)  # first sample initialises the EWMA: 1.0
    d = step(mm, 5, 2, gpu=0.0)  # 0.3 * 0.0 + 0.7 * 1.0 = 0.7
    assert d.reasons[0].values["gpu_smoothed"] == pytest.approx(0.7)


def test_rule_a_compute_saturated_adds_one():
    # gpu 0.9 > 0.8 and queue 6 + 6 = 12 > 10 -> +1
    d = step(MultiMetric(MultiMetricConfig()), 0, 2, gpu=0.9, waiting=6)
    assert (d.desired_replicas, d.reasons[1].rule) == (3, "rule_A")


def test_rule_a_needs_queue_strictly_above_ten():
    # queue 5 + 5 = 10 is not > 10; gpu 0.9 is not idle -> no-op
    d = step(MultiMetric(MultiMetricConfig()), 0, 2, gpu=0.9, waiting=5)
    assert (d.desired_replicas, d.reasons[1].rule) == (2, "no_op")


def test_smoothing_keeps_a_single_spike_from_scaling():
    mm = MultiMetric(MultiMetricConfig())
    step(mm, 0, 2, gpu=0.5, waiting=10)  # ewma 0.5
    # raw 1.0 with queue 20: ewma 0.3 * 1.0 + 0.7 * 0.5 = 0.65, not > 0.8 -> no scale-up
    d = step(mm, 5, 2, gpu=1.0, waiting=10)
    assert d.desired_replicas == 2


def test_rule_b_memory_pressure_adds_two():
    # kv mean 0.95 > 0.90 and gpu 0.7 > 0.6 (rule A fails: 0.7 < 0.8) -> +2
    d = step(MultiMetric(MultiMetricConfig()), 0, 3, gpu=0.7, kv=0.95)
    assert (d.desired_replicas, d.reasons[1].rule) == (5, "rule_B")


def test_rule_c_alerts_without_scaling():
    # p99 1.2 s = 1200 ms > 2 x 500 ms; gpu 0.1 would be idle (D) but C comes first
    d = step(MultiMetric(MultiMetricConfig()), 0, 3, gpu=0.1, p99_s=1.2)
    assert d.desired_replicas == 3
    assert d.action == "alert" and d.alerts


def test_rule_d_idle_removes_one_but_not_below_min():
    mm = MultiMetric(MultiMetricConfig())
    assert step(mm, 0, 3, gpu=0.1).desired_replicas == 2  # 0.1 < 0.2, queue 0 -> -1
    d = step(MultiMetric(MultiMetricConfig()), 0, 2, gpu=0.1)  # 2 - 1 = 1 < min 2 -> no-op
    assert (d.desired_replicas, d.reasons[1].rule) == (2, "rule_D")


def test_scale_up_cooldown_60s():
    mm = MultiMetric(MultiMetricConfig())
    assert step(mm, 0, 2, gpu=0.9, waiting=6).desired_replicas == 3
    d = step(mm, 55, 3, gpu=0.9, waiting=6)  # 55 - 0 < 60 -> held
    assert (d.desired_replicas, d.reasons[1].rule) == (3, "cooldown")
    assert step(mm, 60, 3, gpu=0.9, waiting=6).desired_replicas == 4  # 60 - 0 < 60 is false


def test_scale_down_cooldown_300s():
    mm = MultiMetric(MultiMetricConfig())
    assert step(mm, 0, 5, gpu=0.1).desired_replicas == 4
    assert step(mm, 295, 4, gpu=0.1).desired_replicas == 4  # 295 < 300 -> held
    assert step(mm, 300, 4, gpu=0.1).desired_replicas == 3


def test_scale_up_past_max_becomes_an_alert():
    d = step(MultiMetric(MultiMetricConfig()), 0, 10, gpu=0.9, waiting=6, max_replicas=10)
    assert (d.desired_replicas, d.action) == (10, "alert")
    # rule B from 9 wants 11: goes to max 10 and raises the alert
    d = step(MultiMetric(MultiMetricConfig()), 0, 9, gpu=0.7, kv=0.95, max_replicas=10)
    assert d.desired_replicas == 10 and d.alerts


def test_metrics_unavailable_holds():
    mm = MultiMetric(MultiMetricConfig())
    d = mm.decide(0, view(0, variant(spec=4, ready=4, metrics_available=False)))[0]
    assert (d.desired_replicas, d.reasons[0].rule) == (4, "metrics_unavailable")


def test_p99_query_failure_is_not_fatal():
    mm = MultiMetric(MultiMetricConfig())
    v = variant(spec=2, pods=pods_of(2, 0.9, 6))
    d = mm.decide(0, view(0, v, metrics=FakeMetrics(unavailable=True)))[0]
    assert d.desired_replicas == 3 and d.reasons[0].values["p99_ms"] is None


@pytest.mark.parametrize("bad", [{"ewma_alpha": 0}, {"ewma_alpha": 1.5}, {"compute_gpu": 2},
                                 {"min_replicas": -1}, {"scale_up_cooldown_s": -5}, {"alpha": 0.3}])
def test_config_rejects_out_of_range(bad):
    with pytest.raises(ValidationError):
        MultiMetricConfig(**bad)
