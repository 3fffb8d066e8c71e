"""The cost-aware optimizer: which variant of a model gains or loses a replica.

The analyzer says *whether* a model needs capacity; the optimizer says *where*.
Upstream WVA's rule, per model, in unconstrained mode (every model solved
alone, capacity assumed infinite):

- scale up: +1 replica on the cheapest variant (``variantCost``) that has no
  pending pods and is below its max; ties go to the first name. Cheap
  variants (A100 at 1.0) fill before dear ones (H100 at 2.5).
- scale down: -1 replica from the most expensive variant that has more than
  one replica (and more than its min); ties go to the last name, mirroring
  the scale-up order as upstream does.

With the opt-in headroom rule the scale-up size is not fixed at 1: the model
is sized so that its summed load plus a buffer delta fits under the per-
replica capacity (tau_m - gamma_m), and the deficit is placed cheapest-first,
filling each variant to its max before the next.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from scalearena.controllers.base import VariantView
from scalearena.controllers.wva.analyzer import ModelAnalysis
from scalearena.controllers.wva.config import HeadroomSpec

PlanAction = Literal["scale_up", "scale_down", "hold"]


@dataclass(frozen=True)
class ModelPlan:
    """The optimizer's proposal for one model, before scale-to-zero and the limiter."""

    model: str
    base: Mapping[str, int]  # replicas each variant starts from (spec replicas)
    targets: Mapping[str, int]
    action: PlanAction
    reason: str
    requested: int = 0  # replicas the scale-up asked for in total
    candidates: tuple[str, ...] = ()  # scale-up variants, cheapest first (the limiter spills along it)
    spare: float = 0.0  # normalised spare capacity (limiter ordering)
    alerts: tuple[str, ...] = ()
    detail: Mapping[str, Any] = field(default_factory=dict)

    def to_audit(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "reason": self.reason,
            "base": dict(self.base),
            "targets": dict(self.targets),
            "requested": self.requested,
            "candidates": list(self.candidates),
            **dict(self.detail),
        }


def scale_up_candidates(variants: Sequence[VariantView], base: Mapping[str, int]) -> list[VariantView]:
    """Variants that may take a replica: no pending pods, below max; cheapest first, then by name."""
    ok = [v for v in variants if v.pending == 0 and base[v.name] < v.max_replicas]
    return sorted(ok, key=lambda v: (v.cost, v.name))


def scale_down_candidate(variants: Sequence[VariantView], base: Mapping[str, int]) -> VariantView | None:
    """Most expensive variant with more than one replica (and above its min); ties: last name."""
    ok = [v for v in variants if base[v.name] > max(1, v.min_replicas)]
    if not ok:
        return None
    return max(ok, key=lambda v: (v.cost, v.name))


def place(replicas: int, candidates: Sequence[VariantView], base: Mapping[str, int]) -> dict[str, int]:
    """Spread ``replicas`` over the candidates cheapest-first, each up to its max -> {variant: added}."""
    added: dict[str, int] = {}
    left = replicas
    for v in candidates:
        if left <= 0:
            break
        take = min(left, v.max_replicas - base[v.name])
        if take > 0:
            added[v.name] = take
            left -= take
    return added


def headroom_replicas(analysis: ModelAnalysis, headroom: HeadroomSpec) -> tuple[int, dict[str, Any]]:
    """Replicas to add so that load + delta fits under the per-replica capacity tau_m - gamma_m."""
    t = analysis.thresholds
    cap_kv, cap_q = t.tau_kv - t.gamma_kv, t.tau_q - t.gamma_q
    # ceil with a small tolerance so that 2.0000000001 (float noise) stays 2
    need_kv = math.ceil((analysis.load_kv + headroom.delta_kv) / cap_kv - 1e-9)
    need_q = math.ceil((analysis.load_q + headroom.delta_q) / cap_q - 1e-9)
    need = max(need_kv, need_q)
    add = min(headroom.max_step, max(1, need - analysis.replicas))
    return add, {"headroom_needed_kv": need_kv, "headroom_needed_q": need_q, "headroom_add": add,
                 "headroom_delta_kv": headroom.delta_kv, "headroom_delta_q": headroom.delta_q}


def optimize_model(
    analysis: ModelAnalysis, variants: Sequence[VariantView], headroom: HeadroomSpec
) -> ModelPlan:
    """Unconstrained, cost-aware targets for one model that is not in transition."""
    base = {v.name: v.spec_replicas for v in variants}
    common: dict[str, Any] = {"model": analysis.model, "base": base, "spare": analysis.normalised_spare}

    if analysis.scale_up:
        cands = scale_up_candidates(variants, base)
        requested, detail = (headroom_replicas(analysis, headroom) if headroom.enabled
                             else (1, {"rule": "plus_one"}))
        if headroom.enabled:
            detail["rule"] = "headroom"
        if not cands:
            msg = f"scale-up wanted ({analysis.scale_up_reason}) but every variant is at max or has pending pods"
            return ModelPlan(**common, targets=dict(base), action="hold", reason=msg, requested=requested,
                             alerts=(msg,), detail=detail)
        added = place(requested, cands, base)
        targets = {n: base[n] + added.get(n, 0) for n in base}
        where = ", ".join(f"+{k} {n}" for n, k in added.items())
        return ModelPlan(**common, targets=targets, action="scale_up", requested=requested,
                         candidates=tuple(v.name for v in cands),
                         reason=f"{analysis.scale_up_reason}: {where} (cheapest first)", detail=detail)

    if analysis.scale_down_safe:
        victim = scale_down_candidate(variants, base)
        if victim is not None:
            targets = dict(base)
            targets[victim.name] -= 1
            return ModelPlan(**common, targets=targets, action="scale_down",
                             reason=f"scale-down safe ({analysis.scale_down_reason}): -1 {victim.name} "
                                    f"(most expensive, cost {victim.cost:g})")
        return ModelPlan(**common, targets=dict(base), action="hold",
                         reason="scale-down safe but no variant has more than one replica above its min")

    return ModelPlan(**common, targets=dict(base), action="hold",
                     reason=f"capacity adequate; no scale-down: {analysis.scale_down_reason}")
