"""Accounting invariants of prefill/decode disaggregation under random load, scaling and faults.

Whatever happens to a P/D request (either pod killed by a scale-down or a crash, mid-prefill,
while its KV is kept or on the link; the client giving up; KV expiring; the decode queue full),
it ends in exactly one record, no pod keeps it in flight, and the router's in-flight tokens all
come back.
"""
from __future__ import annotations

import copy
from typing import ClassVar

from hypothesis import HealthCheck, given, settings, strategies as st

from scalearena.contracts.records import STATUSES
from scalearena.controllers.base import ClusterView, Decision, Reason
from scalearena.harness.config.scenario import scenario_from_data
from scalearena.harness.sim.loop import Simulation
from scalearena.workloads.base import RequestSpec

from .test_pd_sim import BASE, Writer


class Scripted:
    """A policy that sets each variant's replicas from a schedule [(from_s, replicas), ...]."""

    kind: ClassVar[str] = "scripted"
    fast_period_s = None
    period_s = 0.5

    def __init__(self, plan: dict[str, list[tuple[float, int]]]) -> None:
        self.plan = plan

    def decide(self, now: float, view: ClusterView) -> list[Decision]:
        out = []
        for v in view.variants:
            want = v.spec_replicas
            for t, n in self.plan.get(v.name, []):
                if now >= t:
                    want = n
            out.append(Decision(v.name, v.spec_replicas, want, (Reason("scripted", f"{want}"),)))
        return out

    def decide_fast(self, now: float, view: ClusterView) -> list[Decision]:
        return []


steps = st.lists(st.tuples(st.floats(0, 6), st.integers(0, 3)), max_size=3).map(sorted)
requests = st.lists(st.tuples(st.floats(0, 6), st.integers(1, 2500), st.integers(1, 60)), min_size=1, max_size=14)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(reqs=requests, p_plan=steps, d_plan=steps,
       crashes=st.lists(st.tuples(st.floats(0, 6), st.sampled_from(["m-prefill", "m-decode"])), max_size=3),
       timeout=st.sampled_from([0.3, 2.0, 120.0]), gbps=st.sampled_from([0.004, 0.08, 400.0]),
       abort=st.sampled_from([0.5, 480.0]), d_blocks=st.sampled_from([160, 400, 1024]),
       grace=st.sampled_from([0.0, 1.0, 30.0]), threshold=st.sampled_from([0, 800]),
       queue=st.sampled_from([None, 1]))
def test_every_pd_request_is_accounted_once(reqs, p_plan, d_plan, crashes, timeout, gbps, abort, d_blocks, grace,
                                            threshold, queue) -> None:
    d = copy.deepcopy(BASE)
    d["cluster"]["kv_transfer"].update(bandwidth_gbps=gbps, abort_timeout_s=abort)
    for v in d["cluster"]["variants"]:
        v.update(min_replicas=0, max_replicas=3, initial_replicas=1, startup_s=1.0, termination_grace_s=grace)
        v["engine"]["max_waiting_queue"] = queue
    d["cluster"]["variants"][1]["engine"]["kv_cache_blocks"] = d_blocks
    d["client"] = {"timeout_s": timeout}
    d["router"] = {"disaggregation": {"non_cached_tokens": threshold}}
    d["faults"] = [{"kind": "pod_crash", "at_s": t, "variant": name} for t, name in crashes]
    d["duration_s"], d["drain_s"] = 7, 5
    sc = scenario_from_data(d, "pd.yaml")
    specs = [RequestSpec(i, "m", t, n_in, n_out) for i, (t, n_in, n_out) in enumerate(sorted(reqs))]
    w = Writer()
    sim = Simulation(sc, sc.autoscalers[0], w, specs, policy=Scripted({"m-prefill": p_plan, "m-decode": d_plan}))
    sim.run()

    assert sorted(r.request_id for r in w.requests) == list(range(len(specs)))  # each exactly once
    end = sim.t
    for r in w.requests:
        assert r.status in STATUSES
        if r.status == "ok":
            assert r.output_tokens == r.requested_output_tokens and r.first_token_s is not None
            assert r.arrival_s <= r.first_token_s <= r.end_s
            if r.prefill_pod is not None:  # through a KV transfer: at least its fixed latency
                assert r.first_token_s - r.arrival_s >= 0.005 - 1e-9
    status = {r.request_id: r for r in w.requests}
    for dep in sim.deps:
        for pod in dep.pods:
            assert pod.routed.inflight_tokens == 0  # every booking released
            for rid in pod.inflight:  # only what the run's end cut off is still listed
                assert status[rid].status == "timeout" and status[rid].end_s == end
