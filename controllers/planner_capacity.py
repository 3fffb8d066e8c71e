"""The SLA planner's arithmetic: replica capacity at the TTFT / ITL targets, the hand-out of demand
over variants, the GPU budget, and the load-based estimates. Pure functions of the profile.

Batch capacity (Dynamo's ``find_best_engine_agg_rps``, components/src/dynamo/planner/core/perf_model/agg.py):
for a mix of mean ``isl`` / ``osl`` tokens, a sequence holds ctx = isl + osl/2 KV tokens on average
(its prompt from admission, its output growing to osl). The batch b a replica is planned at is the
largest in [1, b_max] such that every batch up to it keeps the profiled TTFT <= the TTFT target and
ITL <= the ITL target, where b_max is the least of what bounds a replica's steady load. The planned
replica must still take the next arrival at once (a replica planned at its hard limit queues or
turns away every fluctuation above the mean; the one free place per replica is the pool's margin):

- ``max_num_seqs``: the engine runs no more sequences at once, so b <= max_num_seqs - 1;
- the gateway's admission (``VariantView.admission``): the router stops sending a pod requests once
  its KV usage reaches ``kv_threshold`` and rejects (or holds) when every pod is there, so the
  planned batch keeps the pod admissible: the largest b with b x ctx < kv_threshold x kv_tokens.
  (Dynamo's profiler sweeps the engine behind no such gate; here the scenario's router is part of
  what a replica sustains.)
- the KV cache: the engine admits the next arrival when its prompt's blocks are free, so the largest
  b with b x ctx + isl <= kv_fill x kv_tokens. ``kv_fill`` (the planner's default 1: the whole cache)
  below 1 keeps a margin for the batch's length fluctuation, which fills the cache before its mean
  does (vLLM then preempts). Dynamo bounds its sweep by floor(kv_tokens / ctx), no room left for
  the next prompt.

The queue limits (the router's ``queue_threshold``, the engine's ``max_waiting_queue``) do not lower
the batch: at the planned batch an arrival is admitted at once, so nothing waits in steady state;
they bound the burst a replica absorbs above it (what may wait before the pod counts as saturated,
or before the engine answers 429), which the decision reports as ``queue_room``.

By Little's law the replica then serves b / (TTFT(b) + (osl - 1) x ITL(b)) requests per second
(Dynamo divides by osl x ITL and leaves the prefill time out; with long prompts and short outputs
that overstates the rate). When even b = 1 misses a target the rate at b = 1 is used, as Dynamo
does, and ``meets_sla`` is False.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from scalearena.controllers.base import Admission, ReplicaProfile, VariantView


@dataclass(frozen=True)
class BatchCapacity:
    batch: int  # sequences a replica runs at the targets
    rate_rps: float  # requests per second one replica serves there
    ttft_s: float
    itl_s: float
    batch_max: int  # the least of ``limits``
    meets_sla: bool
    bound: str = "latency"  # what set the batch: latency | max_num_seqs | kv_cache | admission_kv
    limits: Mapping[str, int] = field(default_factory=dict)  # each bound on the batch, sequences


def batch_limits(profile: ReplicaProfile, isl: float, osl: float, kv_fill: float,
                 admission: Admission | None) -> dict[str, int]:
    """The bounds on a replica's planned batch (module docstring), at least 1 each."""
    ctx = max(1.0, isl + osl / 2)
    out = {"max_num_seqs": max(1, profile.max_num_seqs - 1),
           "kv_cache": max(1, math.floor((kv_fill * profile.kv_tokens - isl) / ctx + 1e-9))}
    if admission is not None:
        out["admission_kv"] = max(1, math.ceil(admission.kv_threshold * profile.kv_tokens / ctx - 1e-9) - 1)
    return out


def batch_capacity(profile: ReplicaProfile, isl: float, osl: float, ttft_s: float, itl_s: float,
                   kv_fill: float = 1.0, admission: Admission | None = None, decode_only: bool = False) -> BatchCapacity:
    """``decode_only``: a decode replica of a P/D pool (controllers/planner_pd.py): its prompts are
    prefilled elsewhere, so only the ITL target bounds the batch and a request holds it for OSL x ITL
    (Dynamo's decode rate: concurrency / (OSL x ITL))."""
    if decode_only:
        ttft_s = math.inf
    limits = batch_limits(profile, isl, osl, kv_fill, admission)
    b_max = max(1, min(limits.values()))
    batches = list(range(1, b_max + 1))
    ttfts, itls = profile.ttft_s(isl, osl, batches), profile.itl_s(isl, osl, batches)
    best = 0
    for i in range(b_max):
        if ttfts[i] > ttft_s or itls[i] > itl_s:
            break
        best = i + 1
    k = max(best, 1) - 1
    service = max(1.0, osl) * itls[k] if decode_only else ttfts[k] + max(0.0, osl - 1) * itls[k]
    bound = "latency" if best < b_max else min(limits, key=lambda n: (limits[n], _ORDER.index(n)))
    return BatchCapacity(k + 1, (k + 1) / max(service, 1e-9), ttfts[k], itls[k], b_max, best > 0, bound, limits)


_ORDER = ("admission_kv", "kv_cache", "max_num_seqs")  # which bound is named when several are equal


def hand_out(demand_rps: float, variants: list[VariantView], caps: dict[str, BatchCapacity],
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
