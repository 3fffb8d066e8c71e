"""GPU catalog and model shapes: the numbers the roofline latency model, the
KV-capacity derivation and the reports (energy from TDP, dollars from list
price) share.

GPU figures are vendor datasheet values (dense bf16 and fp8 tensor FLOP/s
without sparsity, HBM bandwidth, memory as the driver reports it, GPU-to-GPU
bandwidth per direction (NVLink, else PCIe), board TDP). Prices
are approximate on-demand list prices per GPU-hour at large clouds (2025);
the A100 figure matches the multi-metric note's "~$2,500/month" (3.46 $/h x
730 h). They are there for relative comparisons, not for procurement.

Model shapes are the published Hugging Face configs; ``params`` counts every
weight (embeddings included, tied embeddings once). A mixture-of-experts shape
(``experts`` > 0) holds every expert's weights but runs ``active_experts`` of
them per token: FLOPs follow the active weights, memory traffic the experts a
step actually touches (``experts_touched``). Users describe their own models
and GPUs in the scenario (harness/config/hardware.py turns those into these types).
"""
from __future__ import annotations

from dataclasses import dataclass

from scalearena.contracts.errors import UserError

GIB = 1024**3


@dataclass(frozen=True)
class GPUSpec:
    name: str
    peak_bf16_flops: float  # dense tensor-core FLOP/s
    hbm_bytes_per_s: float
    memory_gib: float
    tdp_w: float
    price_per_hour: float  # USD per GPU-hour, on-demand list (approximate)
    interconnect_bytes_per_s: float = 0.0  # GPU-to-GPU, one direction (tensor-parallel all-reduce)
    peak_fp8_flops: float | None = None  # dense fp8 tensor FLOP/s; None: no fp8 tensor cores

    @property
    def memory_bytes(self) -> float:
        return self.memory_gib * GIB

    def peak_flops(self, dtype: str) -> float:
        """Dense tensor FLOP/s for the model's dtype (fp8 falls back to bf16 without fp8 units)."""
        if dtype == "fp8" and self.peak_fp8_flops:
            return self.peak_fp8_flops
        return self.peak_bf16_flops


GPUS: dict[str, GPUSpec] = {
    g.name: g
    for g in (
        GPUSpec("A100-80GB", 312e12, 2.039e12, 80.0, 400.0, 3.46, 300e9),
        GPUSpec("A100-40GB", 312e12, 1.555e12, 40.0, 400.0, 2.75, 300e9),
        GPUSpec("H100-SXM", 989e12, 3.35e12, 80.0, 700.0, 6.88, 450e9, 1979e12),
        GPUSpec("H100-PCIE", 756e12, 2.0e12, 80.0, 350.0, 4.76, 64e9, 1513e12),
        GPUSpec("H200", 989e12, 4.8e12, 139.8, 700.0, 8.50, 450e9, 1979e12),
        GPUSpec("L40S", 362e12, 0.864e12, 44.4, 350.0, 1.96, 32e9, 733e12),
        GPUSpec("L4", 121e12, 0.3e12, 22.0, 72.0, 0.80, 32e9, 242e12),
    )
}

# Short names people write in scenarios.
ALIASES = {"A100": "A100-80GB", "H100": "H100-SXM", "H100-SXM5": "H100-SXM", "A100-SXM": "A100-80GB"}


def gpu_spec(name: str, custom: dict[str, GPUSpec] | None = None) -> GPUSpec:
    """A GPU type by name: the scenario's own ``cluster.gpu_types`` first, then the catalog."""
    if custom and name in custom:
        return custom[name]
    key = ALIASES.get(name, name)
    try:
        return GPUS[key]
    except KeyError:
        known = [*(custom or {}), *GPUS]
        raise UserError(
            f"unknown GPU type {name!r}", where="cluster.variants[].gpu", expected="one of " + ", ".join(known)
        ) from None


@dataclass(frozen=True)
class ModelShape:
    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    vocab: int
    tied_embeddings: bool
    dtype: str = "bf16"  # weights and KV cache: bf16 | fp16 | fp8
    experts: int = 0  # routed experts per MoE layer (0: dense MLP of ``intermediate``)
    active_experts: int = 0  # experts each token runs (top-k)
    expert_intermediate: int = 0  # intermediate size of one routed expert
    shared_intermediate: int = 0  # always-on shared expert(s), total intermediate size

    @property
    def dtype_bytes(self) -> int:
        return 1 if self.dtype == "fp8" else 2

    @property
    def attn_params(self) -> int:
        qkv = self.hidden * (self.heads + 2 * self.kv_heads) * self.head_dim
        return qkv + self.heads * self.head_dim * self.hidden

    @property
    def expert_params(self) -> int:
        """Weights of one routed expert (gate, up and down projections)."""
        return 3 * self.hidden * self.expert_intermediate

    @property
    def dense_layer_params(self) -> int:
        """Per layer, the weights every token uses: attention and the dense MLP or shared expert + router."""
        if not self.experts:
            return self.attn_params + 3 * self.hidden * self.intermediate
        return self.attn_params + 3 * self.hidden * self.shared_intermediate + self.hidden * self.experts

    @property
    def layer_params(self) -> int:
        return self.dense_layer_params + self.experts * self.expert_params

    @property
    def params(self) -> int:
        emb = self.vocab * self.hidden
        return self.layers * self.layer_params + emb * (1 if self.tied_embeddings else 2)

    @property
    def matmul_params(self) -> int:
        """Weights that take part in a matmul for every token (all layers, active experts only, + LM head)."""
        active = self.dense_layer_params + self.active_experts * self.expert_params
        return self.layers * active + self.vocab * self.hidden

    def experts_touched(self, tokens: float) -> float:
        """Expected routed experts per layer that at least one of ``tokens`` tokens runs (uniform routing):
        ``E (1 - (1 - k/E)^tokens)``; their weights are what a MoE step streams from HBM."""
        if not self.experts or tokens <= 0:
            return 0.0
        return self.experts * (1.0 - (1.0 - self.active_experts / self.experts) ** tokens)

    def weights_read_bytes(self, tokens: float) -> float:
        """Weight bytes one step of ``tokens`` tokens reads: all of them for a dense model; for MoE the
        dense part plus the experts it touches."""
        if not self.experts:
            return self.weight_bytes
        routed = self.layers * self.experts * self.expert_params
        return (self.params - routed + self.layers * self.experts_touched(tokens) * self.expert_params) \
            * self.dtype_bytes

    @property
    def weight_bytes(self) -> float:
        return float(self.params * self.dtype_bytes)

    @property
    def kv_bytes_per_token(self) -> int:
        """K and V for every layer, all KV heads (divide by tp for one GPU's share)."""
        return 2 * self.layers * self.kv_heads * self.head_dim * self.dtype_bytes

    @property
    def attn_flops_per_token_ctx(self) -> int:
        """FLOPs of QK^T and AV for one query token against one context token."""
        return 4 * self.layers * self.heads * self.head_dim


MODELS: dict[str, ModelShape] = {
    m.name: m
    for m in (
        ModelShape("qwen3-0.6b", 28, 1024, 16, 8, 128, 3072, 151936, True),
        ModelShape("qwen3-8b", 36, 4096, 32, 8, 128, 12288, 151936, False),
        ModelShape("llama3-8b", 32, 4096, 32, 8, 128, 14336, 128256, False),
        ModelShape("llama3-70b", 80, 8192, 64, 8, 128, 28672, 128256, False),
        ModelShape("qwen3-30b-a3b", 48, 2048, 32, 4, 128, 6144, 151936, False,
                   experts=128, active_experts=8, expert_intermediate=768),
    )
}


def model_shape(name: str | ModelShape) -> ModelShape:
    if isinstance(name, ModelShape):
        return name
    try:
        return MODELS[name.lower()]
    except KeyError:
        raise UserError(
            f"unknown model shape {name!r}",
            where="cluster.variants[].engine.latency.model_shape",
            expected="one of " + ", ".join(MODELS),
        ) from None
