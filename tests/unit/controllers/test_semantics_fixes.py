"""Divergences from upstream fixed under issue 12 item 5, one test each (each failed before its fix).

Upstream sources: kubernetes pkg/controller/podautoscaler/replica_calculator.go (missing pods at a
ratio of exactly 1.0, int32 replica counts), horizontal.go (``normalizeDesiredReplicas`` for an HPA
without ``behavior``, what KEDA generates by default), llm-d workload-variant-autoscaler's limiter
(``gpus_per_replica`` <= 0 counted as 1).
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from scalearena.controllers.hpa.replicas import MAX_INT32, external_average_replicas, pods_metric_replicas
from scalearena.controllers.keda import KEDA, KEDAConfig
from scalearena.controllers.wva.limiter import gpus_in_use, limit
from scalearena.controllers.wva.optimizer import ModelPlan
from tests.unit.viewkit import pods, variant, view


def test_ratio_exactly_one_fills_in_no_missing_pod():
    # 4 ready, samples (3, 3), target 3: ratio 3000m / 3000m = 1.0 exactly. Upstream fills missing pods
    # only when the ratio is < 1 or > 1, so the ratio stays 1.0, inside tolerance -> keep 4.
    # (Filling 0s would give (3,3,0,0) avg 1.5, ratio 0.5 -> ceil(0.5 x 4) = 2: a wrong scale-down.)
    p = pods_metric_replicas(4, [3.0, 3.0], 3.0, missing=2, unready=0, tol_up=0.1, tol_down=0.1)
    assert (p.replicas, p.ratio) == (4, 1.0)


def test_replica_counts_saturate_at_max_int32():
    # AverageValue 0.001 (1m), total 1e7 -> 1e10 milli / 1 = 1e10 replicas > 2^31 - 1 -> 2147483647
    p = external_average_replicas(1, 1e7, 0.001, 0.1, 0.1)
    assert p.replicas == MAX_INT32 == 2147483647
    # Pods metric: 1 pod at 1e7 vs target 0.001 -> ratio 1e10 -> ceil(1e10 x 1) saturates too
    assert pods_metric_replicas(1, [1e7], 0.001, 0, 0, 0.1, 0.1).replicas == MAX_INT32


@pytest.mark.parametrize(("current", "expected"), [(1, 4), (2, 4), (3, 6)])
def test_keda_default_hpa_scales_up_at_most_max_of_twice_and_four(current, expected):
    # No behavior on the ScaledObject -> the generated HPA runs the legacy path: scale-up limit
    # max(2 x current, 4): 1 -> 4, 2 -> 4, 3 -> 6 (the autoscaling/v2 defaults would allow
    # max(current + 4, 2 x current) = 5 / 6 / 7). Gateway queue 300 -> ceil(300 / 3) = 100 wanted.
    k = KEDA(KEDAConfig())
    v = variant(spec=current, pods=pods(*([0] * current)), max_replicas=50)
    d = k.decide(30, view(30, v, router_queue={"m": 300}))[0]
    assert d.desired_replicas == expected
    assert any(r.rule == "rate_limit" for r in d.reasons)


def test_keda_with_behavior_keeps_the_v2_policies():
    # A behavior set on the ScaledObject is rendered into the HPA: autoscaling/v2 defaults fill the rest,
    # scale-up limit max(1 + 4, 1 x 2) = 5
    k = KEDA(KEDAConfig(behavior={"scale_down": {"stabilization_window_seconds": 60}}))
    d = k.decide(30, view(30, variant(spec=1, pods=pods(0), max_replicas=50), router_queue={"m": 300}))[0]
    assert d.desired_replicas == 5


def test_keda_default_hpa_stabilises_scale_down_over_300_s():
    # Legacy stabilizeRecommendation: the highest recommendation over the last 300 s (inclusive).
    k = KEDA(KEDAConfig())
    v4 = variant(spec=4, pods=pods(3, 3, 3, 3))  # 12 / 3 = 4 -> ratio 1.0 -> keep 4 at t=0
    assert k.decide(0, view(0, v4))[0].desired_replicas == 4
    idle = variant(spec=4, pods=pods(0, 0, 0, 0))  # 0 waiting -> recommendation ceil(0 / 3) = 0
    assert k.decide(15, view(15, idle))[0].desired_replicas == 4  # 4 recommended at t=0 is in the window
    assert k.decide(300, view(300, idle))[0].desired_replicas == 4  # t=0 is exactly 300 s old: still in
    assert k.decide(315, view(315, idle))[0].desired_replicas == 1  # gone -> max(0) clamped to min 1


def test_wva_limiter_counts_nonpositive_gpus_per_replica_as_one():
    v = dataclasses.replace(variant(spec=2, ready=2), gpus_per_replica=0)
    assert gpus_in_use(v) == 2  # 2 replicas x 1 GPU, not 2 x 0
    plan = ModelPlan(model="m", action="scale_up", requested=5, candidates=("v",), base={"v": 2},
                     targets={"v": 7}, spare=0.0, reason="test")
    # budget 4 GPUs, 2 in use -> 2 free -> 2 replicas of 1 GPU fit: 2 + 2 = 4, 3 limited
    res = limit([plan], [v], {"*": 4})
    assert res.targets == {"v": 4}
    assert "3 of 5 replicas" in res.limited["v"]


def test_running_not_ready_pod_counts_as_target_on_a_scale_down():
    # 2 ready (0, 0), 2 starting (Running, not Ready, no sample), target 3: ratio 0 < 1.
    # Upstream: the 2 starting pods are missing -> count the target on a scale-down: (0, 0, 3, 3)
    # avg 1.5 -> ratio 0.5 -> ceil(0.5 x 4) = 2. Treated as Pending (the old model) they were ignored:
    # ceil(0 x 2) = 0 -> clamped to min 1.
    from scalearena.controllers.hpa import HPA, HPAConfig
    h = HPA(HPAConfig(metrics=[{"type": "Pods", "metric": "vllm:num_requests_waiting", "average_value": 3}],
                      behavior={"scale_down": {"stabilization_window_seconds": 0}}))
    v = dataclasses.replace(variant(spec=4, pods=pods(0, 0), pending=2), starting=2)
    assert h.decide(0, view(0, v))[0].desired_replicas == 2
    only_pending = variant(spec=4, pods=pods(0, 0), pending=2)  # phase Pending: ignored -> 1
    h2 = HPA(HPAConfig(metrics=[{"type": "Pods", "metric": "vllm:num_requests_waiting", "average_value": 3}],
                       behavior={"scale_down": {"stabilization_window_seconds": 0}}))
    assert h2.decide(0, view(0, only_pending))[0].desired_replicas == 1


def test_sim_reports_starting_pods_as_running_not_ready(tmp_path):
    from scalearena.harness.config.scenario import load_scenario
    from scalearena.harness.sim.backend import Simulation
    from scalearena.harness.sim.engine.cluster import PENDING, READY, STARTING, Pod
    from scalearena.harness.sim.router import RoutedPod
    from scalearena.reports.results import RunWriter

    sc = load_scenario(Path(__file__).resolve().parents[3] / "workloads/scenarios/exp1-staircase.yaml")
    sim = Simulation(sc, sc.autoscalers[0], RunWriter(tmp_path, {}), [])
    d = sim.deps[0]

    def pod(name, state, running_s=0.0):
        p = Pod(name, d.name, d.spec.model, 0.0, None, RoutedPod(name, None), 0, state=state)
        p.running_s = running_s
        return p

    d.replicas = 4
    # "e" is bound but still pulling its image until t=20: ContainerCreating, phase Pending
    d.pods = [pod("a", READY), pod("b", STARTING), pod("c", PENDING), pod("d", STARTING),
              pod("e", STARTING, running_s=20.0)]
    d.standby = [pod("f", READY)]
    sim.clock.t = 10.0
    st = sim.replicas(d.name)
    # pending = b, c, d, e (not Ready); starting = b, d (containers running); standby f is no replica
    assert (st.ready, st.pending, st.starting, st.standby) == (("a",), 4, 2, 1)
