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
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scalearena.controllers.base import ArrivalForecast, ClusterView, Decision, PodMetrics, VariantView
from scalearena.controllers.registry import REGISTRY
from tests.unit.viewkit import FakeMetrics

NAMES = REGISTRY.names()
ENGINE = {"kv_cache_blocks": 1024, "block_size": 16, "max_num_seqs": 64,
          "latency": {"kind": "constant", "ttft_ms": 100, "itl_ms": 10}}


def build(name: str):
    return REGISTRY.build(REGISTRY.default_config(name))


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
def view_sequences(draw, period_s: float) -> list[ClusterView]:
    sks = draw(skeletons())
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
    policy = build(name)
    for view in data.draw(view_sequences(policy.period_s)):
        check(view, policy.decide(view.now, view))


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_deterministic(name, data):
    views = data.draw(view_sequences(build(name).period_s))
    assert as_json(run(build(name), views)) == as_json(run(build(name), views))


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
    policy = build(name)
    p = policy.period_s
    first = data.draw(cluster_views(data.draw(skeletons()), 0.0, metrics_available=True))
    applied = {d.variant: d.desired_replicas for d in policy.decide(0.0, first)}
    for i in range(1, max(1, min(40, int(1200 / p))) + 1):  # up to a 20-minute outage
        view = dark(first, i * p, applied)
        for d in policy.decide(view.now, view):
            assert d.desired_replicas >= d.current_replicas, (name, view.now, d.to_dict())
            applied[d.variant] = d.desired_replicas
