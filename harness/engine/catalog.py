"""GPU catalog and model shapes: the numbers the roofline latency model, the
KV-capacity derivation and the reports (energy from TDP, dollars from list
price) share.

GPU figures are vendor datasheet values (dense bf16 tensor FLOP/s without
sparsity, HBM bandwidth, memory as the driver reports it, board TDP). Prices
are approximate on-demand list prices per GPU-hour at large clouds (2025);
the A100 figure matches the multi-metric note's "~$2,500/month" (3.46 $/h x
730 h). They are there for relative comparisons, not for procurement.

Model shapes are the published Hugging Face configs; ``params`` counts every
weight (embeddings included, tied embeddings once).
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

    @property
    def memory_bytes(self) -> float:
        return self.memory_gib * GIB


GPUS: dict[str, GPUSpec] = {
    g.name: g
    for g in (
        GPUSpec("A100-80GB", 312e12, 2.039e12, 80.0, 400.0, 3.46),
        GPUSpec("A100-40GB", 312e12, 1.555e12, 40.0, 400.0, 2.75),
        GPUSpec("H100-SXM", 989e12, 3.35e12, 80.0, 700.0, 6.88),
        GPUSpec("H100-PCIE", 756e12, 2.0e12, 80.0, 350.0, 4.76),
        GPUSpec("H200", 989e12, 4.8e12, 139.8, 700.0, 8.50),
        GPUSpec("L40S", 362e12, 0.864e12, 44.4, 350.0, 1.96),
        GPUSpec("L4", 121e12, 0.3e12, 22.0, 72.0, 0.80),
    )
}

# Short names people write in scenarios.
ALIASES = {"A100": "A100-80GB", "H100": "H100-SXM", "H100-SXM5": "H100-SXM", "A100-SXM": "A100-80GB"}


def gpu_spec(name: str) -> GPUSpec:
    key = ALIASES.get(name, name)
    try:
        return GPUS[key]
    except KeyError:
        raise UserError(
            f"unknown GPU type {name!r}", where="cluster.variants[].gpu", expected="one of " + ", ".join(GPUS)
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
    dtype_bytes: int = 2  # bf16 weights and KV cache

    @property
    def layer_params(self) -> int:
        qkv = self.hidden * (self.heads + 2 * self.kv_heads) * self.head_dim
        o = self.heads * self.head_dim * self.hidden
        mlp = 3 * self.hidden * self.intermediate
        return qkv + o + mlp

    @property
    def params(self) -> int:
        emb = self.vocab * self.hidden
        return self.layers * self.layer_params + emb * (1 if self.tied_embeddings else 2)

    @property
    def matmul_params(self) -> int:
        """Weights that take part in a matmul for every token (all layers + LM head)."""
        return self.layers * self.layer_params + self.vocab * self.hidden

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
    )
}


def model_shape(name: str) -> ModelShape:
    try:
        return MODELS[name.lower()]
    except KeyError:
        raise UserError(
            f"unknown model shape {name!r}",
            where="cluster.variants[].engine.latency.model_shape",
            expected="one of " + ", ".join(MODELS),
        ) from None
