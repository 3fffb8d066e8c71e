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

``roofline`` (vLLM-like shared steps). One step of the batch (``step_s``) is
the sum of its kernels' times, each a smooth roofline ``(c^n + m^n)^(1/n)``
of its compute time c and memory time m (a hard ``max`` is optimistic near
the crossover, where neither unit is saturated):

- the matmuls: FLOPs 2 x active weights x tokens (the LM head only for the
  tokens that are sampled: decodes and prompts finishing their prefill, as
  vLLM computes logits) / (tp x peak x compute_efficiency), against the
  weights the step reads (MoE: the experts it touches) and the KV it writes;
- decode attention: 4 x layers x heads x head_dim per context token /
  (tp x peak x attention_efficiency), against the KV bytes it reads at
  HBM x memory_efficiency x a parallelism factor ``x / (x^4 + X^4)^(1/4)``
  with x = decoding sequences x KV heads per GPU: one sequence's KV of a few
  heads cannot spread over the GPU's SMs (the measured profile reads 8k
  contexts at 7 % of the bandwidth at batch 1, all of it from ~16 on);
- prefill attention (causal query-context pairs): compute only;
- a per-token, per-layer activation cost (norms, rotary, activations,
  residuals: elementwise work that grows with tokens, not with weights);
- a fixed cost per layer per step (launches, sampling) and, with tp > 1, two
  all-reduces per layer: latency + ring traffic ``2 (tp-1)/tp x tokens x
  hidden x bytes`` over the GPU's interconnect (not calibrated: no TP data).

Prefill chunks ride in the same step as the decodes (chunked prefill: vLLM's
scheduler fills a step with every decode first, then prompt chunks up to
``max_num_batched_tokens`` tokens in all), so an admission slows every
running request for that step. The default efficiency factors, crossover
sharpness, KV parallelism and per-token / per-layer costs are fitted on every
shipped measured H200 step (prefill, decode and mixed chunked-prefill steps;
benchmarks/calibrate_roofline.py, per-phase errors in docs/simulator.md).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

from scalearena.harness.sim.engine.catalog import GIB, GPUSpec, ModelShape, gpu_spec

# Fitted on benchmarks/data/h200 (every measured H200 step: prefill, decode, mixed; plain PyTorch + CUDA graphs)
# by benchmarks/calibrate_roofline.py; see docs/simulator.md for the per-phase errors.
DEFAULT_COMPUTE_EFFICIENCY = 0.63  # matmuls, of the datasheet peak (the measured 8192^3 matmul reaches 0.81)
DEFAULT_MEMORY_EFFICIENCY = 0.91
DEFAULT_ATTENTION_EFFICIENCY = 0.61  # attention FLOPs, of the datasheet peak
DEFAULT_CROSSOVER_SHARPNESS = 2.7  # n of the smooth roofline (c^n + m^n)^(1/n); inf = hard max
DEFAULT_KV_PARALLEL_UNITS = 105.0  # sequences x KV heads per GPU at which decode attention reaches the bandwidth
DEFAULT_TOKEN_LAYER_S = 76e-9  # activation work per token per layer
DEFAULT_LAYER_OVERHEAD_S = 79e-6  # fixed cost per layer per step (kernel launches, norms, sampling)
TP_ALLREDUCE_S = 8e-6  # latency per all-reduce (2 per layer) when tp > 1
CHUNK_TOKENS = 8192  # vLLM max_num_batched_tokens default (API server, GPUs with >= 70 GiB)
ACTIVATION_RESERVE_BYTES = 2 * GIB  # per GPU: activations, CUDA graphs, sampler (vLLM's profile run)


class LatencyModel:
    """What the engine (core.py) asks of a latency model, in seconds. ``shared_steps`` False: a prompt's
    prefill and each decode token take their own time (``ttft_s``, ``itl_s``; ``itl`` 0: the whole output
    at the first token); True: each engine step runs prompt chunks and decodes together (``step_s``).
    One base, so the compiled engine (harness/sim/native.py) calls the model directly."""

    def __init__(self, shared_steps: bool, itl: float) -> None:
        self.shared_steps = shared_steps
        self.itl = itl  # seconds per output token at no load (ConstantModel; 0 otherwise)

    def ttft_s(self, prompt_tokens: int, n_running: int) -> float:
        raise NotImplementedError

    def itl_s(self, n_running: int, n_decoding: int, ctx_tokens: float) -> float:
        raise NotImplementedError

    def step_s(self, prefill_tokens: int, prefill_pairs: float, n_decoding: int, ctx_tokens: float,
               prefill_finishing: int | None = None) -> float:
        raise NotImplementedError


class ConstantModel(LatencyModel):
    """llm-d-inference-sim latencies (seconds)."""

    def __init__(self, spec, max_num_seqs: int) -> None:  # spec: harness.config.engine_spec.ConstantLatency
        super().__init__(False, spec.itl_ms / 1000.0)
        self.ttft = spec.ttft_ms / 1000.0
        self.overhead = spec.prefill_overhead_ms / 1000.0
        self.per_token = spec.prefill_time_per_token_ms / 1000.0
        self.f = spec.time_factor_under_load
        self.max_num_seqs = max_num_seqs
        self._itl_by_n: dict[int, float] = {}
        self._ttft_by_n: dict[int, float] = {}

    def load_factor(self, n_running: int) -> float:
        if self.max_num_seqs <= 1:
            return 1.0
        return 1.0 + (self.f - 1.0) * (n_running - 1) / (self.max_num_seqs - 1)

    def ttft_s(self, prompt_tokens: int, n_running: int) -> float:
        if self.ttft > 0.0:
            v = self._ttft_by_n.get(n_running)
            if v is None:
                v = self._ttft_by_n[n_running] = self.ttft * self.load_factor(n_running)
            return v
        return (self.overhead + prompt_tokens * self.per_token) * self.load_factor(n_running)

    def itl_s(self, n_running: int, n_decoding: int, ctx_tokens: float) -> float:
        v = self._itl_by_n.get(n_running)
        if v is None:  # the same product every time: kept per running count (called at every engine event)
            v = self._itl_by_n[n_running] = self.itl * self.load_factor(n_running)
        return v


@dataclass(frozen=True)
class RooflineParams:
    """Free parameters of the step model; the defaults beyond the first three give the plain roofline
    (attention at the matmul efficiency, hard max, full KV bandwidth, no per-token cost)."""

    compute_efficiency: float
    memory_efficiency: float
    step_overhead_s: float
    attention_efficiency: float | None = None  # None: compute_efficiency
    crossover_sharpness: float = math.inf
    kv_parallel_units: float = 0.0  # 0: decode attention always reads KV at full bandwidth
    token_layer_s: float = 0.0


def smooth_max(a: float, b: float, n: float) -> float:
    """(a^n + b^n)^(1/n): max(a, b) for n = inf, up to 2^(1/n) x max at the crossover a = b."""
    if n == math.inf or a == 0.0 or b == 0.0:
        return a if a > b else b
    hi = a if a > b else b
    r = (b if a > b else a) / hi
    return hi * (1.0 + r**n) ** (1.0 / n)


class RooflineModel(LatencyModel):
    """Step times from GPU x model shape x tensor parallelism (seconds)."""

    def __init__(self, gpu: GPUSpec, shape: ModelShape, tp: int, params: RooflineParams) -> None:
        super().__init__(True, 0.0)
        self.gpu, self.shape, self.tp, self.p = gpu, shape, tp, params
        peak = tp * gpu.peak_flops(shape.dtype)
        self._flops_s = peak * params.compute_efficiency
        self._attn_flops_s = peak * (params.attention_efficiency or params.compute_efficiency)
        self._bytes_s = tp * gpu.hbm_bytes_per_s * params.memory_efficiency
        self._n = params.crossover_sharpness
        self._fixed = params.step_overhead_s + (2 * shape.layers * TP_ALLREDUCE_S if tp > 1 else 0.0)
        self._lm = 2.0 * shape.vocab * shape.hidden  # LM-head FLOPs per sampled token
        self._w_flops = 2.0 * shape.matmul_params - self._lm  # every other matmul, per token
        self._attn = float(shape.attn_flops_per_token_ctx)
        self._kv_tok = float(shape.kv_bytes_per_token)
        # a dense model reads all its weights every step: ModelShape.weights_read_bytes, computed once
        self._w_read: float | None = None if shape.experts else shape.weights_read_bytes(1)
        self._kv_units = params.kv_parallel_units
        self._kv_heads_gpu = max(1.0, shape.kv_heads / tp)
        self._tok = params.token_layer_s * shape.layers
        ring = 2.0 * (tp - 1) / tp * shape.hidden * shape.dtype_bytes  # bytes per token per all-reduce
        self._ar_tok = 2 * shape.layers * ring / gpu.interconnect_bytes_per_s if tp > 1 and \
            gpu.interconnect_bytes_per_s > 0 else 0.0

    def kv_read_efficiency(self, n_decoding: int) -> float:
        """Share of the bandwidth decode attention reaches with this many sequences (1 when not modelled)."""
        if self._kv_units <= 0.0:
            return 1.0
        x = max(1, n_decoding) * self._kv_heads_gpu
        return x / (x**4 + self._kv_units**4) ** 0.25

    def step_s(self, prefill_tokens: int, prefill_pairs: float, n_decoding: int, ctx_tokens: float,
               prefill_finishing: int | None = None) -> float:
        """One engine step: ``prefill_tokens`` new prompt tokens (``prefill_pairs`` causal
        query-context pairs among them, ``prefill_finishing`` prompts completing, default one if
        any) plus one token for each of ``n_decoding`` sequences holding ``ctx_tokens`` of KV."""
        tokens = prefill_tokens + n_decoding
        if prefill_finishing is None:
            prefill_finishing = 1 if prefill_tokens else 0
        shape, n = self.shape, self._n
        gemm_c = (self._w_flops * tokens + self._lm * (n_decoding + prefill_finishing)) / self._flops_s
        w_read = self._w_read if self._w_read is not None else shape.weights_read_bytes(tokens)
        gemm_m = (w_read + self._kv_tok * prefill_tokens) / self._bytes_s
        t = self._fixed + smooth_max(gemm_c, gemm_m, n) + self._tok * tokens + self._ar_tok * tokens
        if ctx_tokens > 0.0:
            kv_m = self._kv_tok * ctx_tokens / (self._bytes_s * self.kv_read_efficiency(n_decoding))
            t += smooth_max(self._attn * ctx_tokens / self._attn_flops_s, kv_m, n)
        if prefill_pairs > 0.0:
            t += self._attn * prefill_pairs / self._attn_flops_s
        return t

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
        DEFAULT_COMPUTE_EFFICIENCY, DEFAULT_MEMORY_EFFICIENCY, DEFAULT_LAYER_OVERHEAD_S * shape.layers,
        DEFAULT_ATTENTION_EFFICIENCY, DEFAULT_CROSSOVER_SHARPNESS, DEFAULT_KV_PARALLEL_UNITS, DEFAULT_TOKEN_LAYER_S,
    )


def build_latency(engine_spec, gpu: str | GPUSpec, where: str = "engine") -> tuple[LatencyModel, int]:
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
    params = replace(
        d,
        compute_efficiency=lat.compute_efficiency or d.compute_efficiency,
        memory_efficiency=lat.memory_efficiency or d.memory_efficiency,
        step_overhead_s=d.step_overhead_s if lat.step_overhead_ms is None else lat.step_overhead_ms / 1000.0,
    )
    model = RooflineModel(gpu if isinstance(gpu, GPUSpec) else gpu_spec(gpu), shape, lat.tp, params)
    blocks = engine_spec.kv_cache_blocks or model.num_gpu_blocks(
        engine_spec.block_size, engine_spec.gpu_memory_utilization, f"{where}.latency"
    )
    return model, blocks
