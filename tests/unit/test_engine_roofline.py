"""Roofline model, catalog and KV-capacity derivation (arithmetic in the comments)."""
from __future__ import annotations

import pytest

from scalearena.contracts.errors import UserError
from scalearena.harness.engine.catalog import gpu_spec, model_shape
from scalearena.harness.engine.core import Engine
from scalearena.harness.engine.latency import RooflineModel, RooflineParams, build_latency
from scalearena.harness.scenario import EngineSpec, RooflineLatency


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
    # 8192-token prefill of llama3-8b: matmul FLOPs 2 x (6,979,321,856 + 525,336,576) x 8192 and attention
    # 4 x 32 x 32 x 128 x 8192 x 8193 / 2; tp=2 halves the time and adds 2 x 32 x 8 us of all-reduce
    shape = model_shape("llama3-8b")
    flops = 2 * (6_979_321_856 + 525_336_576) * 8192 + 4 * 32 * 32 * 128 * (8192 * 8193 / 2)
    m1 = RooflineModel(gpu_spec("H100-SXM"), shape, 1, RooflineParams(1.0, 1.0, 0.0))
    m2 = RooflineModel(gpu_spec("H100-SXM"), shape, 2, RooflineParams(1.0, 1.0, 0.0))
    t1 = m1.step_s(8192, 8192 * 8193 / 2, 0, 0.0)
    assert t1 == pytest.approx(flops / 989e12)
    assert m2.step_s(8192, 8192 * 8193 / 2, 0, 0.0) == pytest.approx(t1 / 2 + 2 * 32 * 8e-6)


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
