"""Scale-to-zero, the keep-cheapest-at-1 floor, the fast scale-from-zero loop, and the wva_* gauges."""
from __future__ import annotations

from scalearena.contracts.series import REQUEST_SUCCESS
from scalearena.controllers.wva.controller import WVA, WVAConfig

from .test_wva_views import NOW, FakeMetrics, by_variant, variant, view

IDLE = (0.0, 0)
ON = WVAConfig(scale_to_zero={"enabled": True})  # retention 600 s


def idle_model(now: float, **kw):
    return (variant("va-a100", [IDLE], ts=now, **kw), variant("va-h100", [], cost=2.5, gpu="H100"))


def test_zero_successes_over_the_retention_window_sends_the_model_to_zero() -> None:
    wva = WVA(ON)
    first = by_variant(wva.decide(NOW, view(*idle_model(NOW))))
    # first sighting at 1000 s: only 0 s of the 600 s window observed -> no scale-to-zero yet
    assert first["va-a100"].desired_replicas == 1
    assert "not yet observed" in first["va-a100"].audit["scale_to_zero"]["skipped"]
    vs = idle_model(NOW + 600)
    m = FakeMetrics(vs, successes={"va-a100": 0.0})
    d = by_variant(wva.decide(NOW + 600, view(*vs, now=NOW + 600, metrics=m)))
    # 1600 - 1000 = 600 s observed >= 600 s retention, 0 successes summed over both variants -> 0
    assert d["va-a100"].desired_replicas == 0 and d["va-h100"].desired_replicas == 0
    assert any(r.rule == "wva.scale_to_zero" for r in d["va-a100"].reasons)
    assert d["va-a100"].audit["trigger"] == "scale_to_zero"
    assert ("increase", "va-a100", REQUEST_SUCCESS, 600.0) in m.calls
    assert ("increase", "va-h100", REQUEST_SUCCESS, 600.0) in m.calls


def test_recent_successes_keep_the_model_up() -> None:
    wva = WVA(ON)
    wva.decide(NOW, view(*idle_model(NOW)))
    vs = idle_model(NOW + 600)
    d = by_variant(wva.decide(NOW + 600, view(*vs, now=NOW + 600, successes={"va-a100": 3.0})))
    assert d["va-a100"].desired_replicas == 1


def test_failed_success_query_keeps_the_current_target() -> None:
    wva = WVA(ON)
    wva.decide(NOW, view(*idle_model(NOW)))
    vs = idle_model(NOW + 600)
    d = by_variant(wva.decide(NOW + 600, view(*vs, now=NOW + 600, metrics=FakeMetrics(vs, fail_counter=True))))
    assert d["va-a100"].desired_replicas == 1
    assert "query failed" in [r for r in d["va-a100"].reasons if r.rule == "wva.scale_to_zero"][0].message


def test_running_requests_or_gateway_queue_block_scale_to_zero() -> None:
    wva = WVA(ON)
    wva.decide(NOW, view(*idle_model(NOW)))
    busy = idle_model(NOW + 600, running=1)
    assert by_variant(wva.decide(NOW + 600, view(*busy, now=NOW + 600)))["va-a100"].desired_replicas == 1
    queued = idle_model(NOW + 630)
    d = by_variant(wva.decide(NOW + 630, view(*queued, now=NOW + 630, router_queue={"m": 2})))
    assert d["va-a100"].desired_replicas == 1


def test_min_replicas_wins_over_scale_to_zero() -> None:
    wva = WVA(ON)
    wva.decide(NOW, view(*idle_model(NOW, min_replicas=1)))
    d = by_variant(wva.decide(NOW + 600, view(*idle_model(NOW + 600, min_replicas=1), now=NOW + 600)))
    assert d["va-a100"].desired_replicas == 1 and any(r.rule == "wva.bounds" for r in d["va-a100"].reasons)


def test_disabled_keeps_the_cheapest_variant_at_one() -> None:
    # Both variants at 0 (e.g. scaled to zero earlier); scale-to-zero is off -> a100 (cost 1.0) back to 1.
    vs = (variant("va-h100", [], cost=2.5), variant("va-a100", [], cost=1.0))
    d = by_variant(WVA(WVAConfig()).decide(NOW, view(*vs)))
    assert d["va-a100"].desired_replicas == 1 and d["va-h100"].desired_replicas == 0
    assert d["va-a100"].audit["trigger"] == "keep_one"


def test_per_model_scale_to_zero_override() -> None:
    cfg = WVAConfig(model_overrides={"m": {"scale_to_zero": True, "retention_s": 60}})
    assert cfg.scale_to_zero_for("m") == (True, 60) and cfg.scale_to_zero_for("other") == (False, 600.0)
    wva = WVA(cfg)
    wva.decide(NOW, view(*idle_model(NOW)))
    # 60 s later the 60 s window is observed with 0 successes -> 0
    d = by_variant(wva.decide(NOW + 60, view(*idle_model(NOW + 60), now=NOW + 60)))
    assert d["va-a100"].desired_replicas == 0


def test_fast_loop_wakes_the_cheapest_variant_when_requests_queue() -> None:
    wva = WVA(ON)
    assert wva.fast_period_s == 0.1
    at_zero = (variant("va-h100", [], cost=2.5), variant("va-a100", [], cost=1.0))
    assert wva.decide_fast(NOW, view(*at_zero)) == []  # nothing queued: no decision
    ds = wva.decide_fast(NOW + 0.1, view(*at_zero, router_queue={"m": 1}))
    assert [(d.variant, d.current_replicas, d.desired_replicas) for d in ds] == [("va-a100", 0, 1)]
    assert ds[0].reasons[0].rule == "wva.scale_from_zero" and ds[0].audit["actuation"] == "direct"
    # 100 ms later the deployment has not caught up yet: no duplicate decision
    assert wva.decide_fast(NOW + 0.2, view(*at_zero, router_queue={"m": 1})) == []
    # the slow loop holds the wake-up while it is in flight (desired 1 != spec 0)
    d = by_variant(wva.decide(NOW + 0.3, view(*at_zero, router_queue={"m": 1})))
    assert d["va-a100"].desired_replicas == 1


def test_fast_loop_ignores_models_that_are_running() -> None:
    wva = WVA(ON)
    assert wva.decide_fast(NOW, view(variant("va", [IDLE]), router_queue={"m": 5})) == []


def test_gauges_for_metric_publishing_actuation() -> None:
    # a100 2 x kv 0.75 -> 3 (ratio 3/2 = 1.5); h100 1 -> 1 (ratio 1.0).
    wva = WVA(WVAConfig())
    v = view(variant("va-a100", [(0.75, 0)] * 2), variant("va-h100", [(0.75, 0)], cost=2.5, gpu="H100"))
    ds = wva.decide(NOW, v)
    got = {(s.name, s.labels["variant_name"]): s for s in wva.metric_samples(ds, v, namespace="llm-d")}
    assert got[("wva_desired_replicas", "va-a100")].value == 3
    assert got[("wva_current_replicas", "va-a100")].value == 2
    assert got[("wva_desired_ratio", "va-a100")].value == 1.5
    assert got[("wva_desired_ratio", "va-h100")].value == 1.0
    assert got[("wva_desired_replicas", "va-h100")].labels == {
        "variant_name": "va-h100", "namespace": "llm-d", "accelerator_type": "H100",
    }
    counter = got[("wva_replica_scaling_total", "va-a100")]
    assert counter.value == 1 and counter.labels["direction"] == "up" and counter.labels["reason"] == "saturation"
    assert ("wva_replica_scaling_total", "va-h100") not in got  # held: not a scaling operation


def test_desired_ratio_from_zero_is_the_desired_count() -> None:
    # current 0 -> ratio = desired (1), never a division by zero.
    wva = WVA(ON)
    at_zero = (variant("va-a100", []),)
    v = view(*at_zero, router_queue={"m": 3})
    got = {s.name: s.value for s in wva.metric_samples(wva.decide_fast(NOW, v), v)}
    assert got["wva_desired_ratio"] == 1.0 and got["wva_current_replicas"] == 0
