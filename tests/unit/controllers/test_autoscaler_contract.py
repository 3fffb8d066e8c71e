"""One contract, every registered autoscaler (WVA included, automatically).

For any sequence of cluster views an autoscaler must:
- keep every desired count within the variant's [min_replicas, max_replicas]
  (views keep the spec count inside those bounds, as the harness does);
- decide only about variants in the view, each decision with its reasons;
- be deterministic: the same sequence of (now, view) gives the same decisions;
- when metrics cannot be read at all (``metrics_available`` False and a
  MetricsReader that raises MetricsUnavailable), not scale down — the
  upstream behaviour of every metrics-driven autoscaler here (HPA, KEDA
  without fallback, WVA's MetricsAvailable gate, ...). The oracle reads no
  metrics; without a forecast it holds, which satisfies the same check.
"""
from __future__ import annotations

import json
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from scalearena.controllers.base import ArrivalForecast, ClusterView, Decision, PodMetrics, VariantView
from scalearena.controllers.llmd import RECIPES, RecipeConfig
from scalearena.controllers.registry import REGISTRY
from tests.unit.viewkit import FakeMetrics

NAMES = REGISTRY.names()
ENGINE = {"kv_cache_blocks": 1024, "block_size": 16, "max_num_seqs": 64,
          "latency": {"kind": "constant", "ttft_ms": 100, "itl_ms": 10}}


def build(name: str, sks: list[dict] | None = None):
    """The autoscaler with its defaults; an llm-d recipe is its objects read for the skeleton's variants (a
    scenario made of them: harness/objects/recipes.py), as a scenario that names it would."""
    cfg = REGISTRY.default_config(name)
    if isinstance(cfg, RecipeConfig):
        cfg = recipe_scenario(name, sks or [SKELETON]).autoscaler(name)
    return REGISTRY.build(cfg)


SKELETON = {"name": "v0", "model": "m0", "min_replicas": 1, "max_replicas": 4, "cost": 1.0, "startup_s": None,
            "engine": {}}


def recipe_scenario(name: str, sks: list[dict]):
    """A scenario of the skeleton's variants (for llmd-token-pd, its first two of model m0 as prefill/decode)."""
    from scalearena.harness.config.scenario import scenario_from_data

    variants = []
    for sk in sks:
        v = {k: sk[k] for k in ("name", "model", "min_replicas", "max_replicas", "cost")}
        variants.append({**v, "gpu": "A100-80GB", "engine": sk["engine"] or ENGINE})
    cluster: dict = {"variants": variants}
    if RECIPES[name].roles:
        base = {"model": "m0", "gpu": "A100-80GB", "engine": ENGINE, "cost": 1.0}
        cluster = {"variants": [{**base, "name": "v0", "role": "prefill", "min_replicas": sks[0]["min_replicas"],
                                 "max_replicas": sks[0]["max_replicas"]},
                                {**base, "name": "v1", "role": "decode", "min_replicas": 1, "max_replicas": 4}],
                   "kv_transfer": {"kv_bytes_per_token": 131072}}
    data = {"name": "contract", "duration_s": 60, "cluster": cluster,
            "workload": {"arrivals": {"kind": "constant", "rate_rps": 1}, "input_tokens": {"kind": "fixed", "value": 100},
                         "output_tokens": {"kind": "fixed", "value": 10}}}
    return scenario_from_data(data, "<contract>")


def skeleton_for(name: str, sks: list[dict]) -> list[dict]:
    """The P/D recipe decides about its two role variants: the views carry exactly those."""
    if name in RECIPES and RECIPES[name].roles:
        return [{**sks[0], "name": "v0", "model": "m0"},
                {**SKELETON, "name": "v1", "model": "m0", "engine": ENGINE}]
    return sks


@st.composite
def skeletons(draw) -> list[dict]:
    """The fixed part of a cluster (bounds, cost, engine): it does not change during a run."""
    out = []
    for i in range(draw(st.integers(1, 3))):
        lo = draw(st.integers(0, 3))
        out.append({
            "name": f"v{i}", "model": ["m0", "m0", "m1"][i], "min_replicas": lo,
            "max_replicas": draw(st.integers(max(lo, 1), 10)), "cost": draw(st.sampled_from([1.0, 2.5])),
            "startup_s": draw(st.none() | st.sampled_from([0.0, 30.0])), "engine": draw(st.sampled_from([{}, ENGINE])),
        })
    return out


@st.composite
def variant_views(draw, sk: dict, metrics_available: bool) -> VariantView:
    spec = draw(st.integers(sk["min_replicas"], sk["max_replicas"]))
    ready = draw(st.integers(0, spec))
    reporting = draw(st.integers(0, ready)) if metrics_available else 0
    pods = tuple(
        PodMetrics(
            pod=f"{sk['name']}-{i}", ts=0.0,
            kv_usage=draw(st.floats(0, 1)), waiting=draw(st.integers(0, 40)), running=draw(st.integers(0, 64)),
            gpu_util=draw(st.none() | st.floats(0, 1)),
        )
        for i in range(reporting)
    )
    return VariantView(
        gpu="A100-80GB", gpus_per_replica=1, spec_replicas=spec, ready=ready, pending=spec - ready,
        terminating=0, pods=pods, metrics_available=metrics_available, **sk,
    )


@st.composite
def cluster_views(draw, sks: list[dict], now: float, metrics_available: bool | None = None) -> ClusterView:
    ok = draw(st.booleans()) if metrics_available is None else metrics_available
    variants = tuple(draw(variant_views(sk, ok)) for sk in sks)
    forecast = ()
    if draw(st.booleans()):
        k = draw(st.integers(0, 40))
        forecast = (ArrivalForecast("m0", tuple(now + 3.0 * j for j in range(k)), (2000,) * k, (500,) * k),)
    metrics = FakeMetrics(p99_s=draw(st.none() | st.floats(0, 5)), unavailable=not ok)
    return ClusterView(now=now, variants=variants, metrics=metrics,
                       router_queue={"m0": draw(st.integers(0, 20)), "m1": 0}, forecast=forecast)


@st.composite
def view_sequences(draw, period_s: float, sks: list[dict] | None = None) -> list[ClusterView]:
    sks = sks or draw(skeletons())
    return [draw(cluster_views(sks, i * period_s)) for i in range(draw(st.integers(1, 6)))]


def check(view: ClusterView, decisions: list[Decision]) -> None:
    names = {v.name for v in view.variants}
    for d in decisions:
        assert d.variant in names
        v = view.variant(d.variant)
        assert v.min_replicas <= d.desired_replicas <= v.max_replicas, d.to_dict()
        assert d.reasons and all(r.rule and r.message for r in d.reasons)
        assert d.current_replicas == v.spec_replicas


def run(policy, views: list[ClusterView]) -> list[list[Decision]]:
    return [policy.decide(v.now, v) for v in views]


def as_json(decisions: list[list[Decision]]) -> str:
    return json.dumps([[d.to_dict() for d in step] for step in decisions], default=str, sort_keys=True)


@pytest.mark.parametrize("name", NAMES)
def test_builds_from_defaults_with_a_positive_period(name):
    policy = build(name)
    assert policy.period_s > 0
    assert policy.kind == name


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_bounds_and_reasons_on_random_views(name, data):
    sks = skeleton_for(name, data.draw(skeletons()))
    policy = build(name, sks)
    for view in data.draw(view_sequences(policy.period_s, sks)):
        check(view, policy.decide(view.now, view))


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_deterministic(name, data):
    sks = skeleton_for(name, data.draw(skeletons()))
    views = data.draw(view_sequences(build(name, sks).period_s, sks))
    assert as_json(run(build(name, sks), views)) == as_json(run(build(name, sks), views))


def dark(view: ClusterView, now: float, applied: dict[str, int]) -> ClusterView:
    """The cluster during an outage: the last decisions applied and every pod ready, but no metric
    can be read (and no forecast, so the oracle, which reads none, holds too)."""
    variants = tuple(
        replace(v, spec_replicas=applied.get(v.name, v.spec_replicas), ready=applied.get(v.name, v.spec_replicas),
                pending=0, pods=(), metrics_available=False)
        for v in view.variants
    )
    return ClusterView(now=now, variants=variants, metrics=FakeMetrics(unavailable=True),
                       router_queue=dict(view.router_queue))


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_no_scale_down_without_metrics(name, data):
    sks = skeleton_for(name, data.draw(skeletons()))
    policy = build(name, sks)
    p = policy.period_s
    first = data.draw(cluster_views(sks, 0.0, metrics_available=True))
    applied = {d.variant: d.desired_replicas for d in policy.decide(0.0, first)}
    for i in range(1, max(1, min(40, int(1200 / p))) + 1):  # up to a 20-minute outage
        view = dark(first, i * p, applied)
        for d in policy.decide(view.now, view):
            # KEDA's fallback is the one upstream rule that moves a target while its triggers fail (to
            # fallback.replicas, llmd-queue-guard's 1): allowed only when the decision says it is falling back
            in_fallback = any(r.values.get("fallback") for r in d.reasons)
            assert d.desired_replicas >= d.current_replicas or in_fallback, (name, view.now, d.to_dict())
            applied[d.variant] = d.desired_replicas
