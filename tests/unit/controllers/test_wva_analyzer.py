"""The saturation analyzer on hand-worked vectors (defaults tau_kv 0.8, tau_q 5, gamma_kv 0.1, gamma_q 3)."""
from __future__ import annotations

import pytest

from scalearena.controllers.wva.analyzer import ReplicaSample, analyze
from scalearena.controllers.wva.config import Thresholds

T = Thresholds(tau_kv=0.8, tau_q=5.0, gamma_kv=0.1, gamma_q=3.0, min_non_saturated=2)


def reps(*kv_q: tuple[float, float], variant: str = "va") -> list[ReplicaSample]:
    return [ReplicaSample(variant, f"p{i}", kv, q) for i, (kv, q) in enumerate(kv_q)]


def test_kv_spare_below_gamma_triggers_scale_up() -> None:
    # kv 0.75, 0.72: both < 0.8, non-saturated. spare kv = (0.05 + 0.08) / 2 = 0.065 < 0.1 -> up.
    # queue 0: spare 5 >= 3, not a trigger on its own.
    a = analyze("m", reps((0.75, 0), (0.72, 0)), T)
    assert a.scale_up
    assert a.avg_spare_kv == pytest.approx(0.065)
    assert a.avg_spare_q == pytest.approx(5.0)
    assert "kv" in a.scale_up_reason and "queue" not in a.scale_up_reason


def test_queue_spare_below_gamma_triggers_scale_up() -> None:
    # queue 3 and 2 (< 5, non-saturated): spare q = (2 + 3) / 2 = 2.5 < 3 -> up; kv 0.1: spare 0.7.
    a = analyze("m", reps((0.1, 3), (0.1, 2)), T)
    assert a.scale_up and a.avg_spare_q == pytest.approx(2.5)


def test_all_replicas_saturated_scales_up() -> None:
    # kv 0.9 >= 0.8 and queue 6 >= 5: no non-saturated replica, average spare taken as 0 -> up.
    a = analyze("m", reps((0.9, 0), (0.2, 6)), T)
    assert a.scale_up and a.non_saturated == 0 and len(a.saturated) == 2


def test_saturation_is_inclusive_at_the_threshold() -> None:
    # kv exactly 0.80 is saturated (>=); the other replica idles -> spare over 1 replica = 0.8 / 5.
    a = analyze("m", reps((0.8, 0), (0.0, 0)), T)
    assert a.saturated == ("p0",)
    assert a.avg_spare_kv == pytest.approx(0.8) and not a.scale_up


def test_scale_down_allowed_when_prediction_keeps_spare() -> None:
    # 3 replicas kv 0.2, queue 0. Load after removing one: 0.2 x 3/2 = 0.3 -> spare 0.8 - 0.3 = 0.5 >= 0.1;
    # queue load 0 x 3/2 = 0 -> spare 5 >= 3. 3 non-saturated >= 2. Safe.
    a = analyze("m", reps((0.2, 0), (0.2, 0), (0.2, 0)), T)
    assert not a.scale_up and a.scale_down_safe
    assert a.predicted_spare_kv == pytest.approx(0.5)
    assert a.predicted_spare_q == pytest.approx(5.0)


def test_scale_down_blocked_by_n_over_n_minus_1_prediction_on_kv() -> None:
    # 2 replicas kv 0.4: spare 0.4 >= 0.1, no scale-up. After removing one: 0.4 x 2/1 = 0.8 -> spare 0.0 < 0.1.
    a = analyze("m", reps((0.4, 0), (0.4, 0)), T)
    assert not a.scale_up and not a.scale_down_safe
    assert a.predicted_spare_kv == pytest.approx(0.0)


def test_scale_down_blocked_by_prediction_on_queue() -> None:
    # queue 2, 2, 1: mean 5/3, spare 5 - 5/3 = 3.33 >= 3 (no scale-up).
    # After removing one: 5/3 x 3/2 = 2.5 -> spare 2.5 < 3 -> unsafe, though kv (0.1 -> 0.15, spare 0.65) is fine.
    a = analyze("m", reps((0.1, 2), (0.1, 2), (0.1, 1)), T)
    assert not a.scale_up and not a.scale_down_safe
    assert a.predicted_spare_q == pytest.approx(2.5)
    assert a.predicted_spare_kv == pytest.approx(0.65)


def test_scale_down_exactly_at_gamma_is_safe() -> None:
    # queue 2, 1, 1: mean 4/3, after removal 4/3 x 3/2 = 2 -> spare 3 >= 3 (the bound is inclusive).
    a = analyze("m", reps((0.1, 2), (0.1, 1), (0.1, 1)), T)
    assert a.scale_down_safe and a.predicted_spare_q == pytest.approx(3.0)


def test_fragmentation_low_mean_but_two_saturated_blocks_scale_down() -> None:
    # p0 kv 0.82 (saturated), p1 queue 5 (saturated), p2 idle.
    # Mean kv over all three = 0.92 / 3 = 0.307, mean queue = 5/3: an average-driven policy sees room
    # (0.307 x 3/2 = 0.46 -> spare 0.34 >= 0.1) and would remove a replica holding live requests.
    # WVA: only 1 non-saturated replica < MinNonSaturatedReplicasForScaleDown 2 -> no scale-down.
    # No scale-up either: the one non-saturated replica has spare kv 0.8, queue 5.
    a = analyze("m", reps((0.82, 0), (0.10, 5), (0.0, 0)), T)
    assert len(a.saturated) == 2 and a.non_saturated == 1
    assert not a.scale_up and not a.scale_down_safe
    assert "fragmentation" in a.scale_down_reason


def test_min_non_saturated_override_raises_the_bar() -> None:
    # Same 3 idle replicas as the allowed case, but requiring 4 non-saturated replicas: 3 < 4 -> blocked.
    t4 = Thresholds(tau_kv=0.8, tau_q=5.0, gamma_kv=0.1, gamma_q=3.0, min_non_saturated=4)
    assert not analyze("m", reps((0.2, 0), (0.2, 0), (0.2, 0)), t4).scale_down_safe


def test_no_replicas_neither_scales_up_nor_down() -> None:
    a = analyze("m", [], T)
    assert not a.scale_up and not a.scale_down_safe and a.replicas == 0


def test_average_spans_variants_of_the_model() -> None:
    # a100 pod kv 0.7 (spare 0.1), h100 pod kv 0.78 (spare 0.02): model average (0.1 + 0.02) / 2 = 0.06 < 0.1.
    samples = reps((0.7, 0), variant="a100") + [ReplicaSample("h100", "h0", 0.78, 0)]
    a = analyze("m", samples, T)
    assert a.scale_up and a.avg_spare_kv == pytest.approx(0.06)
    assert a.per_variant["h100"]["replicas"] == 1
