"""llm-d EPP flow control (harness/sim/flow_control.py, the router's hold, the simulator's queues).

Semantics from kubernetes-sigs/gateway-api-inference-extension pkg/epp/flowcontrol: strict priority
across bands, round-robin over the flows of a band, FCFS within a flow, capacity -> 429 (rejected
capacity), TTL -> 503 (evicted TTL)."""
from __future__ import annotations

import copy
import math

import pandas as pd
import pytest

from scalearena.harness.config.scenario import RouterSpec
from scalearena.harness.sim.flow_control import FlowQueues
from scalearena.harness.sim.router import RoutedPod, Router
from scalearena.workloads.base import RequestSpec


def test_strict_priority_then_round_robin_then_fcfs() -> None:
    q = FlowQueues(capacity=100)
    # tenant a sends a1..a3, tenant b sends b1, b2 (priority 0); c1 arrives last at priority 1
    for t, name, fid, prio in [(0, "a1", "a", 0), (1, "a2", "a", 0), (2, "a3", "a", 0), (3, "b1", "b", 0),
                               (4, "b2", "b", 0), (5, "c1", "c", 1)]:
        assert q.enqueue(t, name, fid, prio)
    # c1 first (higher band); then a and b take turns, each in its own arrival order
    assert [q.pop() for _ in range(6)] == ["c1", "a1", "b1", "a2", "b2", "a3"]
    assert q.pop() is None and len(q) == 0


def test_capacity_and_removal() -> None:
    q = FlowQueues(capacity=2)
    assert q.enqueue(0, "x") and q.enqueue(0, "y")
    assert not q.enqueue(0, "z")  # full: the caller answers 429
    assert q.remove("x") and not q.remove("x")
    assert q.enqueue(1, "z") and [q.pop(), q.pop()] == ["y", "z"]


def test_ttl_evicts_the_oldest_heads() -> None:
    q = FlowQueues(capacity=10, ttl_s=5.0)
    q.enqueue(0.0, "old", "a")
    q.enqueue(3.0, "young", "a")
    q.enqueue(1.0, "other", "b")
    assert q.next_expiry() == 5.0  # 0 + 5
    assert q.expired(5.5) == ["old"]  # 5.5 - 0 >= 5; "other" (1.0) has 4.5 s, "young" 2.5 s
    assert q.next_expiry() == 6.0 and len(q) == 2
    assert sorted(q.expired(8.0)) == ["other", "young"]
    assert FlowQueues(10).next_expiry() == math.inf  # no TTL by default (upstream DefaultRequestTTL 0)


class Busy:
    def __init__(self, waiting: int) -> None:
        self.waiting = waiting

    def load(self, now: float) -> tuple[int, int, float]:
        return self.waiting, 1, 0.1


def test_router_holds_while_saturated_and_counts_what_a_slot_sent() -> None:
    r = Router(RouterSpec.model_validate({"admission": {"kind": "flow_control", "queue_threshold": 5}}), seed=0)
    pod = RoutedPod("a", Busy(5))
    r.add_pod("m", pod)
    req = RequestSpec(0, "m", 0.0, 10, 10)
    assert r.route(0.0, req).kind == "hold"  # waiting 5 >= 5
    pod.engine.waiting = 3
    # next slot: waiting 3, so 2 more fit (3 + 1, 3 + 2 reach 5), the third request is held again
    assert [r.route(1.0, req).kind for _ in range(3)] == ["pod", "pod", "hold"]


def test_ttl_expiry_is_due_exactly_when_next_expiry_says() -> None:
    # 0.1 + 0.2 = 0.30000000000000004 in floats while 0.30000000000000004 - 0.1 < 0.2: an expiry test
    # written as now - enqueued >= ttl would keep the item at the time next_expiry names (a busy loop)
    q = FlowQueues(capacity=10, ttl_s=0.2)
    q.enqueue(0.1, "x")
    assert q.expired(q.next_expiry()) == ["x"]


def test_simulator_holds_and_dispatches_by_priority(tmp_path, scenario_dict) -> None:
    """One warm pod, one batch slot, 10-token requests of 0.1 s TTFT + 9 x 0.1 s ITL = 1.0 s each,
    flow control at queue_threshold 1, router refresh 0.05 s. Arrivals: r0, r1, r2 (tenant lo, priority
    0) at 0.00 / 0.01 / 0.02 s, r3 (tenant hi, priority 1) at 0.03 s.
    - r0 is routed at once (waiting 0) and counts as one waiting for the rest of slot [0, 0.05): r1..r3 held;
    - at 0.05 a fresh snapshot (r0 running, none waiting): r3, the higher band, goes and waits in the
      engine; from then on the pod has one waiting until r0 ends at 1.0, when r3 starts and the 1.0
      tick sends r1; at 2.0 r2. First tokens: r0 0.1, r3 1.1, r1 2.1, r2 3.1, so TTFTs 0.1, 1.07, 2.09, 3.08 s."""
    from scalearena.controllers.registry import REGISTRY
    from scalearena.harness.config.scenario import scenario_from_data
    from scalearena.harness.sim.loop import Simulation
    from scalearena.reports.results import RunWriter

    d = scenario_dict
    d["cluster"]["warm_start"] = True
    d["cluster"]["variants"][0].update(min_replicas=1, max_replicas=1)
    d["cluster"]["variants"][0]["engine"].update(max_num_seqs=1, latency={"kind": "constant", "ttft_ms": 100,
                                                                          "itl_ms": 100})
    d["router"] = {"admission": {"kind": "flow_control", "queue_threshold": 1}, "refresh_s": 0.05}
    d["autoscalers"] = [{"kind": "static", "replicas": 1}]
    d["duration_s"] = 10
    sc = scenario_from_data(d, "fc.yaml")
    reqs = [RequestSpec(i, "m", t, 16, 10, tenant=ten, priority=p)
            for i, (t, ten, p) in enumerate([(0.0, "lo", 0), (0.01, "lo", 0), (0.02, "lo", 0), (0.03, "hi", 1)])]
    cfg = sc.autoscalers[0]
    writer = RunWriter(tmp_path / "run", {"scenario": sc.name})
    Simulation(sc, cfg, writer, reqs, policy=REGISTRY.build(cfg)).run()
    writer.finish()
    records = pd.read_parquet(tmp_path / "run" / "requests.parquet")
    ttft = dict(zip(records["request_id"], records["ttft_ms"], strict=True))
    assert set(records["status"]) == {"ok"}
    assert [ttft[i] for i in range(4)] == pytest.approx([100.0, 2090.0, 3080.0, 1070.0], abs=1e-3)


def test_the_default_admission_holds_and_the_time_series_counts_what_it_holds(tmp_path, scenario_dict) -> None:
    """No ``router.admission.kind`` given: flow control, as a current llm-d stack. The one-slot pod of the
    test above (1.0 s per request, queue_threshold 1, refresh 0.05 s); arrivals 0, 0.06, 0.11, 0.16 s,
    each in its own refresh slot: r0 runs, r1 waits in the engine (its slot's snapshot saw none
    waiting), r2 and r3 find the pod saturated (1 waiting). Flow control holds them (the sample at
    0.2 s counts 2 held at the gateway) and all four are served; the paper's ``saturation`` rejects
    r2 and r3 with 429."""
    from scalearena.controllers.registry import REGISTRY
    from scalearena.harness.config.scenario import scenario_from_data
    from scalearena.harness.sim.loop import Simulation
    from scalearena.reports.results import RunWriter

    def run(admission: dict | None) -> tuple[pd.DataFrame, pd.DataFrame]:
        d = copy.deepcopy(scenario_dict)
        d["cluster"]["warm_start"] = True
        d["cluster"]["variants"][0].update(min_replicas=1, max_replicas=1)
        d["cluster"]["variants"][0]["engine"].update(max_num_seqs=1, latency={"kind": "constant", "ttft_ms": 100,
                                                                              "itl_ms": 100})
        d["router"] = {"refresh_s": 0.05, "admission": {"queue_threshold": 1, **(admission or {})}}
        d["autoscalers"] = [{"kind": "static", "replicas": 1}]
        d["duration_s"], d["metrics"] = 10, {"sample_interval_s": 0.04, "scrape_interval_s": 1}
        sc = scenario_from_data(d, "fc.yaml")
        assert sc.router.admission.kind == ("flow_control" if admission is None else admission["kind"])
        reqs = [RequestSpec(i, "m", t, 16, 10) for i, t in enumerate([0.0, 0.06, 0.11, 0.16])]
        cfg = sc.autoscalers[0]
        out = tmp_path / (admission or {}).get("kind", "default")
        writer = RunWriter(out, {"scenario": sc.name})
        Simulation(sc, cfg, writer, reqs, policy=REGISTRY.build(cfg)).run()
        writer.finish()
        return pd.read_parquet(out / "requests.parquet"), pd.read_parquet(out / "timeseries.parquet")

    req, ts = run(None)
    assert list(req.sort_values("request_id")["status"]) == ["ok"] * 4
    assert int(ts.loc[ts["t_s"].round(3) == 0.2, "router_queue"].iloc[0]) == 2
    req, _ = run({"kind": "saturation"})
    assert list(req.sort_values("request_id")["status"]) == ["ok", "ok", "rejected", "rejected"]
