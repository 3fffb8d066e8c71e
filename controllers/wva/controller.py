"""``wva``: the llm-d Workload Variant Autoscaler, re-implemented as a pure policy.

One optimisation cycle (every ``period_s``, 30 s upstream) runs the upstream
pipeline, each stage leaving its step in every decision's audit:

  gates     TargetResolved (the Deployment exists) and MetricsAvailable
            (backend reachable, data fresh); a failed gate holds the last
            state — never a scale-down, never a scale to zero.
  signal    max_over_time[1m] KV usage and waiting queue per replica.
  transition  any variant of a model mid-transition -> no new decision.
  analyzer  per-replica saturation, spare capacity, scale-down safety.
  optimizer cost-aware: +1 on the cheapest variant, -1 on the dearest.
  scale-to-zero  idle models to 0, or keep the cheapest variant at 1.
  limiter   constrained mode: greedy-by-saturation under a GPU budget.
  actuator  the decision; ``metric_samples`` turns decisions into the
            ``wva_*`` series an HPA/KEDA acts on.

A fast loop (``decide_fast``, every 100 ms) wakes models at 0 replicas as soon
as requests queue at the gateway. Policy state — last desired replicas,
conditions, when each model was first seen, the scaling counter — depends
only on the sequence of (now, view) calls.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any, ClassVar

from scalearena.controllers.base import AutoscalerBase, ClusterView, Decision, Reason, VariantView, clamp
from scalearena.controllers.wva.actuation import MetricSample, ScalingKey, metric_samples, scaling_key
from scalearena.controllers.wva.analyzer import analyze
from scalearena.controllers.wva.config import WVAConfig
from scalearena.controllers.wva.limiter import budget_pools, limit
from scalearena.controllers.wva.optimizer import ModelPlan, optimize_model
from scalearena.controllers.wva.scale_to_zero import cheapest, enforce, wake_from_zero
from scalearena.controllers.wva.signals import read_variant, transition_reasons
from scalearena.controllers.wva.status import (
    METRICS_AVAILABLE,
    OPTIMIZATION_READY,
    TARGET_RESOLVED,
    ConditionBook,
)

__all__ = ["WVA", "WVAConfig"]


class WVA(AutoscalerBase):
    kind: ClassVar[str] = "wva"
    config: WVAConfig

    def __init__(self, config: WVAConfig) -> None:
        super().__init__(config)
        self.fast_period_s = config.fast_period_s
        self.actuation = config.actuation  # harness.control.actuation: how a decision reaches the Deployment
        self.conditions = ConditionBook()
        self.scaling_total: dict[ScalingKey, int] = {}
        self._last_desired: dict[str, int] = {}
        self._first_seen: dict[str, float] = {}

    # ---- the optimisation loop ---------------------------------------------------------------

    def decide(self, now: float, view: ClusterView) -> list[Decision]:
        cfg = self.config
        out: list[Decision] = []
        planned: list[tuple[list[VariantView], ModelPlan, dict[str, Any], list[Reason]]] = []
        for model, variants in sorted(view.by_model().items()):
            self._first_seen.setdefault(model, now)
            active = [v for v in variants if v.target_exists]
            for v in variants:
                if not v.target_exists:
                    out.append(self._target_missing(now, v))
            if not active:
                continue
            for v in active:
                self.conditions.set(v.name, TARGET_RESOLVED, True, "TargetFound", "scale target exists", now)

            signals = {v.name: read_variant(view, v, cfg.metric_window_s, cfg.staleness_s) for v in active}
            for v in active:
                s = signals[v.name]
                self.conditions.set(v.name, METRICS_AVAILABLE, s.available,
                                    "MetricsFound" if s.available else "MetricsMissing", s.why or "fresh", now)
            missing = [f"{n}: {s.why}" for n, s in signals.items() if not s.available]
            if missing:
                msg = "MetricsAvailable=False, holding last state: " + "; ".join(missing)
                out += self._hold_model(now, active, "wva.metrics_available", msg, "MetricsUnavailable", False)
                continue
            blocked = [r for v in active for r in transition_reasons(v, signals[v.name], self._last_desired.get(v.name))]
            if blocked:
                msg = "model in transition, no new decision: " + "; ".join(blocked)
                out += self._hold_model(now, active, "wva.transition", msg, "ModelInTransition", True)
                continue

            thresholds = cfg.thresholds(model)
            analysis = analyze(model, [s for v in active for s in signals[v.name].samples], thresholds)
            if model in wake_from_zero(active, view.router_queue):
                plan = self._wake_plan(model, active, view.router_queue[model])
            else:
                plan = optimize_model(analysis, active, cfg.headroom)
            enabled, retention = cfg.scale_to_zero_for(model)
            zero = enforce(model, plan.targets, active, enabled=enabled, retention_s=retention,
                           observed_s=now - self._first_seen[model], metrics=view.metrics,
                           router_queue=view.router_queue.get(model, 0), scaling_up=plan.action == "scale_up")
            reasons = [
                Reason("wva.analyzer", _analyzer_message(analysis), analysis.numbers()),
                Reason("wva.optimizer", plan.reason, {"action": plan.action, "targets": dict(plan.targets)}),
            ]
            trigger = "saturation" if plan.action != "hold" else "none"
            if plan.detail.get("rule") == "scale_from_zero":
                trigger = "scale_from_zero"
            if zero.targets != dict(plan.targets):
                up = sum(zero.targets.values()) > sum(plan.targets.values())
                plan = replace(plan, targets=zero.targets, action="hold", reason=zero.reason)
                trigger = "keep_one" if up else "scale_to_zero"
            if zero.reason:
                reasons.append(Reason("wva.scale_to_zero", zero.reason, dict(zero.audit)))
            audit = {"model": model, "trigger": trigger, "analyzer": analysis.to_audit(),
                     "optimizer": plan.to_audit(), "scale_to_zero": zero.audit, "alerts": list(plan.alerts)}
            planned.append((active, plan, audit, reasons))

        out += self._finish(now, view, planned)
        return out

    def _finish(self, now: float, view: ClusterView,
                planned: list[tuple[list[VariantView], ModelPlan, dict[str, Any], list[Reason]]]) -> list[Decision]:
        """Limiter (constrained mode), clamping, conditions, bookkeeping."""
        limited: dict[str, str] = {}
        granted: dict[str, int] = {}
        limiter_audit: dict[str, Any] = {"mode": "unconstrained"}
        if self.config.mode == "constrained":
            pools = budget_pools(self.config.gpu_budget, view.gpu_capacity)
            if pools is None:
                limiter_audit = {"mode": "constrained", "skipped": "no GPU budget and no discovered capacity"}
            else:
                result = limit([p for _, p, _, _ in planned], [v for v in view.variants if v.target_exists], pools)
                granted, limited = result.targets, result.limited
                limiter_audit = {"mode": "constrained", **result.audit}
        out = []
        for active, plan, audit, reasons in planned:
            for v in active:
                target = plan.targets[v.name]
                if self.config.mode == "constrained" and plan.action == "scale_up" and "pools" in limiter_audit:
                    target = granted.get(v.name, plan.base[v.name])
                vreasons = list(reasons)
                if v.name in limited:
                    vreasons.append(Reason("wva.limiter", limited[v.name], {"wanted": plan.targets[v.name]}))
                desired = clamp(target, v.min_replicas, v.max_replicas)
                if desired != target:
                    vreasons.append(Reason("wva.bounds", f"target {target} clamped to [{v.min_replicas}, "
                                           f"{v.max_replicas}]", {"target": target, "desired": desired}))
                self.conditions.set(v.name, OPTIMIZATION_READY, True, "OptimizationSucceeded",
                                    plan.reason, now)
                out.append(self._emit(v, desired, vreasons, {**audit, "limiter": limiter_audit},
                                      limited=v.name in limited, alerts=tuple(plan.alerts)))
        return out

    # ---- the fast scale-from-zero loop -------------------------------------------------------

    def decide_fast(self, now: float, view: ClusterView) -> list[Decision]:
        active = [v for v in view.variants if v.target_exists]
        wake = {m: v for m, v in wake_from_zero(active, view.router_queue).items()
                if self._last_desired.get(v.name, 0) < 1}
        if not wake:
            return []
        plans = {m: self._wake_plan(m, [v for v in active if v.model == m], view.router_queue[m]) for m in wake}
        granted = {p.candidates[0]: 1 for p in plans.values() if p.candidates}
        limiter_audit: dict[str, Any] = {"mode": self.config.mode}
        pools = budget_pools(self.config.gpu_budget, view.gpu_capacity)
        if self.config.mode == "constrained" and pools is not None:
            result = limit(list(plans.values()), active, pools)
            granted, limiter_audit = result.targets, {"mode": "constrained", **result.audit}
        out = []
        for model, plan in sorted(plans.items()):
            for name, n in granted.items():
                v = view.variant(name)
                if v.model != model or n < 1:
                    continue
                reasons = [Reason("wva.scale_from_zero", plan.reason,
                                  {"router_queue": view.router_queue[model], "cost": v.cost})]
                audit = {"model": model, "trigger": "scale_from_zero", "actuation": "direct",
                         "optimizer": plan.to_audit(), "limiter": limiter_audit}
                out.append(self._emit(v, clamp(n, v.min_replicas, v.max_replicas), reasons, audit))
        return out

    # ---- actuation shaping -------------------------------------------------------------------

    def metric_samples(self, decisions: Sequence[Decision], view: ClusterView,
                       namespace: str = "default") -> list[MetricSample]:
        """``wva_desired_replicas`` / ``wva_current_replicas`` / ``wva_desired_ratio`` for these
        decisions plus the cumulative ``wva_replica_scaling_total``, labelled for Prometheus."""
        return metric_samples(decisions, view, namespace, self.scaling_total)

    # ---- helpers -----------------------------------------------------------------------------

    def _wake_plan(self, model: str, variants: list[VariantView], queued: int) -> ModelPlan:
        order = sorted((v for v in variants if v.max_replicas >= 1), key=lambda v: (v.cost, v.name))
        base = {v.name: v.spec_replicas for v in variants}
        pick = cheapest(variants)
        targets = dict(base)
        if pick is not None:
            targets[pick.name] = 1
        return ModelPlan(model=model, base=base, targets=targets, action="scale_up", requested=1,
                         candidates=tuple(v.name for v in order), spare=0.0, detail={"rule": "scale_from_zero"},
                         reason=f"gateway queue {queued} > 0 with 0 replicas: wake cheapest variant "
                                f"{pick.name if pick else '-'}")

    def _emit(self, v: VariantView, desired: int, reasons: list[Reason], audit: dict[str, Any],
              *, limited: bool = False, alerts: tuple[str, ...] = ()) -> Decision:
        self._last_desired[v.name] = desired
        d = Decision(variant=v.name, current_replicas=v.spec_replicas, desired_replicas=desired,
                     reasons=tuple(reasons), alerts=alerts, limited=limited,
                     audit={**audit, "conditions": self.conditions.audit(v.name)})
        if desired != v.spec_replicas:
            key = scaling_key(d, v.gpu)
            self.scaling_total[key] = self.scaling_total.get(key, 0) + 1
        return d

    def _hold_model(self, now: float, variants: list[VariantView], rule: str, msg: str,
                    ready_reason: str, ready: bool) -> list[Decision]:
        out = []
        for v in variants:
            self.conditions.set(v.name, OPTIMIZATION_READY, ready, ready_reason, msg, now)
            held = self._last_desired.get(v.name, v.spec_replicas)
            out.append(self._emit(v, held, [Reason(rule, msg, {"held_at": held})],
                                  {"model": v.model, "trigger": "none", "gate": rule}))
        return out

    def _target_missing(self, now: float, v: VariantView) -> Decision:
        msg = f"TargetNotFound: scale target of {v.name} does not exist, actuation paused"
        self.conditions.set(v.name, TARGET_RESOLVED, False, "TargetNotFound", msg, now)
        self.conditions.set(v.name, OPTIMIZATION_READY, False, "TargetNotFound", msg, now)
        d = Decision(variant=v.name, current_replicas=v.spec_replicas, desired_replicas=v.spec_replicas,
                     reasons=(Reason("wva.target_resolved", msg, {"target_exists": False}),),
                     audit={"model": v.model, "trigger": "none", "gate": "wva.target_resolved",
                            "conditions": self.conditions.audit(v.name)})
        return d


def _analyzer_message(a: Any) -> str:
    head = (f"{len(a.saturated)}/{a.replicas} replicas saturated; avg spare kv {a.avg_spare_kv:.3f} "
            f"(gamma {a.thresholds.gamma_kv:g}), queue {a.avg_spare_q:.2f} (gamma {a.thresholds.gamma_q:g})")
    if a.scale_up:
        return f"{head}; scale-up: {a.scale_up_reason}"
    return f"{head}; scale-down {'safe' if a.scale_down_safe else 'unsafe'}: {a.scale_down_reason}"
