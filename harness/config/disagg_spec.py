"""Scenario settings of prefill/decode disaggregation, and the checks a P/D cluster must pass.

A variant's ``role`` (``both``: aggregated, the default; ``prefill``; ``decode``) is llm-d's
``llm-d.ai/role`` pod label: the router's decode profile picks among ``decode`` and ``both`` pods,
its prefill profile among ``prefill`` pods (llm-d-inference-scheduler prefill-filter /
decode-filter). ``cluster.kv_transfer`` prices the KV hand-off (vLLM's NixlConnector moving the
prompt's blocks from the prefill pod to the decode pod); ``router.disaggregation`` is the P/D
decider. Kept out of harness/config/scenario.py, which holds the experiment as a whole.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import Field, ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError

from scalearena.contracts.limits import MAX_TOKENS
from scalearena.harness.config.engine_spec import _Spec

Role = Literal["both", "prefill", "decode"]
ROLE_DESCRIPTION = (
    "llm-d role (pod label llm-d.ai/role): both = aggregated (prefill and decode in one engine, the "
    "default); prefill = prefills prompts and hands their KV to a decode pod; decode = generates from KV a "
    "prefill pod computed (and serves decode-only requests itself). A model with prefill variants needs "
    "decode (or both) variants, and the other way round.")


class KVTransferSpec(_Spec):
    """The KV hand-off between a prefill and a decode pod (vLLM NixlConnector over RDMA)."""

    bandwidth_gbps: float = Field(
        default=400.0, gt=0, le=1e6, description="Bandwidth of one prefill pod's KV link, Gbit/s (400: one "
        "ConnectX-7 NDR port, one per GPU on HGX H100/H200). The transfers out of one prefill pod queue for "
        "it first come, first served.")
    latency_ms: float = Field(
        default=1.0, ge=0, le=60_000, description="Fixed time per transfer on top of bytes / bandwidth, ms "
        "(handshake and completion notice; an assumption, not a measurement).")
    kv_bytes_per_token: int | None = Field(
        default=None, ge=1, le=1 << 30, description="KV bytes of one token over all layers; null = from the "
        "model shape of the variants (required when a P/D variant uses the constant latency model).")
    abort_timeout_s: float = Field(
        default=480.0, gt=0, le=86_400, description="A prefill pod frees KV no decode pod has read this long "
        "after its prefill finished (vLLM VLLM_NIXL_ABORT_REQUEST_TIMEOUT, 480 s).")


class DisaggregationSpec(_Spec):
    """The router's P/D decider (llm-d-inference-scheduler pkg/plugins/profile)."""

    non_cached_tokens: int = Field(
        default=0, ge=0, le=MAX_TOKENS, description="prefix-based-pd-decider nonCachedTokens: a request goes "
        "through a prefill pod only if its prompt, and the part of it the chosen decode pod is not believed to "
        "hold, are at least this many tokens (else the decode pod prefills it itself); 0 = always (the "
        "always-disagg-pd-decider of llm-d's pd-disaggregation guide).")


def _error(loc: tuple[Any, ...], value: Any, msg: str) -> ValidationError:
    err = PydanticCustomError("value_error", f"Value error, {msg}")
    return ValidationError.from_exception_data("ClusterSpec", [InitErrorDetails(type=err, loc=loc, input=value)])


ROLE_BLIND = ("wva", "oracle")  # autoscalers that pool a model's variants as interchangeable cost tiers


def role_blind(sc: Any) -> list[str]:
    """A warning per autoscaler of the scenario that treats a P/D model's prefill and decode variants
    as interchangeable (none when no model has prefill variants)."""
    if not any(v.role == "prefill" for v in sc.cluster.variants):
        return []
    return [f"autoscaler {a.label!r} pools a model's variants as cost tiers and does not know prefill/decode "
            "roles; on this P/D model it may grow one pool for the other's load"
            for a in sc.autoscaler_configs() if a.kind in ROLE_BLIND]


def kv_bytes_per_token(variant: Any) -> int | None:
    """The KV bytes of one token of a variant's model (None: the constant latency model has no shape)."""
    lat = variant.engine.latency
    return None if lat.kind == "constant" else int(lat.shape().kv_bytes_per_token)


def check_roles(variants: Sequence[Any], kv: KVTransferSpec) -> None:
    """Refuse a P/D cluster that cannot run: prefill without decode (or the other way round), prefill and
    decode variants of one model with different KV layouts, or no way to size the KV transfer."""
    by_model: dict[str, list[int]] = {}
    for i, v in enumerate(variants):
        by_model.setdefault(v.model, []).append(i)
    for model, idx in by_model.items():
        roles = {variants[i].role for i in idx}
        if "prefill" in roles and not roles & {"decode", "both"}:
            i = next(i for i in idx if variants[i].role == "prefill")
            raise _error(("variants", i, "role"), "prefill", f"model {model!r} has prefill variants but none of "
                         "role decode (or both) to hand the KV to")
        if "decode" in roles and "prefill" not in roles:
            i = next(i for i in idx if variants[i].role == "decode")
            raise _error(("variants", i, "role"), "decode", f"model {model!r} has decode variants but none of role "
                         "prefill; use role both for aggregated serving")
        if "prefill" not in roles:
            continue
        sizes = [(i, kv_bytes_per_token(variants[i])) for i in idx]
        known = {b for _, b in sizes if b is not None}
        if len(known) > 1:
            i = next(i for i, b in sizes if b is not None and b != sizes[0][1])
            raise _error(("variants", i, "engine", "latency", "model_shape"), variants[i].engine.latency.model_shape,
                         f"the variants of model {model!r} hand KV to each other and must share its KV layout; "
                         f"KV bytes per token differ ({', '.join(str(b) for b in sorted(known))})")
        if kv.kv_bytes_per_token is None and any(b is None for _, b in sizes):
            i = next(i for i, b in sizes if b is None)
            raise _error(("kv_transfer", "kv_bytes_per_token"), None, f"variant {variants[i].name!r} uses the "
                         "constant latency model, which has no model shape to size the KV transfer: set "
                         "kv_transfer.kv_bytes_per_token")
