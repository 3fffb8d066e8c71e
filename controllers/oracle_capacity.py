"""How much load one replica of a variant carries without saturating: the oracle's model.

A replica is unsaturated while its KV cache stays below ``kv_target`` (0.8,
WVA's tau_kv) and nothing waits. So it holds at most

    slots = min(max_num_seqs, floor(kv_target x kv_cache_blocks / blocks per request))

requests at once, where a request of i prompt and o output tokens holds
ceil((i + o) / block_size) blocks at its end (the peak; counting the peak
over-reserves a little while a request is still decoding). At that load a
request takes S(i, o) seconds end to end, so by Little's law a replica
serves slots / mean(S) requests per second, and an arrival rate lambda needs
lambda x mean(S) / slots replicas.

S(i, o) comes from the variant's latency model as the engine settings reveal
it (``VariantView.engine``):
- ``constant`` (llm-d-inference-sim): TTFT (time-to-first-token, or
  prefill-overhead + i x prefill-time-per-token) + (o - 1) x ITL, all times
  the load factor 1 + (f - 1)(slots - 1)/(max_num_seqs - 1) at full slots;
- ``roofline``: the harness's step-time model (``VariantView.step_model``, built by the harness), one prefill step of i tokens
  next to slots - 1 decodes, then o - 1 decode steps of a full batch, with
  each sequence holding i + o/2 tokens of context on average;
- unknown: ``default_ttft_ms`` + (o - 1) x ``default_itl_ms``.

Limits: means over a window, not tails; queueing delay at high utilisation
and chunked-prefill interleaving are ignored; the KV estimate ignores prefix
sharing. It is a lower bound on cost at full service, not a latency model.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .base import StepModel

Tokens = Sequence[int] | np.ndarray  # one window's token counts, in schedule order


@dataclass(frozen=True)
class Capacity:
    slots: int  # concurrent requests one replica holds unsaturated
    kv_slots: int | None  # the KV cache's share of that limit (None: KV size unknown)
    service_s: float  # mean end-to-end time of a request at that load
    rate_rps: float  # requests per second one replica serves: slots / service_s
    latency_kind: str


def kv_slots(engine: Mapping[str, Any], inputs: Tokens, outputs: Tokens, kv_target: float) -> int | None:
    blocks = engine.get("kv_cache_blocks")
    if not blocks or not len(inputs):
        return None
    bs = int(engine.get("block_size") or 16)
    # blocks per request: the integer ceiling -(-(i + o) // bs), which equals math.ceil((i + o) / bs) for
    # counts below 2**53; their sum is exact in int64, so the mean is the same as summing Python ints
    total = int((-((-(_ints(inputs) + _ints(outputs))) // bs)).sum())
    return max(1, math.floor(kv_target * blocks / (total / len(inputs)) + 1e-9))


def _ints(xs: Tokens) -> np.ndarray:
    return np.asarray(xs, dtype=np.int64)


def _sum_in_order(terms: np.ndarray) -> float:
    """``sum`` of the terms as Python floats, in order: numpy computes each term with the same IEEE
    operations in the same order as the per-request expression it replaces, and Python's own
    ``sum`` adds them, so the total is the one the generator expression gave (np.sum adds pairwise)."""
    return float(sum(terms.tolist()))


def _constant_total(lat: Mapping[str, Any], slots: int, max_num_seqs: int, inputs: Tokens,
                    outputs: Tokens) -> float:
    """Summed service seconds of the requests under the constant latency model: each request's term
    (ttft_ms + max(0, o - 1) x itl_ms) x k / 1000, or with overhead + i x per-token prefill in place of
    ttft_ms, computed for the whole window at once (the settings are read once, not per request)."""
    f = float(lat.get("time_factor_under_load", 1.0))
    k = 1.0 if max_num_seqs <= 1 else 1.0 + (f - 1.0) * (slots - 1) / (max_num_seqs - 1)
    ttft_ms = float(lat.get("ttft_ms", 0.0))
    itl_ms = float(lat.get("itl_ms", 0.0))
    decode_ms = np.maximum(_ints(outputs) - 1, 0) * itl_ms
    if ttft_ms > 0:
        return _sum_in_order((ttft_ms + decode_ms) * k / 1000.0)
    overhead = float(lat.get("prefill_overhead_ms", 0.0))
    per_token = float(lat.get("prefill_time_per_token_ms", 0.0))
    return _sum_in_order((overhead + _ints(inputs) * per_token + decode_ms) * k / 1000.0)


def replica_capacity(
    engine: Mapping[str, Any],
    inputs: Tokens,
    outputs: Tokens,
    kv_target: float,
    default_ttft_ms: float,
    default_itl_ms: float,
    roofline: StepModel | None = None,
) -> Capacity:
    """Capacity of one replica for this mix of requests (``inputs``/``outputs`` non-empty)."""
    max_num_seqs = int(engine.get("max_num_seqs") or 256)
    kv = kv_slots(engine, inputs, outputs, kv_target)
    slots = max(1, min(max_num_seqs, kv if kv is not None else max_num_seqs))
    lat = engine.get("latency") or {}
    kind = str(lat.get("kind", "default"))
    n = len(inputs)
    if kind == "constant":
        total = _constant_total(lat, slots, max_num_seqs, inputs, outputs)
    elif kind == "roofline" and roofline is not None:
        ins, outs = _ints(inputs), _ints(outputs)
        ctx = _sum_in_order(ins + outs / 2) / n
        decode = roofline.step_s(0, 0.0, slots, slots * ctx)
        step, n_dec, ctx_dec = roofline.step_s, slots - 1, (slots - 1) * ctx
        total = sum(step(i, i * i / 2, n_dec, ctx_dec) + m * decode
                    for i, m in zip(ins.tolist(), np.maximum(outs - 1, 0).tolist(), strict=True))
    else:
        kind = "default"
        total = _sum_in_order((default_ttft_ms + np.maximum(_ints(outputs) - 1, 0) * default_itl_ms) / 1000.0)
    service = max(total / n, 1e-6)
    return Capacity(slots, kv, service, slots / service, kind)
