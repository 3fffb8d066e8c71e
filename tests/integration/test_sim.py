"""The simulated cluster end to end: lifecycle, grace, faults, accounting, determinism."""
from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from scalearena.controllers.base import Decision, Reason
from scalearena.harness.config.scenario import scenario_from_data
from scalearena.harness.sim.backend import SimBackend, Simulation
from scalearena.reports.results import RunWriter
from scalearena.workloads.base import RequestSpec


def scenario(**over: Any) -> Any:
    variant = {
        "name": "va", "model": "m", "gpu": "H100-SXM", "min_replicas": 1, "max_replicas": 4,
        "startup_s": 20, "termination_grace_s": 10,
        "engine": {"max_num_seqs": 8, "kv_cache_blocks": 1024, "block_size": 16,
                   "latency": {"kind": "constant", "ttft_ms": 100, "itl_ms": 10}},
    }
    variant.update(over.pop("variant", {}))
    data = {
        "name": "t", "duration_s": 60, "drain_s": 60, "seed": 3,
        "cluster": {"variants": [variant], "warm_start": False},  # these tests time the initial cold start
        "router": {"admission": {"kind": "none"}},
        "workload": {"arrivals": {"kind": "constant", "rate_rps": 1},
                     "input_tokens": {"kind": "fixed", "value": 100}, "output_tokens": {"kind": "fixed", "value": 50}},
        "autoscalers": [{"kind": "static"}],
        "metrics": {"scrape_interval_s": 5, "sample_interval_s": 5},
    }
    data.update(over)
    return scenario_from_data(data, "<test>")


def reqs(times: list[float], out: int = 50, inp: int = 100) -> list[RequestSpec]:
    return [RequestSpec(i, "m", t, inp, out) for i, t in enumerate(times)]


class Scripted:
    """A policy that asks for a fixed sequence of replica counts, one per period."""

    fast_period_s = None

    def __init__(self, wants: list[int], period_s: float = 5.0) -> None:
        self.wants, self.period_s, self.i = list(wants), period_s, 0

    def decide(self, now: float, view: Any) -> list[Decision]:
        v = view.variants[0]
        want = self.wants[min(self.i, len(self.wants) - 1)]
        self.i += 1
        return [Decision(v.name, v.spec_replicas, want, (Reason("scripted", f"want {want}"),))]

    def decide_fast(self, now: float, view: Any) -> list[Decision]:
        return []


def simulate(tmp_path: Path, sc: Any, requests: list[RequestSpec], policy: Any = None) -> tuple[RunWriter, Any]:
    w = RunWriter(tmp_path, {})
    sim = Simulation(sc, sc.autoscalers[0], w, requests, policy=policy)
    sim.run()
    return w, sim


def by_id(w: RunWriter) -> dict[int, Any]:
    return {r.request_id: r for r in w.requests_written()}


def test_cold_start_delays_readiness_exactly_startup_s(tmp_path: Path) -> None:
    # the only pod becomes ready at t = startup_s = 20; a request sent at 5 waits at the gateway and is
    # dispatched at 20: first token 20 + 0.1, end 20.1 + 49 x 0.01 = 20.59
    sc = scenario()
    w, _ = simulate(tmp_path, sc, reqs([5.0]))
    r = by_id(w)[0]
    assert r.status == "ok" and r.pod == "va-0"
    assert r.first_token_s == pytest.approx(20.1)
    assert r.end_s == pytest.approx(20.59)
    assert r.ttft_ms == pytest.approx(15_100)
    assert r.itl_ms == pytest.approx(10.0)


def test_warm_start_initial_replicas_serve_from_t0(tmp_path: Path) -> None:
    # warm_start (the default): the initial pod is ready at t=0, so a request sent at 5 starts at once:
    # first token 5 + 0.1 = 5.1, end 5.1 + 49 x 0.01 = 5.59
    sc = scenario()
    sc = sc.model_copy(update={"cluster": sc.cluster.model_copy(update={"warm_start": True})})
    w, _ = simulate(tmp_path, sc, reqs([5.0]))
    r = by_id(w)[0]
    assert r.first_token_s == pytest.approx(5.1)
    assert r.end_s == pytest.approx(5.59)


def test_termination_grace_kills_long_requests(tmp_path: Path) -> None:
    # 2 pods (ready at 20). Scale to 1 at t=25: the newest ready pod (va-1) terminates; grace 10 s.
    # Requests of 5,000 output tokens take 0.1 + 4999 x 0.01 = 50 s, so whatever va-1 holds at 35 is killed.
    sc = scenario(variant={"min_replicas": 1, "initial_replicas": 2})
    policy = Scripted([2] * 5 + [1])  # decide at 0,5,...,20 -> 2; at 25 -> 1
    w, _ = simulate(tmp_path, sc, reqs([21.0, 21.0, 21.5, 21.5], out=5000), policy)
    recs = by_id(w)
    killed = [r for r in recs.values() if r.status == "killed"]
    assert killed and all(r.pod == "va-1" and r.http_status == 0 for r in killed)
    assert all(r.end_s == pytest.approx(35.0) for r in killed)
    assert all(r.status == "ok" for r in recs.values() if r.pod == "va-0")


def test_pod_crash_fails_in_flight_with_500_and_pod_is_recreated(tmp_path: Path) -> None:
    sc = scenario(faults=[{"kind": "pod_crash", "at_s": 30}])
    w, _ = simulate(tmp_path, sc, reqs([25.0], out=2000))
    r = by_id(w)[0]
    assert (r.status, r.http_status, r.end_s) == ("error", 500, 30.0)
    ts = pd.DataFrame([asdict(x) for x in w.timeseries_written()])
    after = ts[ts.t_s > 30]
    # the replacement starts at 30 and is ready at 50
    assert after[after.t_s < 50].ready_replicas.max() == 0 and after[after.t_s >= 50].ready_replicas.min() == 1


def test_client_timeout(tmp_path: Path) -> None:
    sc = scenario(client={"timeout_s": 5})
    w, _ = simulate(tmp_path, sc, reqs([1.0]))  # pod ready only at 20 -> the client gives up at 6
    r = by_id(w)[0]
    assert (r.status, r.http_status, r.end_s, r.pod) == ("timeout", 0, 6.0, None)


def test_request_beyond_kv_cache_fails_too_long_and_does_not_stall(tmp_path: Path) -> None:
    # 4 blocks x 16 = 64 tokens per pod: request 0 asks 40 + 30 = 70 > 64 -> 400 too_long at 21 s (pod ready at
    # 20); request 1 (40 + 20 = 60) is served right behind it: TTFT 100 ms, 19 more tokens x 10 ms -> e2e 290 ms
    sc = scenario(variant={"engine": {"max_num_seqs": 8, "kv_cache_blocks": 4, "block_size": 16,
                                      "latency": {"kind": "constant", "ttft_ms": 100, "itl_ms": 10}}})
    w, _ = simulate(tmp_path, sc, [RequestSpec(0, "m", 21.0, 40, 30), RequestSpec(1, "m", 21.0, 40, 20)])
    r = by_id(w)
    assert (r[0].status, r[0].http_status, r[0].end_s) == ("too_long", 400, 21.0)
    assert r[1].status == "ok" and r[1].e2e_ms == pytest.approx(290.0)
    assert w.finish()["failures"]["too_long"] == 1


def test_saturated_router_rejects_429(tmp_path: Path) -> None:
    sc = scenario(router={"admission": {"kind": "saturation", "kv_threshold": 0.5, "queue_threshold": 5}})
    # 600-token prompts: 38 blocks each; after 14 requests KV > 0.5 (14 x 38 = 532 blocks > 512)
    w, _ = simulate(tmp_path, sc, reqs([20.0 + 0.1 * i for i in range(30)], out=3000, inp=600))
    assert any(r.status == "rejected" and r.http_status == 429 for r in w.requests_written())


def test_meta_and_gpu_capacity(tmp_path: Path) -> None:
    # capacity 1 GPU of H100: a second replica stays pending
    data_sc = scenario(variant={"initial_replicas": 2})
    sc = scenario_from_data({**data_sc.model_dump(mode="json"),
                             "cluster": {**data_sc.cluster.model_dump(mode="json"), "gpu_capacity": {"H100-SXM": 1}}},
                            "<test>")
    w, _ = simulate(tmp_path, sc, reqs([30.0]))
    assert max(x.ready_replicas for x in w.timeseries_written()) == 1
    assert min(x.pending_replicas for x in w.timeseries_written()) == 1
    v = w.meta["variants"][0]
    assert (w.meta["cluster"], v["tdp_w"], v["gpus_per_replica"]) == ("sim", 700.0, 1)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(wants=st.lists(st.integers(min_value=0, max_value=8), min_size=1, max_size=15),
       times=st.lists(st.floats(min_value=0, max_value=59.9), min_size=0, max_size=40),
       out=st.integers(min_value=1, max_value=3000))
def test_every_request_accounted_once_and_replicas_within_bounds(tmp_path: Path, wants, times, out) -> None:
    sc = scenario(variant={"min_replicas": 1, "max_replicas": 3, "startup_s": 3, "termination_grace_s": 2},
                  client={"timeout_s": 30})
    w, sim = simulate(tmp_path, sc, reqs(sorted(times), out=out), Scripted(wants, period_s=4.0))
    ids = [r.request_id for r in w.requests_written()]
    assert sorted(ids) == list(range(len(times)))  # exactly once each
    assert all(1 <= x.spec_replicas <= 3 for x in w.timeseries_written())
    assert all(x.ready_replicas + x.pending_replicas <= 3 for x in w.timeseries_written())
    assert all(r.status in ("ok", "rejected", "killed", "timeout", "error") for r in w.requests_written())


def test_same_seed_gives_identical_summary(tmp_path: Path) -> None:
    sc = scenario_from_data({**scenario().model_dump(mode="json"), "autoscalers": [{"kind": "wva"}],
                             "workload": {"arrivals": {"kind": "poisson", "rate_rps": 3},
                                          "input_tokens": {"kind": "uniform", "min": 100, "max": 4000},
                                          "output_tokens": {"kind": "uniform", "min": 10, "max": 800}}},
                            "<test>")
    blobs = []
    for i in range(2):
        d = tmp_path / str(i)
        w = RunWriter(d, {})
        SimBackend().run(sc, sc.autoscalers[0], w, None)
        w.finish()
        s = json.loads((d / "summary.json").read_text())
        blobs.append((d / "summary.json").read_bytes())
        assert s["requests_total"] > 100
    assert blobs[0] == blobs[1]


class SampleAges(Scripted):
    """Records how old the newest scraped sample is at each decision."""

    def __init__(self) -> None:
        super().__init__([1], period_s=15.0)
        self.ages: list[tuple[float, float]] = []

    def decide(self, now: float, view: Any) -> list[Decision]:
        pods = view.variants[0].pods
        if pods:
            self.ages.append((now, now - pods[0].ts))
        return super().decide(now, view)


def test_scrapes_run_on_their_own_phase(tmp_path: Path) -> None:
    # scrape interval 15 s = decision period 15 s. Were both loops aligned at t=0, every decision would see a
    # sample of age 0 and the scrape interval would not matter. With a phase p in (0, 15] the scrapes fall at
    # 0, p, p+15, ...; from t=15 on every decision sees the same age 15 - p (mod 15), in [0, 15).
    sc = scenario(metrics={"scrape_interval_s": 15, "sample_interval_s": 5},
                  cluster={"variants": [{**scenario().cluster.variants[0].model_dump(mode="json")}]})
    policy = SampleAges()
    _, sim = simulate(tmp_path, sc, reqs([1.0]), policy)
    later = {round(age, 9) for t, age in policy.ages if t >= 15}
    assert len(later) == 1
    (age,) = later
    assert 0 < age < 15
    assert age == pytest.approx((15 - sim._scrape_phase) % 15)


def test_sim_scrapes_native_series_that_promql_reads(tmp_path: Path) -> None:
    """The simulator's scrapes carry the catalogue's series: KSM for the Deployment, vLLM per ready pod."""
    _, sim = simulate(tmp_path, scenario(), [])
    m = sim.metrics
    ksm = '{namespace="scalearena",deployment="va"}'
    # one replica, cold start 20 s: before it unavailable = spec - ready = 1 - 0, after it 0 (scrapes every 5 s)
    assert m.query(f"kube_deployment_status_replicas_unavailable{ksm}", at=15.0)[0]["value"][1] == "1"
    assert m.query(f"kube_deployment_status_replicas_unavailable{ksm}", at=30.0)[0]["value"][1] == "0"
    assert m.query('count(vllm:num_requests_running{variant="va",model_name="m"})', at=15.0) == []
    assert m.query('count(vllm:num_requests_running{variant="va",model_name="m"})', at=30.0)[0]["value"][1] == "1"


def test_prefix_cache_counters_reach_promql(tmp_path: Path) -> None:
    # one pod, caching on, prefill 1 ms per token: 3 requests of 1000 tokens with the same first unit (512
    # tokens = 32 blocks) one after another -> queries 3 x 1000, hits 0 + 512 + 512; the scrape at 60 s
    # exports them as vllm:prefix_cache_{queries,hits}_total
    sc = scenario(variant={"engine": {"max_num_seqs": 8, "kv_cache_blocks": 1024, "block_size": 16,
                                      "enable_prefix_caching": True,
                                      "latency": {"kind": "constant", "prefill_time_per_token_ms": 1.0,
                                                  "itl_ms": 1}}})
    reqs_ = [RequestSpec(i, "m", 25.0 + 5 * i, 1000, 5, hash_ids=(7, 100 + i)) for i in range(3)]
    w, sim = simulate(tmp_path, sc, reqs_)
    r = by_id(w)
    assert [round(r[i].ttft_ms) for i in range(3)] == [1000, 488, 488]
    q = sim.metrics.query("sum(vllm:prefix_cache_queries_total)", at=60.0)
    h = sim.metrics.query("sum(vllm:prefix_cache_hits_total)", at=60.0)
    assert float(q[0]["value"][1]) == 3000.0 and float(h[0]["value"][1]) == 1024.0
