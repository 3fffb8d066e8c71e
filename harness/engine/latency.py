"""Latency models: how long prefill and each output token take.

Two families, chosen per variant in the scenario (``engine.latency.kind``):

``constant`` (llm-d-inference-sim semantics, pkg/llm-d-inference-sim/latencies.go).
Every request runs on its own timer; requests do not slow each other down
except through the load factor ``1 + (f-1)(nRunning-1)/(maxNumSeqs-1)``
(1 when max_num_seqs <= 1). TTFT: when ``time-to-first-token`` is non-zero it
is used alone (x factor) and ``prefill-overhead`` / ``prefill-time-per-token``
are ignored; when it is zero, TTFT = (prefill-overhead + prompt tokens x
prefill-time-per-token), each term x factor. ITL = inter-token-latency x
factor, evaluated with the running count at the time. Upstream rounds each
term to whole milliseconds; we keep the float values.

``roofline`` (vLLM-like shared steps). Every step of the batch takes
``overhead + max(compute, memory)``: compute = FLOPs / (tp x peak x
compute_efficiency), memory = bytes / (tp x HBM bandwidth x
memory_efficiency). FLOPs = 2 x matmul weights x tokens in the step +
attention (4 x layers x heads x head_dim per query-context pair); bytes =
all weights once + the KV cache the step reads or writes. Prefill chunks up
to ``CHUNK_TOKENS`` ride in the same step as the decodes (chunked prefill),
so an admission slows every running request for that step. The default
efficiency factors and the per-layer overhead are calibrated against
measured H200 step times (benchmarks/calibrate_roofline.py,
docs/simulator.md).
"""
from __future__ import annotations

from dataclasses import dataclass

from .catalog import GIB, GPUSpec, ModelShape, gpu_spec

# Calibrated on benchmarks/data/h200 (measured H200 step times, plain PyTorch + CUDA graphs); see docs/simulator.md.
DEFAULT_COMPUTE_EFFICIENCY = 0.60
DEFAULT_MEMORY_EFFICIENCY = 0.90
DEFAULT_LAYER_OVERHEAD_S = 88e-6  # fixed cost per layer per step (kernel launches, norms, sampling)
TP_ALLREDUCE_S = 8e-6  # per all-reduce (2 per layer) when tp > 1
CHUNK_TOKENS = 8192  # vLLM max_num_batched_tokens: prefill tokens per step
ACTIVATION_RESERVE_BYTES = 2 * GIB  # per GPU: activations, CUDA graphs, sampler (vLLM's profile run)


class ConstantModel:
    """llm-d-inference-sim latencies (seconds)."""

    shared_steps = False

    def __init__(self, spec, max_num_seqs: int) -> None:  # spec: harness.scenario.ConstantLatency
        self.ttft = spec.ttft_ms / 1000.0
        self.itl = spec.itl_ms / 1000.0
        self.overhead = spec.prefill_overhead_ms / 1000.0
        self.per_token = spec.prefill_time_per_token_ms / 1000.0
        self.f = spec.time_factor_under_load
        self.max_num_seqs = max_num_seqs

    def load_factor(self, n_running: int) -> float:
        if self.max_num_seqs <= 1:
            return 1.0
        return 1.0 + (self.f - 1.0) * (n_running - 1) / (self.max_num_seqs - 1)

    def ttft_s(self, prompt_tokens: int, n_running: int) -> float:
        k = self.load_factor(n_running)
        if self.ttft > 0.0:
            return self.ttft * k
        return (self.overhead + prompt_tokens * self.per_token) * k

    def itl_s(self, n_running: int, n_decoding: int, ctx_tokens: float) -> float:
        return self.itl * self.load_factor(n_running)


@dataclass(frozen=True)
class RooflineParams:
    compute_efficiency: float
    memory_efficiency: float
    step_overhead_s: float


class RooflineModel:
    """Step times from GPU x model shape x tensor parallelism (seconds)."""

    shared_steps = True

    def __init__(self, gpu: GPUSpec, shape: ModelShape, tp: int, params: RooflineParams) -> None:
        self.gpu, self.shape, self.tp, self.p = gpu, shape, tp, params
        self._flops_s = tp * gpu.peak_flops(shape.dtype) * params.compute_efficiency
        self._bytes_s = tp * gpu.hbm_bytes_per_s * params.memory_efficiency
        self._fixed = params.step_overhead_s + (2 * shape.layers * TP_ALLREDUCE_S if tp > 1 else 0.0)
        self._w_flops = 2.0 * shape.matmul_params
        self._attn = float(shape.attn_flops_per_token_ctx)
        self._kv_tok = float(shape.kv_bytes_per_token)

    def step_s(self, prefill_tokens: int, prefill_pairs: float, n_decoding: int, ctx_tokens: float) -> float:
        """One engine step: ``prefill_tokens`` new prompt tokens (``prefill_pairs`` causal
        query-context pairs among them) plus one token for each of ``n_decoding``
        sequences holding ``ctx_tokens`` of KV in total."""
        flops = self._w_flops * (prefill_tokens + n_decoding) + self._attn * (prefill_pairs + ctx_tokens)
        mem = self.shape.weights_read_bytes(prefill_tokens + n_decoding) + self._kv_tok * (ctx_tokens + prefill_tokens)
        return self._fixed + max(flops / self._flops_s, mem / self._bytes_s)

    def itl_s(self, n_running: int, n_decoding: int, ctx_tokens: float) -> float:
        return self.step_s(0, 0.0, n_decoding, ctx_tokens)

    def num_gpu_blocks(self, block_size: int, gpu_memory_utilization: float, where: str) -> int:
        """vLLM: (utilisation x memory - weights/tp - activations) / bytes per block per GPU."""
        free = gpu_memory_utilization * self.gpu.memory_bytes - self.shape.weight_bytes / self.tp
        free -= ACTIVATION_RESERVE_BYTES
        per_block = block_size * self.shape.kv_bytes_per_token / self.tp
        blocks = int(free // per_block)
        if blocks < 1:
            from scalearena.contracts.errors import UserError

            raise UserError(
                f"{self.shape.name} ({self.shape.weight_bytes / GIB:.1f} GiB of weights) leaves no room for a KV "
                f"cache on {self.gpu.name} x tp={self.tp}",
                where=where,
                expected="more GPUs per replica (latency.tp), a larger GPU, or an explicit kv_cache_blocks",
            )
        return blocks


def roofline_defaults(shape: ModelShape) -> RooflineParams:
    return RooflineParams(
        DEFAULT_COMPUTE_EFFICIENCY, DEFAULT_MEMORY_EFFICIENCY, DEFAULT_LAYER_OVERHEAD_S * shape.layers
    )


def build_latency(engine_spec, gpu: str | GPUSpec, where: str = "engine") -> tuple[object, int]:
    """The latency model of one variant and its num_gpu_blocks (explicit or derived)."""
    lat = engine_spec.latency
    if lat.kind == "constant":
        blocks = engine_spec.kv_cache_blocks
        if blocks is None:
            from scalearena.contracts.errors import UserError

            raise UserError(
                "kv_cache_blocks is required with the constant latency model",
                where=f"{where}.kv_cache_blocks",
                expected="a block count (the paper's set-up: 1024), or latency.kind: roofline to derive it",
            )
        return ConstantModel(lat, engine_spec.max_num_seqs), blocks
    shape = lat.shape()
    d = roofline_defaults(shape)
    params = RooflineParams(
        lat.compute_efficiency or d.compute_efficiency,
        lat.memory_efficiency or d.memory_efficiency,
        d.step_overhead_s if lat.step_overhead_ms is None else lat.step_overhead_ms / 1000.0,
    )
    model = RooflineModel(gpu if isinstance(gpu, GPUSpec) else gpu_spec(gpu), shape, lat.tp, params)
    blocks = engine_spec.kv_cache_blocks or model.num_gpu_blocks(
        engine_spec.block_size, engine_spec.gpu_memory_utilization, f"{where}.latency"
    )
    return model, blocks
