"""Prefill/decode disaggregation in the simulator (harness/sim/handoff.py), worked by hand.

The set-up of every case unless it says otherwise: model ``m`` with one prefill pod (constant
latency: prefill-overhead 10 ms + 0.01 ms per prompt token, 1024 blocks of 16) and one decode pod
(ITL 20 ms, TTFT 50 ms when it prefills itself); the KV link moves 8 Mbit/s = 1e6 B/s with 5 ms per
transfer and 1000 B of KV per token. A 1000-token prompt is 63 blocks = 1008 tokens = 1,008,000 B
of KV: 1.008 s on the link.
"""
from __future__ import annotations

import copy
from typing import Any

import pytest

from scalearena.controllers.registry import REGISTRY
from scalearena.harness.config.scenario import scenario_from_data
from scalearena.harness.sim.loop import Simulation
from scalearena.workloads.base import RequestSpec

BASE: dict[str, Any] = {
    "name": "pd", "duration_s": 10, "drain_s": 30, "seed": 3,
    "cluster": {
        "warm_start": True,
        "kv_transfer": {"bandwidth_gbps": 0.008, "latency_ms": 5, "kv_bytes_per_token": 1000, "abort_timeout_s": 10},
        "variants": [
            {"name": "m-prefill", "model": "m", "gpu": "H100-SXM", "role": "prefill", "min_replicas": 1,
             "max_replicas": 1, "startup_s": 60,
             "engine": {"kv_cache_blocks": 1024, "latency": {"kind": "constant", "prefill_overhead_ms": 10,
                                                             "prefill_time_per_token_ms": 0.01}}},
            {"name": "m-decode", "model": "m", "gpu": "H200", "role": "decode", "min_replicas": 1,
             "max_replicas": 1, "startup_s": 60,
             "engine": {"kv_cache_blocks": 1024, "latency": {"kind": "constant", "ttft_ms": 50, "itl_ms": 20}}},
        ],
    },
    "workload": {"arrivals": {"kind": "poisson", "rate_rps": 1}, "input_tokens": {"kind": "fixed", "value": 10},
                 "output_tokens": {"kind": "fixed", "value": 10}},
    "autoscalers": [{"kind": "static", "replicas": 1}],
    "metrics": {"scrape_interval_s": 15, "sample_interval_s": 5},
}


class Writer:
    """The RunWriter surface the simulator uses, in memory."""

    def __init__(self) -> None:
        self.meta: dict[str, Any] = {}
        self.requests: list[Any] = []
        self.timeseries: list[Any] = []

    def add_request(self, rec: Any) -> None:
        self.requests.append(rec)

    def add_timeseries(self, rec: Any) -> None:
        self.timeseries.append(rec)

    def add_decision(self, *a: Any, **k: Any) -> None:
        pass

    def add_event(self, t_s: float, kind: str, **details: Any) -> None:
        self.meta.setdefault("events", []).append((t_s, kind))

    def add_pod(self, row: dict[str, Any]) -> None:
        self.meta.setdefault("pods", []).append(row)

    def checkpoint(self, force: bool = False) -> None:
        pass


def scenario(**edits: Any) -> Any:
    d = copy.deepcopy(BASE)
    for key, value in edits.items():
        node = d
        *path, last = key.split(".")
        for k in path:
            node = node[int(k)] if isinstance(node, list) else node[k]
        node[last] = value
    return scenario_from_data(d, "pd.yaml")


def run(sc: Any, reqs: list[RequestSpec]) -> tuple[Simulation, dict[int, Any]]:
    cfg = sc.autoscalers[0]
    w = Writer()
    sim = Simulation(sc, cfg, w, reqs, policy=REGISTRY.build(cfg))
    sim.run()
    assert sorted(r.request_id for r in w.requests) == sorted(r.request_id for r in reqs)  # each exactly once
    return sim, {r.request_id: r for r in w.requests}


def req(i: int, t: float, prompt: int = 1000, out: int = 100) -> RequestSpec:
    return RequestSpec(i, "m", t, prompt, out)


def test_one_request_is_prefill_plus_transfer_plus_decode() -> None:
    # prefill 10 + 1000 x 0.01 = 20 ms; transfer 1,008,000 B / 1e6 B/s = 1.008 s + 5 ms; the decode pod's
    # first token comes with the KV (constant model) -> TTFT 0.020 + 1.008 + 0.005 = 1.033 s;
    # then 99 tokens x 20 ms = 1.98 s -> e2e 3.013 s
    _, rec = run(scenario(), [req(0, 0.0)])
    r = rec[0]
    assert (r.status, r.output_tokens, r.pod, r.prefill_pod, r.variant) == ("ok", 100, "m-decode-0", "m-prefill-0",
                                                                            "m-decode")
    assert r.ttft_ms == pytest.approx(1033.0)
    assert r.e2e_ms == pytest.approx(3013.0)
    assert r.itl_ms == pytest.approx(20.0)


def test_transfers_out_of_one_prefill_pod_queue_for_its_link() -> None:
    # r1 (at 1 ms) is prefilled by 21 ms but the link sends r0's KV until 0.020 + 1.008 = 1.028 s:
    # r1's goes 1.028 -> 2.036, + 5 ms -> first token 2.041, TTFT 2.040 s
    _, rec = run(scenario(), [req(0, 0.0), req(1, 0.001)])
    assert rec[0].ttft_ms == pytest.approx(1033.0)
    assert rec[1].ttft_ms == pytest.approx(2040.0)


def test_the_decode_pod_needs_kv_room_and_the_prefill_pod_keeps_the_kv_meanwhile() -> None:
    # decode cache of 100 blocks; a request grows to 1000 + 100 = 1100 tokens = 69 blocks and a second
    # prompt needs 63: r1 waits in the decode queue until r0 ends at 3.013 s, then its KV moves:
    # 3.013 + 1.008 + 0.005 = 4.026 -> TTFT 4.025 s. Meanwhile the prefill pod keeps r1's 63 blocks:
    # 63 / 1024 of its KV at the 2.5 s sample, none at 5 s
    sc = scenario(**{"cluster.variants.1.engine.kv_cache_blocks": 100, "metrics.sample_interval_s": 2.5})
    sim, rec = run(sc, [req(0, 0.0), req(1, 0.001)])
    assert rec[1].ttft_ms == pytest.approx(4025.0)
    kv = {(round(x.t_s, 3), x.variant): x.kv_usage_mean for x in sim.writer.timeseries}
    assert kv[(2.5, "m-prefill")] == pytest.approx(63 / 1024)
    assert kv[(5.0, "m-prefill")] == 0.0


def test_prefill_pod_crash_while_transferring_fails_the_request_once_and_the_pool_falls_back_to_decode_only() -> None:
    # r0's KV is on the link 0.020 .. 1.033 when the prefill pod crashes at 0.5: r0 fails (error 500, its
    # decode pod drops it); r1 at 1.0 finds no ready prefill pod and is served by the decode pod alone:
    # TTFT 50 ms, no prefill pod
    sc = scenario(faults=[{"kind": "pod_crash", "at_s": 0.5, "variant": "m-prefill"}])
    sim, rec = run(sc, [req(0, 0.0), req(1, 1.0)])
    assert (rec[0].status, rec[0].http_status, rec[0].end_s) == ("error", 500, pytest.approx(0.5))
    assert (rec[1].status, rec[1].prefill_pod, rec[1].ttft_ms) == ("ok", None, pytest.approx(50.0))
    decode = sim.dep("m-decode").pods[0]
    assert decode.inflight == {} and decode.engine.kv_usage(sim.t) == 0.0


def test_decode_pod_crash_strands_the_kept_kv_until_the_abort_timeout() -> None:
    # r0 prefilled by 0.020 (KV kept), transfer until 1.033; the decode pod crashes at 0.5: r0 fails
    # (error 500) and nobody will read or release its KV: the prefill pod keeps 63 blocks until its
    # abort timeout, 0.020 + 10 = 10.020 s (samples every 5 s: kept at 5, freed at 15)
    sc = scenario(faults=[{"kind": "pod_crash", "at_s": 0.5, "variant": "m-decode"}], duration_s=20)
    sim, rec = run(sc, [req(0, 0.0)])
    assert (rec[0].status, rec[0].http_status) == ("error", 500)
    kv = {(round(x.t_s, 3), x.variant): x.kv_usage_mean for x in sim.writer.timeseries}
    assert kv[(5.0, "m-prefill")] == pytest.approx(63 / 1024)
    assert kv[(15.0, "m-prefill")] == 0.0


def test_client_timeout_during_the_transfer_frees_both_pods_at_once() -> None:
    # client timeout 0.5 s, KV on the link until 1.033: r0 times out at 0.5; the decode pod's abort
    # tells the prefill pod, which frees the KV at once (0 at the 5 s sample, not 10 s later)
    sc = scenario(client={"timeout_s": 0.5})
    sim, rec = run(sc, [req(0, 0.0)])
    assert (rec[0].status, rec[0].end_s, rec[0].prefill_pod) == ("timeout", pytest.approx(0.5), "m-prefill-0")
    kv = {(round(x.t_s, 3), x.variant): x.kv_usage_mean for x in sim.writer.timeseries}
    assert kv[(5.0, "m-prefill")] == 0.0 and kv[(5.0, "m-decode")] == 0.0


def test_kv_expired_before_the_decode_pod_reads_it_is_an_error() -> None:
    # abort timeout 1 s; decode cache 100 blocks: r1's KV is kept from 0.021 but the decode pod admits
    # r1 only when r0 ends at 3.013 s; by then the prefill pod freed it (1.021 s): the read fails, 500
    sc = scenario(**{"cluster.variants.1.engine.kv_cache_blocks": 100, "cluster.kv_transfer.abort_timeout_s": 1})
    _, rec = run(sc, [req(0, 0.0), req(1, 0.001)])
    assert rec[0].status == "ok"
    assert (rec[1].status, rec[1].http_status, rec[1].end_s) == ("error", 500, pytest.approx(3.013))


def test_prefix_based_decider_keeps_short_prompts_on_the_decode_pod() -> None:
    # nonCachedTokens 2000: the 1000-token prompt is decode-only (TTFT 50 ms), the 4000-token one goes
    # through the prefill pod (10 + 40 = 50 ms prefill; 250 blocks x 16 x 1000 B = 4 s on the link)
    sc = scenario(router={"disaggregation": {"non_cached_tokens": 2000}})
    _, rec = run(sc, [req(0, 0.0, 1000), req(1, 10.0, 4000)])
    assert (rec[0].prefill_pod, rec[0].ttft_ms) == (None, pytest.approx(50.0))
    assert (rec[1].prefill_pod, rec[1].ttft_ms) == ("m-prefill-0", pytest.approx(50.0 + 4000.0 + 5.0))


def test_epp_inflight_tokens_per_endpoint_until_the_first_token() -> None:
    # the EPP books the 1000 uncached prompt tokens on the decode and the prefill endpoint until the first
    # token (1.033 s): every scrape before reads 1000 on each, every one after 0
    sim, _ = run(scenario(**{"metrics.scrape_interval_s": 0.5}), [req(0, 0.0)])
    q = sim.metrics.query
    pre = 'llm_d_epp_inflight_tokens{producer_name="inflight-load-producer",endpoint_name=~".*prefill.*"}'
    dec = 'llm_d_epp_inflight_tokens{endpoint_name=~".*decode.*"}'
    assert [(r["metric"]["endpoint_name"], r["value"][1]) for r in q(pre, at=1.0)] == [("m-prefill-0", "1000")]
    assert [r["value"][1] for r in q(dec, at=1.0)] == ["1000"]
    assert [r["value"][1] for r in q(pre, at=2.0)] == ["0"]
    kv = q('sum(vllm:kv_cache_usage_perc{pod=~".*prefill.*"})', at=0.99)
    assert float(kv[0]["value"][1]) == pytest.approx(63 / 1024)  # the kept KV, during the transfer


def test_pods_of_a_role_variant_carry_the_role_in_their_names() -> None:
    sc = scenario(**{"cluster.variants.0.name": "m-p", "cluster.variants.1.name": "m-d"})
    _, rec = run(sc, [req(0, 0.0)])
    assert (rec[0].pod, rec[0].prefill_pod) == ("m-d-decode-0", "m-p-prefill-0")
