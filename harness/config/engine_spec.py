"""A variant's serving engine settings (``engine:`` of the scenario) and the step-time model they give.

Kept apart from harness/config/scenario.py (the experiment as a whole) because the
engine settings have their own readers: the simulator's engines, the local
engine processes, the kube rendering (container args) and the in-cluster WVA
controller (``step_model`` from a Deployment's args). Same rules as every
config model: ``extra="forbid"``, frozen, a description on every field.
"""
from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, TypeAlias, cast

from pydantic import Discriminator, Field, Tag, ValidationInfo, field_validator, model_validator

from scalearena.contracts.limits import MAX_BATCH, MAX_GPUS_PER_REPLICA, MAX_KV_BLOCKS, MAX_TOKENS, StrictSpec
from scalearena.controllers.base import StepModel
from scalearena.harness.config.hardware import ModelShapeSpec, read_hf_config
from scalearena.harness.sim.engine.catalog import GPUSpec, ModelShape
from scalearena.harness.sim.engine.latency import build_latency


class _Spec(StrictSpec):
    """Extra keys forbidden, frozen, NaN/inf and numbers past their unit's limit refused."""


# ---- serving engine ---------------------------------------------------------------------------


class ConstantLatency(_Spec):
    """llm-d-inference-sim semantics."""

    kind: Literal["constant"] = Field(description="Fixed per-token latencies (llm-d-inference-sim).")
    ttft_ms: float = Field(default=0.0, ge=0, description="time-to-first-token base, ms.")
    itl_ms: float = Field(default=0.0, ge=0, description="inter-token-latency, ms.")
    prefill_overhead_ms: float = Field(default=0.0, ge=0, description="prefill-overhead added to TTFT, ms.")
    prefill_time_per_token_ms: float = Field(
        default=0.0, ge=0, description="prefill-time-per-token: TTFT grows by this per prompt token, ms."
    )
    time_factor_under_load: float = Field(
        default=1.0,
        ge=1.0,
        description="Latency multiplier at a full batch: factor 1 + (f-1)(nRunning-1)/(maxNumSeqs-1).",
    )


ShapeRef: TypeAlias = Annotated[
    Annotated[str, Tag("catalog")] | Annotated[ModelShapeSpec, Tag("inline")],
    Discriminator(lambda v: "catalog" if isinstance(v, str) else "inline"),
]  # a catalog name or an inline shape; the tag keeps errors on the branch the user meant


class RooflineLatency(_Spec):
    kind: Literal["roofline"] = Field(description="Step time from GPU x model shape x tensor parallelism.")
    model_shape: ShapeRef = Field(
        description="A catalog name (qwen3-0.6b, qwen3-8b, llama3-8b, llama3-70b, qwen3-30b-a3b), an inline "
        "shape, or {config: path/to/config.json} (a Hugging Face config read from disk).")
    tp: int = Field(default=1, ge=1, le=MAX_GPUS_PER_REPLICA, description="Tensor-parallel degree (GPUs per replica share the model).")
    compute_efficiency: float | None = Field(
        default=None, gt=0, le=1, description="Fraction of peak FLOP/s reached; null = calibrated default."
    )
    memory_efficiency: float | None = Field(
        default=None, gt=0, le=1, description="Fraction of HBM bandwidth reached; null = calibrated default."
    )
    step_overhead_ms: float | None = Field(
        default=None, ge=0, description="Fixed per-step overhead, ms; null = calibrated default."
    )

    @field_validator("model_shape", mode="before")
    @classmethod
    def _read_config(cls, v: Any, info: ValidationInfo) -> Any:
        base = (info.context or {}).get("base_dir")
        return read_hf_config(v, Path(base) if base is not None else None)

    @field_validator("model_shape")
    @classmethod
    def _known_shape(cls, v: str | ModelShapeSpec) -> str | ModelShapeSpec:
        from scalearena.harness.sim.engine.catalog import MODELS

        if isinstance(v, str) and v.lower() not in MODELS:
            raise ValueError(f"unknown model shape {v!r}; expected one of {', '.join(MODELS)}, an inline shape "
                             "or {config: path/to/config.json}")
        return v

    @model_validator(mode="after")
    def _tp_divides_heads(self) -> RooflineLatency:
        heads = self.shape().heads
        if heads % self.tp:
            raise ValueError(f"tp: {self.tp} must divide the model's {heads} attention heads (vLLM's check)")
        return self

    def shape(self) -> ModelShape:
        """The engine's ModelShape of this variant."""
        from scalearena.harness.sim.engine.catalog import model_shape

        return model_shape(self.model_shape) if isinstance(self.model_shape, str) else self.model_shape.to_shape()


LatencyModel = Annotated[ConstantLatency | RooflineLatency, Field(discriminator="kind")]


class EngineSpec(_Spec):
    max_num_seqs: int = Field(default=256, ge=1, le=MAX_BATCH, description="vLLM --max-num-seqs: sequences in a batch.")
    kv_cache_blocks: int | None = Field(
        default=None, ge=1, le=MAX_KV_BLOCKS, description="num_gpu_blocks; null = derived from free GPU memory (roofline)."
    )
    block_size: int = Field(default=16, ge=1, le=4096, description="Tokens per KV block.")
    max_waiting_queue: int | None = Field(
        default=None, ge=0, le=MAX_BATCH,
        description="Waiting-queue limit, beyond it HTTP 429 (llm-d-inference-sim's --max-waiting-queue-length, "
        "1000 in the paper's set-up); null = unbounded, as vLLM queues (overload shows as latency).")
    max_model_len: int | None = Field(
        default=None, ge=1, le=MAX_TOKENS,
        description="Longest prompt + max_tokens accepted (else 400 too_long); null = the KV cache's capacity.")
    max_num_batched_tokens: int = Field(
        default=8192, ge=1, le=MAX_TOKENS,
        description="vLLM --max-num-batched-tokens: tokens per step (decodes first, then prompt chunks).")
    gpu_memory_utilization: float = Field(
        default=0.9, gt=0, le=1, description="Share of GPU memory vLLM may use (KV derivation)."
    )
    enable_prefix_caching: bool = Field(
        default=True, description="vLLM automatic prefix caching: prompt blocks cached by hash chain skip "
        "prefill (simulator: trace hash_ids or shared-prefix groups; serve-engine: the prompt's token blocks). "
        "On by default, as in vLLM V1 (--enable-prefix-caching; --no-enable-prefix-caching turns it off).")
    latency: LatencyModel = Field(description="Latency model.")


@functools.lru_cache(maxsize=256)
def _step_model(engine_json: str, gpu: str | GPUSpec) -> StepModel | None:
    try:
        model, _ = build_latency(EngineSpec.model_validate(json.loads(engine_json)), gpu)
    except Exception:  # unknown GPU or shape, partial settings: the policy falls back to its defaults
        return None
    return cast("StepModel", model) if hasattr(model, "step_s") else None


def step_model(engine: Mapping[str, Any], gpu: str | GPUSpec) -> StepModel | None:
    """The roofline step-time model of a variant's engine settings, for ``VariantView.step_model``
    (None unless they describe a roofline engine). Policies read the serving model through the view
    and never import the harness; memoised because every view of a run asks for the same few."""
    return _step_model(json.dumps(dict(engine), sort_keys=True, default=str), gpu)
