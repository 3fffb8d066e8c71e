"""The SLA planner's arithmetic: replica capacity at the TTFT / ITL targets, the hand-out of demand
over variants, the GPU budget, and the load-based estimates. Pure functions of the profile.

Capacity (Dynamo's ``find_best_engine_agg_rps``, perf_model/agg.py): for a mix of mean ``isl`` /
``osl`` tokens, the largest batch b in [1, b_max] such that every batch up to it keeps the
profiled TTFT <= ttft target and ITL <= itl target, with b_max = min(max_num_seqs,
floor(kv_tokens / (isl + osl/2))) (the KV cache holds b sequences of mean context isl + osl/2).
By Little's law the replica then serves b / (TTFT(b) + (osl - 1) x ITL(b)) requests per second
(Dynamo divides by osl x ITL and leaves the prefill time out; with long prompts and short outputs
that overstates the rate). When even b = 1 misses a target the rate at b = 1 is used, as Dynamo
does, and ``meets_sla`` is False.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from .base import ReplicaProfile, VariantView


@dataclass(frozen=True)
class Capacity:
    batch: int  # sequences a replica runs at the targets
    rate_rps: float  # requests per second one replica serves there
    ttft_s: float
    itl_s: float
    batch_max: int  # the KV / max_num_seqs bound on the batch
    meets_sla: bool


def replica_capacity(profile: ReplicaProfile, isl: float, osl: float, ttft_s: float, itl_s: float) -> Capacity:
    kv_bound = math.floor(profile.kv_tokens / max(1.0, isl + osl / 2))
    b_max = max(1, min(profile.max_num_seqs, kv_bound))
    batches = list(range(1, b_max + 1))
    ttfts, itls = profile.ttft_s(isl, osl, batches), profile.itl_s(isl, osl, batches)
    best = 0
    for i in range(b_max):
        if ttfts[i] > ttft_s or itls[i] > itl_s:
            break
        best = i + 1
    k = max(best, 1) - 1
    service = ttfts[k] + max(0.0, osl - 1) * itls[k]
    return Capacity(k + 1, (k + 1) / max(service, 1e-9), ttfts[k], itls[k], b_max, best > 0)


def hand_out(demand_rps: float, variants: list[VariantView], caps: dict[str, Capacity],
             min_endpoint: int, gpu_budget: int | None) -> tuple[dict[str, int], list[str]]:
    """Replicas per variant: the demand goes to the lowest cost per request/s first, each variant up to
    its max; at least ``min_endpoint`` replicas for the model (on the cheapest); then the GPU budget cuts
    from the most expensive per request/s. Returns the counts and what limited them."""
    order = sorted(variants, key=lambda v: (v.cost / caps[v.name].rate_rps, v.cost, v.name))
    want = {v.name: 0 for v in variants}
    left, notes = demand_rps, []
    for v in order:
        mu = caps[v.name].rate_rps
        n = min(v.max_replicas, max(0, math.ceil(left / mu - 1e-9)))
        want[v.name] = n
        left = max(0.0, left - n * mu)
    if left > 1e-9:
        notes.append(f"{left:.2f} req/s beyond every variant's max_replicas")
    if order and sum(want.values()) < min_endpoint:
        cheapest = order[0]
        want[cheapest.name] = min(cheapest.max_replicas, want[cheapest.name] + min_endpoint - sum(want.values()))
    if gpu_budget is not None:
        for v in reversed(order):
            while sum(want[u.name] * u.gpus_per_replica for u in variants) > gpu_budget and want[v.name] > 0:
                want[v.name] -= 1
                if f"GPU budget {gpu_budget}" not in notes:
                    notes.append(f"GPU budget {gpu_budget}")
    return want, notes


def load_estimates(profile: ReplicaProfile, v: VariantView, isl: float, osl: float) -> tuple[list[float], list[float]]:
    """Per ready pod, the TTFT a new arrival would see and the ITL of its running batch, from its observed
    load (Dynamo's load-based mode estimates both from the engine's queued and scheduled work): TTFT =
    the profiled TTFT at its running batch plus one service time per request already waiting, spread over
    the batch slots; ITL = the profiled ITL at running + waiting sequences (capped at max_num_seqs)."""
    ttfts, itls = [], []
    for p in v.pods:
        running = max(1, p.running)
        t_run = profile.ttft_s(isl, osl, [running])[0]
        i_run = profile.itl_s(isl, osl, [min(profile.max_num_seqs, running + p.waiting)])[0]
        service = t_run + max(0.0, osl - 1) * profile.itl_s(isl, osl, [running])[0]
        ttfts.append(t_run + p.waiting * service / running)
        itls.append(i_run)
    return ttfts, itls
