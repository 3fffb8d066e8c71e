"""Oracle on a constant-rate forecast: capacity by hand, cold-start lead, cheapest first."""
from __future__ import annotations

import math

import pytest
from hypothesis import given, settings, strategies as st
from pydantic import ValidationError

from scalearena.controllers.base import ArrivalForecast
from scalearena.controllers.oracle import Oracle, OracleConfig
from scalearena.controllers.oracle_capacity import slot_capacity
from tests.unit.viewkit import variant, view

ENGINE = {"kv_cache_blocks": 1024, "block_size": 16, "max_num_seqs": 256,
          "latency": {"kind": "constant", "ttft_ms": 100, "itl_ms": 10}}


def constant_forecast(start: float, end: float, rps: float, i: int = 1000, o: int = 1000) -> ArrivalForecast:
    n = round((end - start) * rps)
    return ArrivalForecast("m", tuple(start + k / rps for k in range(n)), (i,) * n, (o,) * n)


def test_slot_capacity_by_hand():
    # a request holds ceil((1000 + 1000) / 16) = 125 blocks; floor(0.8 x 1024 / 125) = floor(6.55) = 6 slots
    # S = 100 ms + 999 x 10 ms = 10.09 s; one replica serves 6 / 10.09 = 0.5946 req/s
    cap = slot_capacity(ENGINE, [1000], [1000], 0.8, 100, 20)
    assert (cap.slots, cap.kv_slots) == (6, 6)
    assert cap.service_s == pytest.approx(10.09)
    assert cap.rate_rps == pytest.approx(6 / 10.09)



def test_slot_capacity_per_token_prefill_and_load_factor():
    # no fixed TTFT: prefill 50 ms + 0.1 ms per prompt token. Blocks: ceil(1100/16) = 69, ceil(700/16) = 44,
    # mean 56.5; floor(0.8 x 1024 / 56.5) = floor(14.5) = 14 slots. Load factor k = 1 + (3 - 1) x 13 / 255
    # = 1.10196. Services: (50 + 100 x 0.1 + 999 x 10) x k = 10,050 x k = 11,074.7 ms and
    # (50 + 600 x 0.1 + 99 x 10) x k = 1,100 x k = 1,212.2 ms; mean 6.1434 s
    engine = {**ENGINE, "latency": {"kind": "constant", "prefill_overhead_ms": 50, "prefill_time_per_token_ms": 0.1,
                                    "itl_ms": 10, "time_factor_under_load": 3.0}}
    cap = slot_capacity(engine, [100, 600], [1000, 100], 0.8, 100, 20)
    assert (cap.slots, cap.kv_slots) == (14, 14)
    assert cap.service_s == pytest.approx((10050 + 1100) * (1 + 2 * 13 / 255) / 2 / 1000)
    assert cap.service_s == pytest.approx(6.1434, abs=1e-4)

class ToyRoofline:
    """A step time linear in every argument: enough to check the roofline sum term by term."""

    def step_s(self, prefill_tokens: int, prefill_pairs: float, n_decoding: int, ctx_tokens: float) -> float:
        return 1e-3 + prefill_tokens * 1e-5 + prefill_pairs * 3e-9 + n_decoding * 1e-4 + ctx_tokens * 7e-8


def per_request_service(engine: dict, ins: list[int], outs: list[int], slots: int) -> float:
    """The summed service seconds as one expression per request, added in order by ``sum`` (the form
    slot_capacity had before it computed a window's terms with numpy): the fast path must give the
    very same float, since the oracle plan feeds summary.json byte for byte."""
    lat, pairs = engine.get("latency") or {}, list(zip(ins, outs, strict=True))
    if lat.get("kind") == "roofline":
        # every request: its prompt's mixed step in full, and the o - 1 decode tokens the slots - 1 other
        # prompts' mixed steps do not give it, at 1/slots of a full decode step each
        rf, ctx = ToyRoofline(), sum(i + o / 2 for i, o in pairs) / len(ins)
        decode = rf.step_s(0, 0.0, slots, slots * ctx)
        work = sum(rf.step_s(i, i * i / 2, slots - 1, (slots - 1) * ctx) + max(0, o - slots) * decode / slots
                   for i, o in pairs)
        return slots / (len(ins) / work) * len(ins)  # service_s = slots / rate, times n (divided back below)
    if lat.get("kind") != "constant":
        return sum((100 + max(0, o - 1) * 20) / 1000.0 for o in outs)  # default_ttft_ms 100, default_itl_ms 20
    f = float(lat.get("time_factor_under_load", 1.0))
    k = 1.0 + (f - 1.0) * (slots - 1) / (engine["max_num_seqs"] - 1)
    if lat.get("ttft_ms", 0) > 0:
        return sum((lat["ttft_ms"] + max(0, o - 1) * lat["itl_ms"]) * k / 1000.0 for o in outs)
    return sum((lat["prefill_overhead_ms"] + i * lat["prefill_time_per_token_ms"] + max(0, o - 1) * lat["itl_ms"])
               * k / 1000.0 for i, o in pairs)


LATENCIES = [{"kind": "constant", "ttft_ms": 100.3, "itl_ms": 10.7, "time_factor_under_load": 2.5},
             {"kind": "constant", "prefill_overhead_ms": 50.1, "prefill_time_per_token_ms": 0.013, "itl_ms": 9.9,
              "time_factor_under_load": 3.0},
             {"kind": "roofline"}, {}]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 9000), st.integers(1, 3000)), min_size=1, max_size=400),
       st.sampled_from(LATENCIES))
def test_a_windows_capacity_is_the_per_request_sum_exactly(reqs: list[tuple[int, int]], lat: dict) -> None:
    ins, outs = [i for i, _ in reqs], [o for _, o in reqs]
    engine = {**ENGINE, "latency": lat}
    cap = slot_capacity(engine, ins, outs, 0.8, 100, 20, ToyRoofline())
    blocks = sum(math.ceil((i + o) / 16) for i, o in reqs) / len(reqs)
    assert cap.kv_slots == max(1, math.floor(0.8 * 1024 / blocks + 1e-9))
    want = per_request_service(engine, ins, outs, cap.slots) / len(reqs)
    assert cap.service_s == (pytest.approx(want, rel=1e-12) if lat.get("kind") == "roofline" else max(want, 1e-6))


def test_an_unordered_forecast_is_read_in_arrival_order_ties_in_schedule_order():
    # arrivals 40, 5, 40, 70 s: window [30, 60) holds the first and third (1000 and 3000 prompt tokens);
    # blocks ceil(1200/16) = 75 and ceil(3200/16) = 200, mean 137.5; floor(0.8 x 1024 / 137.5) = floor(5.96) = 5
    # slots; S = 100 ms + 199 x 10 ms = 2.09 s for both (200 output tokens); rate 2 / 30 s = 0.0667 req/s
    # needs ceil(0.0667 / (5 / 2.09)) = ceil(0.0279) = 1 replica; window [0, 30) holds one, [60, 90) one
    fc = ArrivalForecast("m", (40.0, 5.0, 40.0, 70.0), (1000, 10, 3000, 10), (200, 200, 200, 200))
    o = Oracle(OracleConfig())
    arr, ins, outs = o._schedule(fc)
    assert (arr.tolist(), ins.tolist(), outs.tolist()) == ([5.0, 40.0, 40.0, 70.0], [10, 1000, 3000, 10], [200] * 4)
    alloc, rate = o._allocate("m", fc, [variant(engine=ENGINE)], 1)
    n, cap = alloc["v"]
    assert (n, cap.slots, rate) == (1, 5, 2 / 30)
    assert cap.service_s == pytest.approx(2.09)


def test_constant_rate_gives_littles_law_replicas():
    # 2 req/s x 10.09 s = 20.18 in flight / 6 slots = 3.36 -> 4 replicas
    fc = constant_forecast(0, 600, 2.0)
    o = Oracle(OracleConfig())
    d = o.decide(100, view(100, variant(spec=1, engine=ENGINE, startup_s=60), forecast=[fc]))[0]
    assert d.desired_replicas == 4
    assert d.reasons[0].values["arrival_rate_rps"] == pytest.approx(2.0)  # 60 arrivals per 30 s bucket


def test_cold_start_lead_time():
    # demand from t=300; startup 60 s + period 10 s: horizon [t, t + 70]
    fc = constant_forecast(300, 600, 2.0)
    o = Oracle(OracleConfig())

    def at(t: float) -> int:
        v = variant(spec=1, engine=ENGINE, startup_s=60, min_replicas=0)
        return o.decide(t, view(t, v, forecast=[fc]))[0].desired_replicas

    assert at(220) == 0  # [220, 290] touches buckets [210,240) [240,270) [270,300): no arrivals
    assert at(230) == 4  # [230, 300] reaches bucket [300, 330): 4 replicas, 70 s ahead
    assert at(590) == 4  # the last bucket [570, 600) still in view
    assert at(600) == 0  # nothing arrives from 600 on -> scale to the min (0)


def test_cheapest_variant_first_then_the_next():
    # a100 (cost 1, max 2): 2 replicas serve 2 x 0.5946 = 1.189 req/s; 2 - 1.189 = 0.811 left
    # h100 (cost 2.5, same engine): ceil(0.811 / 0.5946) = ceil(1.36) = 2
    fc = constant_forecast(0, 600, 2.0)
    a = variant("a100", spec=1, engine=ENGINE, startup_s=60, cost=1.0, max_replicas=2)
    h = variant("h100", spec=1, engine=ENGINE, startup_s=60, cost=2.5, min_replicas=0)
    got = {d.variant: d.desired_replicas for d in Oracle(OracleConfig()).decide(100, view(100, a, h, forecast=[fc]))}
    assert got == {"a100": 2, "h100": 2}


def test_no_forecast_holds():
    d = Oracle(OracleConfig()).decide(0, view(0, variant(spec=3)))[0]
    assert (d.desired_replicas, d.reasons[0].rule) == (3, "no_forecast")


@pytest.mark.parametrize("bad", [{"window_s": 0}, {"window_s": 1e-9}, {"window_s": 0.5}, {"kv_target": 1.5}, {"utilization": 0}, {"order": "random"},
                                 {"lookahead": 5}])
def test_config_rejects_out_of_range(bad):
    with pytest.raises(ValidationError):
        OracleConfig(**bad)


def test_a_replica_is_charged_for_every_prompt_it_holds_and_pd_roles_for_their_half() -> None:
    """Issue 28 item 1: the oracle divided a request's prompt by the slots it shares. Worked by hand on the
    toy step model, 4000-token prompts and 96-token outputs, 4000 KV blocks of 16:
    blocks ceil(4096 / 16) = 256, slots floor(0.8 x 4000 / 256) = floor(12.5) = 12; ctx 4000 + 96 / 2 = 4048.
    full decode step D = 1e-3 + 12 x 1e-4 + 12 x 4048 x 7e-8 = 5.60032e-3 s;
    mixed step P = 1e-3 + 4000 x 1e-5 + 4000^2 / 2 x 3e-9 + 11 x 1e-4 + 11 x 4048 x 7e-8 = 0.06921696 s;
    both: per request P + (96 - 12) x D / 12 = 0.06921696 + 7 D = 0.1084192 s -> 9.2235 req/s
      (before: slots / (P + 95 D) = 12 / 0.60124736 = 19.96 req/s, 2.16x too many);
    prefill: the prompt alone 1e-3 + 0.04 + 0.024 = 0.065 s -> 15.385 req/s;
    decode: 12 slots / (95 D = 0.5320304 s) = 22.555 req/s."""
    engine = {"max_num_seqs": 256, "kv_cache_blocks": 4000, "block_size": 16, "latency": {"kind": "roofline"}}
    ins, outs = [4000] * 3, [96] * 3

    def rate(role: str) -> float:
        return slot_capacity(engine, ins, outs, 0.8, 100, 20, ToyRoofline(), role=role).rate_rps

    assert rate("both") == pytest.approx(1 / 0.1084192, rel=1e-9)
    assert rate("prefill") == pytest.approx(1 / 0.065, rel=1e-9)
    assert rate("decode") == pytest.approx(12 / 0.5320304, rel=1e-9)
    cap = slot_capacity(engine, ins, outs, 0.8, 100, 20, ToyRoofline())
    assert cap.slots == 12 and cap.service_s == pytest.approx(12 * 0.1084192, rel=1e-9)  # slots / rate
    # constant latency (no shared compute): prefill keeps TTFT, decode (o - 1) x ITL, both the sum
    const = {**engine, "latency": {"kind": "constant", "ttft_ms": 200, "itl_ms": 10}}
    got = {r: slot_capacity(const, ins, outs, 0.8, 100, 20, role=r).service_s for r in ("both", "prefill", "decode")}
    assert got == pytest.approx({"both": 0.2 + 0.95, "prefill": 0.2, "decode": 0.95})


def test_on_a_pd_pool_the_oracle_bounds_the_static_pool(tmp_path) -> None:
    """The modern suite's pd-prefill-heavy (8192-token prompts, 0.4 -> 1.2 -> 0.4 req/s on prefill H100s and
    decode H200s): the oracle sized the prefill pool as if its replicas also decoded and reached 37.4 %
    attainment at 0.60 GPU-h, under the static 2 prefill + 1 decode pool (100 % at 0.90). Sized per role, it
    must meet the suite's 95 % target at no more GPU-hours than that pool."""
    import json
    from pathlib import Path

    from click.testing import CliRunner

    from scalearena.cli import main

    root = Path(__file__).resolve().parents[3]
    out = tmp_path / "out"
    workload = ("workload=[{arrivals: {kind: stepped, steps: [{duration_s: 300, rate_rps: 0.4}, {duration_s: 300, "
                "rate_rps: 1.2}, {duration_s: 300, rate_rps: 0.4}]}, input_tokens: {kind: fixed, value: 8192}, "
                "output_tokens: {kind: fixed, value: 256}}]")
    r = CliRunner().invoke(main, ["run", str(root / "workloads/scenarios/pd-disaggregated.yaml"), "--out", str(out),
                                  "--set", workload, "--set",
                                  "autoscalers=[{kind: oracle}, {kind: static, per_variant: {qwen-prefill: 2, "
                                  "qwen-decode: 1}}]"])
    assert r.exit_code == 0, r.output
    oracle, static = (json.loads((out / "pd-disaggregated" / a / "summary.json").read_text())
                      for a in ("oracle", "static"))
    assert oracle["slo_attainment"]["both"] >= 0.95
    assert oracle["gpu_hours"] <= static["gpu_hours"]
