"""The wva policy end to end on hand-built views: cost order, transition blocking, gates, overrides, headroom."""
from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from scalearena.contracts.series import KV_USAGE, NUM_WAITING
from scalearena.controllers.wva.controller import WVA, WVAConfig
from scalearena.controllers.wva.optimizer import scale_up_candidates

from .test_wva_views import NOW, FakeMetrics, by_variant, variant, view

SAT = (0.95, 0)  # saturated on KV (0.95 >= 0.8)
HOT = (0.75, 0)  # non-saturated, spare 0.05 < gamma_kv 0.1
IDLE = (0.1, 0)  # non-saturated, plenty of spare


def decide(v, cfg: WVAConfig | None = None, now: float = NOW):
    return by_variant(WVA(cfg or WVAConfig()).decide(now, v))


def test_scale_up_goes_to_the_cheapest_variant() -> None:
    # a100 (1.0) 2 x kv 0.75 and h100 (2.5) 1 x kv 0.75: spare (0.05 x 3) / 3 = 0.05 < 0.1 -> +1 on a100.
    d = decide(view(variant("va-a100", [HOT, HOT], cost=1.0), variant("va-h100", [HOT], cost=2.5, gpu="H100")))
    assert (d["va-a100"].current_replicas, d["va-a100"].desired_replicas) == (2, 3)
    assert d["va-h100"].desired_replicas == 1
    assert d["va-a100"].action == "scale_up" and d["va-h100"].action == "hold"


def test_scale_down_takes_from_the_most_expensive_variant() -> None:
    # 4 replicas kv 0.1: load after removal 0.1 x 4/3 = 0.133 -> spare 0.667 >= 0.1; 4 non-saturated >= 2.
    # h100 (2.5) has 2 replicas -> 2 - 1 = 1; a100 keeps 2.
    d = decide(view(variant("va-a100", [IDLE, IDLE], cost=1.0), variant("va-h100", [IDLE, IDLE], cost=2.5)))
    assert d["va-h100"].desired_replicas == 1 and d["va-a100"].desired_replicas == 2


def test_scale_down_skips_variants_with_a_single_replica() -> None:
    # h100 has 1 replica (never taken below 1 by scale-down), so the -1 lands on a100: 2 -> 1.
    # 3 x kv 0.1 -> after removal 0.1 x 3/2 = 0.15 -> spare 0.65 >= 0.1.
    d = decide(view(variant("va-a100", [IDLE, IDLE], cost=1.0), variant("va-h100", [IDLE], cost=2.5)))
    assert d["va-a100"].desired_replicas == 1 and d["va-h100"].desired_replicas == 1


def test_cost_ties_break_by_name() -> None:
    # Equal cost: scale-up picks the first name (vb-0 < vb-1), scale-down the last (upstream's mirror order).
    up = decide(view(variant("vb-1", [HOT]), variant("vb-0", [HOT])))
    assert up["vb-0"].desired_replicas == 2 and up["vb-1"].desired_replicas == 1
    down = decide(view(variant("vb-1", [IDLE, IDLE]), variant("vb-0", [IDLE, IDLE])))
    assert down["vb-1"].desired_replicas == 1 and down["vb-0"].desired_replicas == 2


def test_candidates_skip_pending_and_full_variants() -> None:
    a = variant("a", [HOT], cost=1.0, pending=1)
    b = variant("b", [HOT], cost=1.5, max_replicas=1)
    c = variant("c", [HOT], cost=2.5)
    base = {"a": 1, "b": 1, "c": 1}
    assert [v.name for v in scale_up_candidates([a, b, c], base)] == ["c"]


def test_scale_up_at_max_everywhere_raises_an_alert() -> None:
    d = decide(view(variant("va-a100", [SAT, SAT], max_replicas=2), variant("va-h100", [SAT], max_replicas=1)))
    assert d["va-a100"].desired_replicas == 2 and d["va-a100"].action == "alert"
    assert "at max" in d["va-a100"].alerts[0]


@pytest.mark.parametrize(
    "kwargs, why",
    [
        ({"spec": 3, "ready": 2, "pending": 1}, "pending(1)"),  # a new replica is starting
        ({"spec": 2, "ready": 3}, "spec(2)!=ready(3)"),  # a scale-down in flight
    ],
)
def test_transition_blocks_every_variant_of_the_model(kwargs: dict, why: str) -> None:
    # Saturated everywhere would normally scale up; a100 in transition -> no new decision for model m.
    a100 = variant("va-a100", [SAT, SAT], **kwargs)
    d = decide(view(a100, variant("va-h100", [SAT], cost=2.5)))
    assert d["va-a100"].desired_replicas == a100.spec_replicas and d["va-h100"].desired_replicas == 1
    assert d["va-h100"].reasons[0].rule == "wva.transition" and why in d["va-h100"].reasons[0].message


def test_fewer_pods_reporting_than_ready_blocks() -> None:
    # ready 3 but only 2 pods report metrics -> transition.
    d = decide(view(variant("va", [SAT, SAT], ready=3, spec=3)))
    assert d["va"].desired_replicas == 3 and "metrics(2)<ready(3)" in d["va"].reasons[0].message


def test_own_desired_not_yet_applied_blocks_and_is_held() -> None:
    # Cycle 1 asks 2 -> 3. Cycle 2 still sees spec 2 (actuation lag, e.g. HPA): hold 3, do not add a 4th.
    wva = WVA(WVAConfig())
    first = by_variant(wva.decide(NOW, view(variant("va", [SAT, SAT]))))
    assert first["va"].desired_replicas == 3
    second = by_variant(wva.decide(NOW + 30, view(variant("va", [SAT, SAT], ts=NOW + 30), now=NOW + 30)))
    assert second["va"].desired_replicas == 3 and "desired(3)!=spec(2)" in second["va"].reasons[0].message


@pytest.mark.parametrize("how", ["flag", "raise", "stale"])
def test_metrics_unavailable_holds_and_never_scales_down(how: str) -> None:
    # Idle replicas would be a safe scale-down (see above); with metrics unavailable the state is held.
    kw = {"metrics_available": False} if how == "flag" else {"ts": NOW - 120} if how == "stale" else {}
    vs = (variant("va-a100", [IDLE, IDLE], **kw), variant("va-h100", [IDLE, IDLE], cost=2.5))
    v = view(*vs, metrics=FakeMetrics(vs, fail=how == "raise"))
    wva = WVA(WVAConfig())
    d = by_variant(wva.decide(NOW, v))
    assert d["va-a100"].desired_replicas == 2 and d["va-h100"].desired_replicas == 2
    assert "MetricsAvailable=False" in d["va-h100"].reasons[0].message
    assert wva.conditions["va-a100"]["MetricsAvailable"].status == "False"
    assert d["va-a100"].audit["conditions"]["OptimizationReady"]["reason"] == "MetricsUnavailable"


def test_conditions_keep_last_transition_time_until_status_flips() -> None:
    wva = WVA(WVAConfig())
    bad = variant("va", [IDLE, IDLE], metrics_available=False)
    wva.decide(NOW, view(bad))
    wva.decide(NOW + 30, view(bad, now=NOW + 30))
    assert wva.conditions["va"]["MetricsAvailable"].last_transition_time == NOW  # unchanged: still False
    wva.decide(NOW + 60, view(variant("va", [IDLE, IDLE], ts=NOW + 60), now=NOW + 60))
    c = wva.conditions["va"]["MetricsAvailable"]
    assert (c.status, c.last_transition_time) == ("True", NOW + 60)


def test_missing_target_pauses_actuation_for_that_variant_only() -> None:
    d = decide(view(variant("va-a100", [HOT, HOT]), variant("va-h100", [], spec=1, ready=0, target_exists=False)))
    assert d["va-h100"].desired_replicas == 1 and d["va-h100"].reasons[0].rule == "wva.target_resolved"
    assert d["va-h100"].audit["conditions"]["TargetResolved"]["reason"] == "TargetNotFound"
    assert d["va-a100"].desired_replicas == 3  # 2 x kv 0.75 -> spare 0.05 < 0.1 -> +1


def test_per_model_overrides() -> None:
    # Both models run 2 replicas at kv 0.75. Default tau_kv 0.8: spare 0.05 < 0.1 -> m2 scales up.
    # m1 overrides tau_kv 0.9: spare 0.15 >= 0.1 -> no scale-up; after removal 0.75 x 2 = 1.5 -> no scale-down.
    cfg = WVAConfig(model_overrides={"m1": {"tau_kv": 0.9}})
    assert cfg.thresholds("m1").tau_kv == 0.9 and cfg.thresholds("m1").gamma_kv == 0.1
    d = decide(view(variant("v1", [HOT, HOT], model="m1"), variant("v2", [HOT, HOT], model="m2")), cfg)
    assert d["v1"].desired_replicas == 2 and d["v2"].desired_replicas == 3


def test_headroom_rule_adds_several_replicas_where_plus_one_adds_one() -> None:
    # 2 replicas kv 0.95 (both saturated). Load 1.9 + delta 0.3 = 2.2 over per-replica capacity
    # tau_kv - gamma_kv = 0.7 -> 3.14 -> 4 replicas -> +2. Queue: (0 + 2) / (5 - 3) = 1 -> not binding.
    v = view(variant("va", [SAT, SAT]))
    assert decide(v)["va"].desired_replicas == 3  # the +1 rule
    d = decide(v, WVAConfig(headroom={"enabled": True}))["va"]
    assert d.desired_replicas == 4 and d.audit["optimizer"]["headroom_needed_kv"] == 4


def test_headroom_spills_cheapest_first_and_respects_max_step() -> None:
    # a100 (max 5) 4 x kv 1.0 and h100 1 x kv 1.0: load 5.0, (5.0 + 0.3) / 0.7 = 7.57 -> 8 replicas -> +3,
    # capped by max_step 2 -> +2. Cheapest first: a100 has room for 1 (5 - 4), the second goes to h100.
    cfg = WVAConfig(headroom={"enabled": True, "max_step": 2})
    d = decide(view(variant("a100", [(1.0, 0)] * 4, max_replicas=5), variant("h100", [(1.0, 0)], cost=2.5)), cfg)
    assert d["a100"].desired_replicas == 5 and d["h100"].desired_replicas == 2


def test_reads_max_over_time_with_the_configured_window() -> None:
    vs = (variant("va", [IDLE]),)
    m = FakeMetrics(vs)
    WVA(WVAConfig(metric_window_s=30)).decide(NOW, view(*vs, metrics=m))
    assert ("max", "va", KV_USAGE, 30) in m.calls and ("max", "va", NUM_WAITING, 30) in m.calls


def test_every_decision_carries_reasons_and_a_json_audit_of_each_stage() -> None:
    ds = WVA(WVAConfig()).decide(NOW, view(variant("va-a100", [HOT, HOT]), variant("va-h100", [HOT], cost=2.5)))
    for d in ds:
        assert d.reasons and {"analyzer", "optimizer", "limiter", "conditions"} <= set(d.audit)
        assert d.reasons[0].values["avg_spare_kv"] == pytest.approx(0.05)
        assert d.reasons[0].values["saturated"] == 0 and d.reasons[0].values["tau_kv"] == 0.8
        json.dumps(d.to_dict())


def test_same_view_same_decisions() -> None:
    v = view(variant("va-a100", [HOT, SAT]), variant("va-h100", [IDLE], cost=2.5))
    assert [d.to_dict() for d in WVA(WVAConfig()).decide(NOW, v)] == [
        d.to_dict() for d in WVA(WVAConfig()).decide(NOW, v)
    ]


@pytest.mark.parametrize(
    "bad",
    [
        {"tau_kv": 1.5},
        {"gamma_kv": -0.1},
        {"gamma_q": -1},
        {"gamma_kv": 0.8},  # spare trigger at tau: would scale up forever
        {"min_non_saturated_for_scale_down": 1},
        {"model_overrides": {"m": {"gamma_q": 6}}},  # >= tau_q 5
        {"model_overrides": {"m": {"tau_kv": 2}}},
        {"mode": "greedy"},
        {"tau_kv_typo": 0.8},
        {"scale_to_zero": {"retention_s": -5}},
    ],
)
def test_out_of_range_config_is_rejected(bad: dict) -> None:
    with pytest.raises(ValidationError):
        WVAConfig(**bad)


def test_defaults_match_upstream() -> None:
    c = WVAConfig()
    assert (c.tau_kv, c.tau_q, c.gamma_kv, c.gamma_q) == (0.8, 5.0, 0.1, 3.0)
    assert (c.min_non_saturated_for_scale_down, c.period_s, c.fast_period_s) == (2, 30.0, 0.1)
    assert (c.metric_window_s, c.scale_to_zero.retention_s, c.mode) == (60.0, 600.0, "unconstrained")
