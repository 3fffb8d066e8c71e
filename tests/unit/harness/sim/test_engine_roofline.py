"""Roofline model, catalog and KV-capacity derivation (arithmetic in the comments)."""
from __future__ import annotations

import pytest

from scalearena.contracts.errors import UserError
from scalearena.harness.config.engine_spec import EngineSpec, RooflineLatency
from scalearena.harness.sim.engine.catalog import gpu_spec, model_shape
from scalearena.harness.sim.engine.core import Engine
from scalearena.harness.sim.engine.latency import RooflineModel, RooflineParams, build_latency


def test_llama3_8b_params_and_kv_bytes() -> None:
    m = model_shape("llama3-8b")
    # per layer: qkv 4096*(32+2*8)*128 = 25,165,824; o 32*128*4096 = 16,777,216;
    # mlp 3*4096*14336 = 176,160,768 -> 218,103,808; x32 = 6,979,321,856; + 2 x 128256*4096 (untied)
    assert m.params == 6_979_321_856 + 2 * 525_336_576
    # K and V: 2 x 32 layers x 8 kv heads x 128 x 2 bytes = 131,072 bytes per token
    assert m.kv_bytes_per_token == 131_072


def test_kv_blocks_derived_from_free_memory() -> None:
    # H100 80 GiB x 0.9 = 77,309,411,328 B; weights 8,029,995,008 x 2 = 16,059,990,016 B;
    # activation reserve 2 GiB = 2,147,483,648 -> 59,101,937,664 B free;
    # one block = 16 x 131,072 = 2,097,152 B -> 28,182 blocks
    spec = EngineSpec(latency=RooflineLatency(kind="roofline", model_shape="llama3-8b"))
    _, blocks = build_latency(spec, "H100-SXM")
    assert blocks == 28_182


def test_model_too_big_for_gpu_is_a_user_error() -> None:
    spec = EngineSpec(latency=RooflineLatency(kind="roofline", model_shape="llama3-70b", tp=1))
    with pytest.raises(UserError, match="tp"):
        build_latency(spec, "A100-80GB")


def test_step_time_memory_bound_decode() -> None:
    # efficiencies 1, no overhead: a batch-1 decode of llama3-8b at tiny context on H100 reads the weights:
    # 16,059,990,016 B / 3.35e12 B/s = 4.794 ms; compute 2 x 8.03e9 / 989e12 = 0.016 ms -> memory-bound
    m = RooflineModel(gpu_spec("H100-SXM"), model_shape("llama3-8b"), 1, RooflineParams(1.0, 1.0, 0.0))
    assert m.itl_s(1, 1, 0.0) == pytest.approx(16_059_990_016 / 3.35e12)


def test_step_time_compute_bound_prefill_and_tp() -> None:
    # 8192-token prefill of llama3-8b: matmul FLOPs 2 x 6,979,321,856 x 8192 for the layers, the LM head
    # (2 x 525,336,576) for the one sampled token, and attention 4 x 32 x 32 x 128 x 8192 x 8193 / 2.
    # tp=2 halves the compute and adds per layer 2 all-reduces of 8 us plus their ring traffic:
    # 2 x 32 x (2 x 1/2 x 8192 tokens x 4096 x 2 bytes) / 450e9 B/s (H100 NVLink, one direction)
    shape = model_shape("llama3-8b")
    flops = 2 * 6_979_321_856 * 8192 + 2 * 525_336_576 + 4 * 32 * 32 * 128 * (8192 * 8193 / 2)
    m1 = RooflineModel(gpu_spec("H100-SXM"), shape, 1, RooflineParams(1.0, 1.0, 0.0))
    m2 = RooflineModel(gpu_spec("H100-SXM"), shape, 2, RooflineParams(1.0, 1.0, 0.0))
    t1 = m1.step_s(8192, 8192 * 8193 / 2, 0, 0.0)
    assert t1 == pytest.approx(flops / 989e12)
    ring = 2 * 32 * (8192 * 4096 * 2) / 450e9
    assert m2.step_s(8192, 8192 * 8193 / 2, 0, 0.0) == pytest.approx(t1 / 2 + 2 * 32 * 8e-6 + ring)


def test_roofline_engine_single_request() -> None:
    # one request alone: TTFT = one prefill step, then (n - 1) decode steps of about the same length
    m = RooflineModel(gpu_spec("H200"), model_shape("qwen3-0.6b"), 1, RooflineParams(0.5, 0.8, 0.002))
    e = Engine(m, 10_000, 16, 256)
    e.submit(0.0, 1, 512, 50)
    prefill = m.step_s(512, 512 * 513 / 2, 0, 0.0)
    evs = []
    while e.next_event_time() < float("inf"):
        evs += e.advance(e.next_event_time())
    first = [x for x in evs if x.kind == "first_token"][0]
    end = [x for x in evs if x.kind == "finished"][0]
    assert first.t == pytest.approx(prefill)
    lo, hi = m.itl_s(1, 1, 513), m.itl_s(1, 1, 562)  # context grows from 513 to 562 tokens
    assert 49 * lo - 1e-9 <= end.t - first.t <= 49 * hi + 1e-9


def test_gpu_catalog_has_reports_fields() -> None:
    for name in ("A100-80GB", "H100-SXM", "H200", "L40S"):
        g = gpu_spec(name)
        assert g.tdp_w > 0 and g.price_per_hour > 0
    assert gpu_spec("A100").tdp_w == 400 and gpu_spec("H100").tdp_w == 700  # the paper's TDP figures
    with pytest.raises(UserError):
        gpu_spec("TPU-v5")


def _default_h200(model: str) -> RooflineModel:
    from scalearena.harness.sim.engine.latency import roofline_defaults

    shape = model_shape(model)
    return RooflineModel(gpu_spec("H200"), shape, 1, roofline_defaults(shape))


def _run_to(e: Engine, t: float) -> list:
    evs = []
    while e.next_event_time() <= t:
        evs += e.advance(e.next_event_time())
    return evs + e.advance(t)


@pytest.mark.parametrize(("model", "measured_ms"), [("qwen3-0.6b", 5.0715), ("llama3-8b", 17.0023)])
def test_chunked_prefill_step_matches_the_measured_mixed_step(model: str, measured_ms: float) -> None:
    # h200_mixed_profile.csv: 8 decodes at context 2048 plus a 512-token prompt chunk in one forward took
    # 5.07 ms (qwen3-0.6b) and 17.0 ms (llama3-8b). In the engine, 8 requests decode at ~2048 context; a
    # 512-token prompt arriving then is prefilled in one mixed step, so its TTFT is that step.
    m = _default_h200(model)
    e = Engine(m, 100_000, 16, 256, max_num_batched_tokens=8192)
    for i in range(8):
        e.submit(0.0, i, 2040, 1000)
    evs = _run_to(e, 1.0)
    assert sum(ev.kind == "first_token" for ev in evs) == 8
    t0 = e.t
    e.submit(t0, 99, 512, 10)
    first = next(ev for ev in _run_to(e, t0 + 1.0) if ev.rid == 99 and ev.kind == "first_token")
    ttft_ms = (first.t - t0) * 1000.0
    assert ttft_ms == pytest.approx(measured_ms, rel=0.15)


def test_prefill_budget_counts_decodes_first() -> None:
    # max_num_batched_tokens 600 with 100 decoding: a 1000-token prompt gets 500 tokens per step, so it
    # needs two steps (500 + 500); with budget 1100 it needs one. The step count shows in the TTFT:
    # two mixed steps take longer than one step of 1000 tokens minus the fixed cost of one step.
    m = RooflineModel(gpu_spec("H200"), model_shape("qwen3-0.6b"), 1, RooflineParams(0.6, 0.9, 0.002))
    ttft = {}
    for budget in (600, 1100):
        e = Engine(m, 100_000, 16, 256, max_num_batched_tokens=budget)
        for i in range(100):
            e.submit(0.0, i, 16, 10_000)
        _run_to(e, 1.0)
        t0 = e.t
        e.submit(t0, 999, 1000, 5)
        first = next(ev for ev in _run_to(e, t0 + 1.0) if ev.rid == 999 and ev.kind == "first_token")
        ttft[budget] = first.t - t0
    # each step carries the 2 ms fixed cost: two steps >= one step + 2 ms
    assert ttft[600] >= ttft[1100] + 0.002 - 1e-9
