"""The limiter: constrained mode's greedy-by-saturation allocation of a GPU budget.

In unconstrained mode (the default) every model is solved alone and the
limiter is not involved. In constrained mode a fixed pool of GPUs is shared
by every model, so scale-ups compete:

1. take the models asking to scale up, ordered by ascending remaining spare
   capacity (the one closest to saturation first), then ascending cost of
   their cheapest candidate variant, then name;
2. hand out GPUs in whole replicas x ``gpus_per_replica`` until the budget is
   spent. A request that does not fit on its chosen variant spills to the
   model's next candidate (next cheapest variant) when that one fits — so
   H100 replicas start only when the A100 pool cannot absorb the load;
3. a variant whose share was cut short is marked ``limited`` with a reason.

GPUs in use are counted from pods that hold them: max(spec, ready+pending)
plus terminating replicas (a terminating pod keeps its GPUs until it is
gone, so a scale-down frees nothing in the cycle that decides it). The
budget is either one number for all GPU types (``gpu_budget``) or, when that
is unset, the per-type inventory from CapacityDiscovery (``gpu_capacity``).
A variant declaring ``gpus_per_replica`` <= 0 is counted as 1 GPU a replica,
as upstream's limiter does (a replica never comes free).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scalearena.controllers.base import VariantView
from scalearena.controllers.wva.optimizer import ModelPlan

ALL_TYPES = "*"


@dataclass(frozen=True)
class LimiterResult:
    targets: dict[str, int]  # variant -> replicas after the limiter (scale-up variants only)
    limited: dict[str, str]  # variant -> why it was cut short
    audit: dict[str, Any] = field(default_factory=dict)


def gpus_per_replica(v: VariantView) -> int:
    """GPUs one replica holds; <= 0 counts as 1 (upstream's limiter)."""
    return v.gpus_per_replica if v.gpus_per_replica > 0 else 1


def gpus_in_use(v: VariantView) -> int:
    return (max(v.spec_replicas, v.ready + v.pending) + v.terminating) * gpus_per_replica(v)


def budget_pools(gpu_budget: int | None, gpu_capacity: Mapping[str, int] | None) -> dict[str, int] | None:
    """GPU pools to allocate from: {"*": budget} or {gpu type: count}; None when nothing is known."""
    if gpu_budget is not None:
        return {ALL_TYPES: gpu_budget}
    if gpu_capacity is not None:
        return dict(gpu_capacity)
    return None


def limit(
    plans: Sequence[ModelPlan], variants: Sequence[VariantView], pools: Mapping[str, int]
) -> LimiterResult:
    """Greedy-by-saturation over the scale-up plans; other plans pass through untouched."""
    by_name = {v.name: v for v in variants}
    per_type = ALL_TYPES not in pools

    def pool(v: VariantView) -> str:
        return v.gpu if per_type else ALL_TYPES

    used: dict[str, int] = dict.fromkeys(pools, 0)
    for v in variants:
        used[pool(v)] = used.get(pool(v), 0) + gpus_in_use(v)
    free = {p: pools.get(p, 0) - used[p] for p in used}

    ups = [p for p in plans if p.action == "scale_up"]
    ups.sort(key=lambda p: (p.spare, by_name[p.candidates[0]].cost if p.candidates else 0.0, p.model))

    targets: dict[str, int] = {}
    limited: dict[str, str] = {}
    grants: list[dict[str, Any]] = []
    for plan in ups:
        wanted = {n: plan.targets[n] - plan.base[n] for n in plan.candidates if plan.targets[n] > plan.base[n]}
        left = plan.requested
        for name in plan.candidates:
            if left <= 0:
                break
            v = by_name[name]
            fit = max(0, free[pool(v)]) // gpus_per_replica(v)
            g = min(left, v.max_replicas - plan.base[name], fit)
            if g > 0:
                free[pool(v)] -= g * gpus_per_replica(v)
                targets[name] = plan.base[name] + g
                left -= g
            short = wanted.get(name, 0) - max(g, 0)
            if short > 0:
                limited[name] = (
                    f"limiter: {short} of {wanted[name]} replicas ({gpus_per_replica(v)} GPU each) did not fit; "
                    f"{max(0, free[pool(v)])} GPUs free in pool {pool(v)!r}"
                )
            grants.append({"model": plan.model, "variant": name, "wanted": wanted.get(name, 0),
                           "granted": max(g, 0), "pool": pool(v)})
        if left > 0:
            for name in wanted:
                limited.setdefault(name, f"limiter: budget spent, {left} replicas of {plan.model} not placed")

    audit = {
        "pools": {p: {"budget": pools.get(p, 0), "in_use": used[p], "free_after": free[p]} for p in used},
        "order": [p.model for p in ups],
        "grants": grants,
    }
    return LimiterResult(targets=targets, limited=limited, audit=audit)
