"""The SLA planner on a prefill/decode-disaggregated pool: each role sized on its own, as Dynamo's
disaggregated planner does (components/src/dynamo/planner/core/throughput_scaling.py:
``_compute_prefill_replicas``, ``_compute_decode_replicas``; core/budget.py ``proportional_clamp_pair``).

Every request of the model is prefilled on a ``prefill`` replica and decoded on a ``decode`` one (the
router's decode pool also takes ``both`` replicas: llm-d's decode profile picks among decode and
aggregated pods, harness/config/disagg_spec.py). So each pool gets the whole predicted request rate:

- prefill: a replica serves one prompt after another; t = the profiled TTFT of a prompt of the
  predicted ISL alone (batch 1), rate = 1 / t. Batching prompts does not raise it (their compute
  adds up, Dynamo: "a batch of B requests has wt ~ k B ISL, so rate = B / wt"). Replicas =
  max(ceil(rate / (1 / t)), min_endpoint) and, when one prompt alone misses the TTFT target, at least
  ceil(t / target) (Dynamo's latency floor).
- decode: the largest batch whose ITL meets its target, bounded as an aggregated replica's is
  (max_num_seqs - 1, the KV cache with room for the next request's prompt KV, the router's KV
  admission; controllers/planner_capacity.py), a request holding it OSL x ITL: rate = batch / (OSL x
  ITL). Replicas = max(ceil(rate / that), min_endpoint).

Within a role the demand goes to the lowest cost per request/s first (``hand_out``). A GPU budget
both pools exceed together is split in proportion to what each asked (Dynamo's
``proportional_clamp_pair``: prefill floor(GPUs_p x budget / total), at least its min_endpoint; decode
the rest), each role then cut to its share from its most expensive variant. The KV transfer between
the pools and the decider's short-prompt bypass (``non_cached_tokens``) are not modelled: every request
is counted on both pools, which over-provisions prefill when the decider keeps short prompts local.
"""
from __future__ import annotations

import math

from scalearena.controllers.base import ReplicaProfile, VariantView
from scalearena.controllers.planner_capacity import BatchCapacity, batch_capacity, hand_out


def prefill_capacity(profile: ReplicaProfile, isl: float, ttft_s: float) -> BatchCapacity:
    """One prefill replica's request rate at the predicted ISL (module docstring); ``limits`` holds the
    latency floor on the pool's replicas (1 when one prompt meets the target)."""
    t = max(1e-9, profile.ttft_s(isl, 1.0, [1])[0])
    floor = 1 if t <= ttft_s else math.ceil(t / ttft_s - 1e-9)
    return BatchCapacity(1, 1.0 / t, t, 0.0, 1, t <= ttft_s, "prefill", {"ttft_floor": floor})


def pd_capacities(variants: list[VariantView], isl: float, osl: float, ttft_s: float, itl_s: float,
                  kv_fill: float) -> dict[str, BatchCapacity]:
    """The capacity of every variant of a P/D model: prefill replicas by prompt throughput, the others
    (decode, and aggregated ones in the decode pool) as decode replicas."""
    out = {}
    for v in variants:
        assert v.profile is not None
        if v.role == "prefill":
            out[v.name] = prefill_capacity(v.profile, isl, ttft_s)
        else:
            out[v.name] = batch_capacity(v.profile, isl, osl, ttft_s, itl_s, kv_fill, v.admission,
                                           decode_only=True)
    return out


def _gpus(want: dict[str, int], vs: list[VariantView]) -> int:
    return sum(want[v.name] * v.gpus_per_replica for v in vs)


def hand_out_pd(demand_rps: float, variants: list[VariantView], caps: dict[str, BatchCapacity], min_endpoint: int,
                gpu_budget: int | None) -> tuple[dict[str, int], list[str]]:
    """Replicas per variant of a P/D model and what limited them (module docstring)."""
    pre = [v for v in variants if v.role == "prefill"]
    dec = [v for v in variants if v.role != "prefill"]
    floor_p = max([min_endpoint] + [caps[v.name].limits["ttft_floor"] for v in pre])
    want_p, notes_p = hand_out(demand_rps, pre, caps, floor_p, None)
    want_d, notes_d = hand_out(demand_rps, dec, caps, min_endpoint, None)
    notes = [f"prefill: {n}" for n in notes_p] + [f"decode: {n}" for n in notes_d]
    gp, gd = _gpus(want_p, pre), _gpus(want_d, dec)
    if gpu_budget is not None and gp + gd > gpu_budget:
        min_p = floor_p * min(v.gpus_per_replica for v in pre)
        min_d = min_endpoint * min(v.gpus_per_replica for v in dec)
        share_p = max(min_p, min(gpu_budget - min_d, math.floor(gp * gpu_budget / (gp + gd))))
        want_p, _ = hand_out(demand_rps, pre, caps, floor_p, share_p)
        want_d, _ = hand_out(demand_rps, dec, caps, min_endpoint, gpu_budget - _gpus(want_p, pre))
        notes.append(f"GPU budget {gpu_budget}: prefill {_gpus(want_p, pre)} / decode {_gpus(want_d, dec)} GPUs "
                     f"(asked {gp} / {gd})")
    return {**want_p, **want_d}, notes


def is_pd(variants: list[VariantView]) -> bool:
    return any(v.role == "prefill" for v in variants)
