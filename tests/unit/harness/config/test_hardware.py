"""Users' own models and GPUs: inline shapes, Hugging Face config.json files, gpu_types (arithmetic in comments)."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from scalearena.contracts.errors import UserError
from scalearena.harness.config.scenario import scenario_from_data
from scalearena.harness.sim.engine.catalog import GPUS, MODELS
from scalearena.harness.sim.engine.latency import RooflineModel, RooflineParams, build_latency
from tests.conftest import SMALL_SCENARIO

HF = Path(__file__).resolve().parents[3] / "fixtures" / "hf"


def roofline_scenario(shape, tp: int = 1, gpu: str = "H200", gpu_types: dict | None = None,
                      base_dir: Path | None = None):
    data = {**SMALL_SCENARIO}
    v = {**SMALL_SCENARIO["cluster"]["variants"][0], "gpu": gpu,
         "engine": {"latency": {"kind": "roofline", "model_shape": shape, "tp": tp}}}
    data["cluster"] = {"variants": [v], **({"gpu_types": gpu_types} if gpu_types else {})}
    return scenario_from_data(data, "t.yaml", base_dir)


def shape_of(sc):
    return sc.cluster.variants[0].engine.latency.shape()


def test_hf_config_file_gives_the_catalog_shape() -> None:
    sc = roofline_scenario({"config": "llama3-8b.json"}, base_dir=HF)
    got = shape_of(sc)
    assert got.name == "hf"  # no _name_or_path in the file: the folder's name
    assert dataclasses.replace(got, name="llama3-8b") == MODELS["llama3-8b"]


def test_moe_config_counts_all_experts_in_memory_and_active_ones_in_flops() -> None:
    s = shape_of(roofline_scenario({"config": str(HF / "qwen3-30b-a3b.json"), "name": "q3moe"}))
    assert (s.name, s.experts, s.active_experts, s.expert_intermediate) == ("q3moe", 128, 8, 768)
    # per layer: attention 2048*(32+2*4)*128 + 32*128*2048 = 18,874,368; router 2048*128 = 262,144;
    # experts 128 * 3*2048*768 = 603,979,776 -> 623,116,288 x 48 = 29,909,581,824; + untied embeddings
    # 2 * 151,936 * 2048 = 622,329,856 -> 30,531,911,680 (the published 30.5B)
    assert s.params == 30_531_911_680
    # active: (18,874,368 + 262,144 + 8 * 4,718,592) x 48 + LM head 311,164,928 = 3,041,656,832
    assert s.matmul_params == 3_041_656_832
    assert s == MODELS["qwen3-30b-a3b"].__class__(**{**dataclasses.asdict(MODELS["qwen3-30b-a3b"]), "name": "q3moe"})


def test_moe_step_reads_only_the_experts_it_touches() -> None:
    s = MODELS["qwen3-30b-a3b"]
    # one token touches its top-8 experts; 10,000 tokens touch all 128 (128 * (1 - (120/128)^10000) ~ 128)
    assert s.experts_touched(1) == pytest.approx(8.0)
    assert s.experts_touched(10_000) == pytest.approx(128.0)
    routed = 48 * 128 * 3 * 2048 * 768  # 28,991,029,248 routed weights
    # batch 1: dense part + 8 of 128 experts per layer, 2 bytes each
    assert s.weights_read_bytes(1) == pytest.approx((s.params - routed + routed * 8 / 128) * 2)
    assert s.weights_read_bytes(10_000) == pytest.approx(s.weight_bytes)


def test_inline_shape_and_inconsistent_shapes_name_the_field() -> None:
    inline = {"name": "mine", "hidden_size": 4096, "num_layers": 32, "num_heads": 32, "num_kv_heads": 8,
              "intermediate_size": 14336, "vocab_size": 128256}
    s = shape_of(roofline_scenario(inline))
    assert s.head_dim == 128  # 4096 / 32
    assert dataclasses.replace(s, name="llama3-8b") == MODELS["llama3-8b"]
    where = "cluster.variants.0.engine.latency.model_shape"  # as the file spells it: no union tags
    for bad, fragment in (({"num_kv_heads": 6}, ".num_kv_heads: 6 must divide num_heads 32"),
                          ({"hidden_size": 4100}, ".hidden_size: 4100 does not split"),  # 128.125 per head
                          ({"num_experts": 8, "experts_per_token": 9},
                           ".experts_per_token: must lie in [1, num_experts=8]"),
                          ({"hidden_size": "wide"}, ".hidden_size: Input should be a valid integer")):
        with pytest.raises(UserError) as e:
            roofline_scenario({**inline, **bad})
        assert where + fragment in e.value.render()
    with pytest.raises(UserError) as e:
        roofline_scenario("llama3-8b", tp=3)
    assert "cluster.variants.0.engine.latency.tp: 3 must divide" in e.value.render()
    with pytest.raises(UserError) as e:
        roofline_scenario({"config": "missing.json"}, base_dir=HF)
    assert where in e.value.render() and "cannot read model config" in e.value.render()


def test_own_gpu_type_drives_the_roofline_and_kv_capacity() -> None:
    # an H200 with twice the HBM bandwidth: a batch-1 decode (memory-bound: 16 GB of weights) takes half the
    # memory time; the KV cache follows the memory size given
    h = GPUS["H200"]
    mine = {"peak_tflops": {"bf16": 989, "fp8": 1979}, "hbm_tb_s": 9.6, "memory_gib": 139.8,
            "interconnect_gb_s": 450, "tdp_w": 700, "price_per_hour": 8.5}
    sc = roofline_scenario("llama3-8b", gpu="h200x2", gpu_types={"h200x2": mine})
    v = sc.cluster.variants[0]
    g = sc.cluster.gpu("h200x2")
    assert (g.hbm_bytes_per_s, g.peak_fp8_flops, g.interconnect_bytes_per_s) == (9.6e12, 1979e12, 450e9)
    lat_mine, blocks_mine = build_latency(v.engine, g)
    lat_h200, blocks_h200 = build_latency(v.engine, h)
    assert blocks_mine == blocks_h200
    p = RooflineParams(1.0, 1.0, 0.0)
    shape = MODELS["llama3-8b"]
    mem_mine = RooflineModel(g, shape, 1, p).step_s(0, 0.0, 1, 0.0)
    mem_h200 = RooflineModel(h, shape, 1, p).step_s(0, 0.0, 1, 0.0)
    assert mem_mine == pytest.approx(mem_h200 / 2) == pytest.approx(shape.weight_bytes / 9.6e12)
    with pytest.raises(UserError) as e:
        roofline_scenario("llama3-8b", gpu="B300")
    assert "cluster.variants.0.gpu: unknown GPU type 'B300'" in e.value.render()
