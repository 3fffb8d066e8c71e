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

Every replica is charged for all the work of the requests it holds, its
neighbours' prompts included. On the roofline model a replica's steps are
shared: each request costs one mixed step (its prompt of i tokens beside
the slots - 1 sequences decoding, which each get a token from it) and its
remaining max(0, o - 1 - (slots - 1)) decode tokens at 1/slots of a full
decode step, so a replica serves

    rate = n / sum(P(i) + max(0, o - slots) x D / slots)

requests per second (P: the mixed step, D: a full-batch decode step) and
service_s = slots / rate. Dividing one request's prefill by the slots it
shares (what Little's law on its own end-to-end time gives) under-charged
long prompts by up to slots x: on an 8k-token prompt mix the oracle planned
4.9-7.3 req/s per replica where one replica serves about 1.5. The constant
model (llm-d-inference-sim) has no shared compute: its latencies do not
depend on the neighbours, so Little's law on S stands.

P/D (``role``): a ``prefill`` replica runs one prompt after another (their
compute adds up, as Dynamo's planner counts it), rate = n / sum(P alone);
under the constant model a prompt takes TTFT and slots run at once. A
``decode`` replica holds slots requests of i + o tokens of KV and spends
max(0, o - 1) steps of a full batch on each: rate = slots x n / sum((o - 1) x D)
(constant: (o - 1) x ITL). Every request of the model is counted on both pools.

Limits: means over a window, not tails; queueing delay at high utilisation
and chunked-prefill splitting are ignored; the KV estimate ignores prefix
sharing; the KV transfer between P/D pools is not charged. It is a lower
bound on cost at full service, not a latency model.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from scalearena.controllers.base import StepModel

Tokens = Sequence[int] | np.ndarray  # one window's token counts, in schedule order


@dataclass(frozen=True)
class SlotCapacity:
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
                    outputs: Tokens, role: str = "both") -> float:
    """Summed service seconds of the requests under the constant latency model: each request's term
    (ttft_ms + max(0, o - 1) x itl_ms) x k / 1000, or with overhead + i x per-token prefill in place of
    ttft_ms, computed for the whole window at once (the settings are read once, not per request).
    ``role`` prefill keeps the first term only, decode the second."""
    f = float(lat.get("time_factor_under_load", 1.0))
    k = 1.0 if max_num_seqs <= 1 else 1.0 + (f - 1.0) * (slots - 1) / (max_num_seqs - 1)
    ttft_ms = float(lat.get("ttft_ms", 0.0))
    itl_ms = float(lat.get("itl_ms", 0.0))
    decode_ms = np.maximum(_ints(outputs) - 1, 0) * itl_ms * (role != "prefill")
    if role == "decode":
        return _sum_in_order(decode_ms * k / 1000.0)
    if ttft_ms > 0:
        return _sum_in_order((ttft_ms + decode_ms) * k / 1000.0)
    overhead = float(lat.get("prefill_overhead_ms", 0.0))
    per_token = float(lat.get("prefill_time_per_token_ms", 0.0))
    return _sum_in_order((overhead + _ints(inputs) * per_token + decode_ms) * k / 1000.0)


def _roofline_rate(step: StepModel, slots: int, inputs: Tokens, outputs: Tokens, role: str) -> float:
    """Requests per second one replica serves on the step model (module docstring), every request's
    prompt charged in full to the replica that holds it."""
    ins, outs = _ints(inputs), _ints(outputs)
    n = len(ins)
    ctx = _sum_in_order(ins + outs / 2) / n
    decode = step.step_s(0, 0.0, slots, slots * ctx)
    if role == "prefill":
        work = sum(step.step_s(i, i * i / 2, 0, 0.0) for i in ins.tolist())
        return n / max(work, 1e-9)
    if role == "decode":
        return slots * n / max(_sum_in_order(np.maximum(outs - 1, 0) * decode), 1e-9)
    n_dec, ctx_dec = slots - 1, (slots - 1) * ctx
    work = sum(step.step_s(i, i * i / 2, n_dec, ctx_dec) + max(0, m - slots) * decode / slots
               for i, m in zip(ins.tolist(), outs.tolist(), strict=True))
    return n / max(work, 1e-9)


def slot_capacity(
    engine: Mapping[str, Any],
    inputs: Tokens,
    outputs: Tokens,
    kv_target: float,
    default_ttft_ms: float,
    default_itl_ms: float,
    roofline: StepModel | None = None,
    role: str = "both",
) -> SlotCapacity:
    """SlotCapacity of one replica of ``role`` (both, prefill, decode) for this mix of requests
    (``inputs``/``outputs`` non-empty)."""
    max_num_seqs = int(engine.get("max_num_seqs") or 256)
    kv = kv_slots(engine, inputs, outputs, kv_target)
    slots = max(1, min(max_num_seqs, kv if kv is not None else max_num_seqs))
    lat = engine.get("latency") or {}
    kind = str(lat.get("kind", "default"))
    n = len(inputs)
    if kind == "roofline" and roofline is not None:
        rate = _roofline_rate(roofline, slots, inputs, outputs, role)
        return SlotCapacity(slots, kv, slots / rate, rate, kind)
    if kind == "constant":
        total = _constant_total(lat, slots, max_num_seqs, inputs, outputs, role)
    else:
        kind = "default"
        prefill = default_ttft_ms * (role != "decode")
        decode = np.maximum(_ints(outputs) - 1, 0) * default_itl_ms * (role != "prefill")
        total = _sum_in_order((prefill + decode) / 1000.0)
    service = max(total / n, 1e-6)
    return SlotCapacity(slots, kv, service, slots / service, kind)
