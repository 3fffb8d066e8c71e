"""Users' own models and GPUs: the scenario schema for them and its translation to the engine's types.

``engine.latency.model_shape`` is a built-in name, an inline shape (the fields of a Hugging Face
config under our names) or ``{config: path/to/config.json}``: a Hugging Face ``config.json`` read
from disk at load time (never downloaded) and turned into the inline form, so the resolved
scenario carries the numbers to every backend. ``cluster.gpu_types`` adds GPU types (or replaces
a catalog entry) by name; variants refer to them in ``gpu``.

Consistency checks name the field: KV heads must divide the attention heads (GQA groups), the
hidden size must split into heads unless ``head_dim`` is given, a MoE shape needs its expert
count, top-k and expert size, and tensor parallelism must divide the heads (vLLM's own check).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, model_validator

from scalearena.contracts.limits import MAX_YAML_BYTES, StrictSpec
from scalearena.harness.sim.engine.catalog import GPUSpec, ModelShape

MAX_DIM = 1 << 24  # any width, layer, head or expert count: far beyond real models, small enough for float math

# Hugging Face config key(s) -> our field; the first key present wins.
HF_KEYS: dict[str, tuple[str, ...]] = {
    "hidden_size": ("hidden_size", "d_model", "n_embd"),
    "num_layers": ("num_hidden_layers", "n_layer", "num_layers"),
    "num_heads": ("num_attention_heads", "n_head"),
    "num_kv_heads": ("num_key_value_heads", "num_kv_heads"),
    "head_dim": ("head_dim",),
    "intermediate_size": ("intermediate_size", "ffn_dim", "n_inner"),
    "vocab_size": ("vocab_size",),
    "tie_embeddings": ("tie_word_embeddings",),
    "num_experts": ("num_experts", "num_local_experts", "n_routed_experts"),
    "experts_per_token": ("num_experts_per_tok", "moe_topk"),
    "expert_intermediate_size": ("moe_intermediate_size",),
    "shared_expert_intermediate_size": ("shared_expert_intermediate_size",),
}
HF_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "bf16", "float8_e4m3fn": "fp8"}


class _Spec(StrictSpec):
    """Extra keys forbidden, frozen, NaN/inf and numbers past their unit's limit refused."""


class ModelShapeSpec(_Spec):
    """A transformer decoder's shape (Hugging Face config fields, our names)."""

    name: str = Field(default="custom", description="Label in reports and errors.")
    hidden_size: int = Field(ge=1, le=MAX_DIM, description="Model width (hidden_size).")
    num_layers: int = Field(ge=1, le=MAX_DIM, description="Decoder layers (num_hidden_layers).")
    num_heads: int = Field(ge=1, le=MAX_DIM, description="Attention (query) heads (num_attention_heads).")
    num_kv_heads: int | None = Field(default=None, ge=1, le=MAX_DIM, description="KV heads (GQA); null = num_heads.")
    head_dim: int | None = Field(default=None, ge=1, le=MAX_DIM, description="Per-head width; null = hidden_size / num_heads.")
    intermediate_size: int = Field(ge=1, le=MAX_DIM, description="Dense MLP width (intermediate_size).")
    vocab_size: int = Field(ge=1, le=MAX_DIM, description="Vocabulary (embedding and LM-head rows).")
    tie_embeddings: bool = Field(default=False, description="LM head shares the embedding weights.")
    num_experts: int = Field(default=0, ge=0, le=MAX_DIM, description="Routed experts per MoE layer; 0 = dense model.")
    experts_per_token: int = Field(default=0, ge=0, le=MAX_DIM, description="Experts each token runs (top-k); MoE only.")
    expert_intermediate_size: int | None = Field(
        default=None, ge=1, le=MAX_DIM, description="One expert's MLP width (moe_intermediate_size); null = intermediate_size.")
    shared_expert_intermediate_size: int = Field(
        default=0, ge=0, le=MAX_DIM, description="Always-on shared expert width (sum over shared experts); MoE only.")
    dtype: Literal["bf16", "fp16", "fp8"] = Field(default="bf16", description="Weights and KV cache data type.")

    @model_validator(mode="after")
    def _consistent(self) -> ModelShapeSpec:
        kv = self.num_kv_heads or self.num_heads
        if self.num_heads % kv:
            raise ValueError(f"num_kv_heads: {kv} must divide num_heads {self.num_heads} (GQA groups)")
        if self.head_dim is None and self.hidden_size % self.num_heads:
            raise ValueError(f"hidden_size: {self.hidden_size} does not split into {self.num_heads} heads; "
                             "give head_dim")
        if self.num_experts:
            if not 1 <= self.experts_per_token <= self.num_experts:
                raise ValueError(f"experts_per_token: must lie in [1, num_experts={self.num_experts}]; "
                                 f"got {self.experts_per_token}")
        elif self.experts_per_token or self.shared_expert_intermediate_size:
            raise ValueError("experts_per_token / shared_expert_intermediate_size need num_experts > 0")
        return self

    def to_shape(self) -> ModelShape:
        return ModelShape(
            self.name, self.num_layers, self.hidden_size, self.num_heads, self.num_kv_heads or self.num_heads,
            self.head_dim or self.hidden_size // self.num_heads, self.intermediate_size, self.vocab_size,
            self.tie_embeddings, self.dtype, self.num_experts, self.experts_per_token,
            (self.expert_intermediate_size or self.intermediate_size) if self.num_experts else 0,
            self.shared_expert_intermediate_size,
        )


def shape_from_hf_config(cfg: dict[str, Any], name: str) -> dict[str, Any]:
    """The inline-shape mapping of a Hugging Face ``config.json`` (multimodal: its ``text_config``)."""
    if "hidden_size" not in cfg and isinstance(cfg.get("text_config"), dict):
        cfg = {**cfg["text_config"], "torch_dtype": cfg.get("torch_dtype")}
    out: dict[str, Any] = {"name": name}
    for ours, keys in HF_KEYS.items():
        for k in keys:
            if cfg.get(k) is not None:
                out[ours] = cfg[k]
                break
    if "n_shared_experts" in cfg and cfg.get("n_shared_experts") and "expert_intermediate_size" in out:
        out["shared_expert_intermediate_size"] = cfg["n_shared_experts"] * out["expert_intermediate_size"]
    dtype = cfg.get("torch_dtype") or cfg.get("dtype")
    if isinstance(dtype, str) and dtype in HF_DTYPES:
        out["dtype"] = HF_DTYPES[dtype]
    if not out.get("num_experts"):
        out.pop("experts_per_token", None)
        out.pop("expert_intermediate_size", None)
        out.pop("shared_expert_intermediate_size", None)
    missing = [k for k in ("hidden_size", "num_layers", "num_heads", "intermediate_size", "vocab_size")
               if k not in out]
    if missing:
        names = ", ".join(HF_KEYS[k][0] for k in missing)
        raise ValueError(f"the config lacks {names} (expected a Hugging Face decoder config.json)")
    return out


def read_hf_config(value: Any, base_dir: Path | None) -> Any:
    """``{config: path}`` -> the inline shape mapping read from that file; anything else unchanged."""
    if not (isinstance(value, dict) and "config" in value):
        return value
    extra = set(value) - {"config", "name"}
    if extra:
        raise ValueError(f"unknown field(s) next to config: {sorted(extra)}")
    path = Path(str(value["config"]))
    if not path.is_absolute() and base_dir is not None:
        path = base_dir / path
    try:
        if path.stat().st_size > MAX_YAML_BYTES:
            raise ValueError(f"model config {str(path)!r} is larger than {MAX_YAML_BYTES} bytes")
        cfg = json.loads(path.read_text())
    except OSError as e:
        raise ValueError(f"cannot read model config {str(path)!r}: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"model config {str(path)!r} is not JSON: {e.msg} at line {e.lineno}") from None
    if not isinstance(cfg, dict):
        raise ValueError(f"model config {str(path)!r} is not a JSON object")
    name = value.get("name") or cfg.get("_name_or_path") or path.resolve().parent.name
    return shape_from_hf_config(cfg, str(name))


class GPUTypeSpec(_Spec):
    """One GPU type's datasheet figures."""

    peak_tflops: dict[Literal["bf16", "fp16", "fp8"], float] = Field(
        description="Dense tensor TFLOP/s (no sparsity) by dtype; bf16 is required (fp16 = bf16).")
    hbm_tb_s: float = Field(gt=0, description="HBM bandwidth, TB/s.")
    memory_gib: float = Field(gt=0, description="GPU memory as the driver reports it, GiB.")
    interconnect_gb_s: float = Field(
        default=0.0, ge=0, description="GPU-to-GPU bandwidth per direction (NVLink, else PCIe), GB/s.")
    tdp_w: float = Field(gt=0, description="Board power, W (energy figures).")
    price_per_hour: float = Field(ge=0, description="USD per GPU-hour (cost figures).")

    @model_validator(mode="after")
    def _bf16(self) -> GPUTypeSpec:
        if "bf16" not in self.peak_tflops and "fp16" not in self.peak_tflops:
            raise ValueError("peak_tflops needs a bf16 (or fp16) figure")
        if any(v <= 0 for v in self.peak_tflops.values()):
            raise ValueError("peak_tflops figures must be positive")
        return self

    def to_gpu(self, name: str) -> GPUSpec:
        bf16 = self.peak_tflops.get("bf16") or self.peak_tflops["fp16"]
        fp8 = self.peak_tflops.get("fp8")
        return GPUSpec(name, bf16 * 1e12, self.hbm_tb_s * 1e12, self.memory_gib, self.tdp_w, self.price_per_hour,
                       self.interconnect_gb_s * 1e9, fp8 * 1e12 if fp8 else None)
