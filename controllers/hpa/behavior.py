"""HPA ``behavior``: stabilisation windows and scaling-rate policies (autoscaling/v2).

Follows ``normalizeDesiredReplicasWithBehaviors`` in kubernetes
pkg/controller/podautoscaler/horizontal.go:

1. Stabilise: the new recommendation is stored; over the scale-up window take
   the *lowest* recent recommendation, over the scale-down window the
   *highest*, and move the current count only as far as both allow.
2. Rate-limit: each policy allows ``Pods`` (absolute) or ``Percent`` change
   against the replica count at the start of its ``period_seconds`` (the
   current count minus what was added plus what was removed in that
   period); ``select_policy`` Max takes the most permissive policy, Min the
   least, Disabled forbids the direction. Then clamp to [min, max].

Time comparisons are strict (``timestamp.After(cutoff)``), so with a 15 s
sync and a 15 s policy period every sync may add the full 4 pods / 100 %.
The API-server defaults apply when a field is left out: scale-up
stabilisation 0 s, policies {Pods 4, Percent 100} per 15 s, select Max;
scale-down stabilisation 300 s (the controller's
``--horizontal-pod-autoscaler-downscale-stabilization``), {Percent 100} per
15 s, select Max.

An HPA without ``behavior`` (what KEDA generates when
``advanced.horizontalPodAutoscalerConfig.behavior`` is unset) runs the legacy
``normalizeDesiredReplicas`` instead (``normalize_legacy``): the highest
recommendation over the downscale window, then at most
``max(2 x current, 4)`` replicas per sync (``calculateScaleUpLimit``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

from pydantic import Field

from scalearena.contracts.limits import StrictSpec
from scalearena.controllers.base import Reason


class _Spec(StrictSpec):
    """Extra keys forbidden, frozen, NaN/inf and numbers past their unit's limit refused."""


class ScalingPolicy(_Spec):
    type: Literal["Pods", "Percent"] = Field(description="Pods: absolute change; Percent: share of current replicas.")
    value: int = Field(gt=0, description="Pods, or percent, allowed to change within one period.")
    period_seconds: int = Field(gt=0, le=1800, description="Window the change is counted over, seconds.")


class ScalingRules(_Spec):
    stabilization_window_seconds: int | None = Field(
        default=None, ge=0, le=3600, description="Look-back window of recommendations; null = direction default."
    )
    select_policy: Literal["Max", "Min", "Disabled"] | None = Field(
        default=None, description="Max: most permissive policy; Min: least; Disabled: never scale this way."
    )
    policies: list[ScalingPolicy] | None = Field(
        default=None, min_length=1, description="Rate policies; null = direction default."
    )
    tolerance: float | None = Field(
        default=None, ge=0, description="Per-direction tolerance (HPAConfigurableTolerance); null = global."
    )


class Behavior(_Spec):
    scale_up: ScalingRules = Field(default_factory=ScalingRules, description="Rules when growing.")
    scale_down: ScalingRules = Field(default_factory=ScalingRules, description="Rules when shrinking.")

    def is_unset(self) -> bool:
        """No window, select policy or policy in either direction: rendered, such a behavior is absent
        (tolerance alone is pruned from a ScaledObject), and upstream runs the legacy path."""
        return all(r.stabilization_window_seconds is None and r.select_policy is None and not r.policies
                   for r in (self.scale_up, self.scale_down))


DEFAULT_UP_POLICIES = (ScalingPolicy(type="Pods", value=4, period_seconds=15),
                       ScalingPolicy(type="Percent", value=100, period_seconds=15))
DEFAULT_DOWN_POLICIES = (ScalingPolicy(type="Percent", value=100, period_seconds=15),)


@dataclass(frozen=True)
class ResolvedRules:
    window_s: int
    select: str
    policies: tuple[ScalingPolicy, ...]


def resolve(rules: ScalingRules, up: bool, downscale_stabilization_s: int = 300) -> ResolvedRules:
    """Fill the API-server defaults for one direction."""
    window = rules.stabilization_window_seconds
    if window is None:
        window = 0 if up else downscale_stabilization_s
    policies = tuple(rules.policies) if rules.policies else (DEFAULT_UP_POLICIES if up else DEFAULT_DOWN_POLICIES)
    return ResolvedRules(window, rules.select_policy or "Max", policies)


@dataclass
class BehaviorState:
    """Per-target history: unstabilised recommendations and applied scale events."""

    recommendations: list[tuple[float, int]] = field(default_factory=list)
    up_events: list[tuple[float, int]] = field(default_factory=list)
    down_events: list[tuple[float, int]] = field(default_factory=list)
    seeded: bool = False

    def record_scale(self, now: float, before: int, after: int, keep_s: float) -> None:
        if after > before:
            self.up_events.append((now, after - before))
        elif after < before:
            self.down_events.append((now, before - after))
        self.up_events = [e for e in self.up_events if e[0] > now - keep_s]
        self.down_events = [e for e in self.down_events if e[0] > now - keep_s]


def _change_in_period(events: list[tuple[float, int]], now: float, period_s: float) -> int:
    return sum(change for t, change in events if t > now - period_s)


def _period_start(current: int, st: BehaviorState, now: float, period_s: float) -> int:
    """Replicas at the start of a policy period: undo the scale-ups and scale-downs made within it
    (upstream's getReplicasChangePerPeriod, applied in both directions)."""
    return current - _change_in_period(st.up_events, now, period_s) + _change_in_period(st.down_events, now, period_s)


def scale_up_limit(current: int, st: BehaviorState, rules: ResolvedRules, now: float) -> int:
    if rules.select == "Disabled":
        return current
    best: int | None = None
    for p in rules.policies:
        start = _period_start(current, st, now, p.period_seconds)
        proposed = start + p.value if p.type == "Pods" else math.ceil(start * (1 + p.value / 100))
        if best is None:
            best = proposed
        else:
            best = min(best, proposed) if rules.select == "Min" else max(best, proposed)
    return current if best is None else best


def scale_down_limit(current: int, st: BehaviorState, rules: ResolvedRules, now: float) -> int:
    if rules.select == "Disabled":
        return current
    best: int | None = None
    for p in rules.policies:
        start = _period_start(current, st, now, p.period_seconds)
        proposed = start - p.value if p.type == "Pods" else int(start * (1 - p.value / 100))
        if best is None:
            best = proposed
        else:
            best = max(best, proposed) if rules.select == "Min" else min(best, proposed)
    return current if best is None else best


def normalize(
    now: float,
    st: BehaviorState,
    up: ResolvedRules,
    down: ResolvedRules,
    current: int,
    desired: int,
    lo: int,
    hi: int,
) -> tuple[int, list[Reason]]:
    """Stabilise then rate-limit ``desired``; records the recommendation in ``st``.

    The first call seeds the history with the current count (upstream
    ``maybeInitScaleDownStabilizationWindow``), so an HPA that has just taken
    over a running target waits a full scale-down window before shrinking it.
    """
    if not st.seeded:
        st.recommendations.append((now, current))
        st.seeded = True
    stabilised, reasons = stabilize(now, st, up, down, current, desired)
    return limit_rate(now, st, up, down, current, stabilised, lo, hi, reasons)


def stabilize(now: float, st: BehaviorState, up: ResolvedRules, down: ResolvedRules, current: int,
              desired: int) -> tuple[int, list[Reason]]:
    """``stabilizeRecommendationWithBehaviors``: the lowest recommendation inside the scale-up window and the
    highest inside the scale-down window (``After(cutoff)``: strict) bound the move from ``current``;
    ``desired`` is recorded, recommendations older than both windows dropped."""
    reasons: list[Reason] = []
    up_rec, down_rec = desired, desired
    for t, rec in st.recommendations:
        if t > now - up.window_s:
            up_rec = min(up_rec, rec)
        if t > now - down.window_s:
            down_rec = max(down_rec, rec)
    stabilised = min(max(current, up_rec), down_rec)
    st.recommendations.append((now, desired))
    keep = max(up.window_s, down.window_s)
    # the one just recorded stays even with both windows at 0, as upstream keeps it (never read then)
    st.recommendations = [r for r in st.recommendations if r[0] > now - keep or r[0] == now]
    if stabilised != desired:
        which = "scale-up" if desired > current else "scale-down"
        agg = "lowest" if desired > current else "highest"
        window = up.window_s if desired > current else down.window_s
        reasons.append(Reason(
            "stabilisation",
            f"{which} stabilised: {agg} recommendation in the last {window} s is {stabilised} (wanted {desired})",
            {"recommendation": desired, "stabilised": stabilised, "window_s": window},
        ))
    return stabilised, reasons


def limit_rate(now: float, st: BehaviorState, up: ResolvedRules, down: ResolvedRules, current: int,
               stabilised: int, lo: int, hi: int, reasons: list[Reason]) -> tuple[int, list[Reason]]:
    """``convertDesiredReplicasWithBehaviorRate``: the scaling policies' rate limit (never past the current
    count the wrong way), then the replica bounds; appends the binding rule to ``reasons``."""
    result = stabilised
    if stabilised > current:
        limit = max(scale_up_limit(current, st, up, now), current)
        ceiling, rule = (limit, "rate_limit") if hi > limit else (hi, "clamp")
        if stabilised > ceiling:
            result = ceiling
            reasons.append(Reason(
                rule,
                f"scale-up to {stabilised} limited to {ceiling} "
                + ("by scale-up policies" if rule == "rate_limit" else "by max replicas"),
                {"wanted": stabilised, "limit": ceiling, "policy_limit": limit, "max_replicas": hi},
            ))
    elif stabilised < current:
        limit = min(scale_down_limit(current, st, down, now), current)
        floor, rule = (limit, "rate_limit") if lo < limit else (lo, "clamp")
        if stabilised < floor:
            result = floor
            reasons.append(Reason(
                rule,
                f"scale-down to {stabilised} limited to {floor} "
                + ("by scale-down policies" if rule == "rate_limit" else "by min replicas"),
                {"wanted": stabilised, "limit": floor, "policy_limit": limit, "min_replicas": lo},
            ))
    return result, reasons


LEGACY_SCALE_UP_FACTOR = 2.0  # horizontal.go scaleUpLimitFactor
LEGACY_SCALE_UP_MINIMUM = 4  # horizontal.go scaleUpLimitMinimum


def normalize_legacy(now: float, st: BehaviorState, window_s: float, current: int, desired: int,
                     lo: int, hi: int) -> tuple[int, list[Reason]]:
    """``normalizeDesiredReplicas`` (an HPA without ``behavior``): ``stabilizeRecommendation`` takes the
    highest recommendation not older than ``window_s`` (``!Before(cutoff)``: inclusive), then
    ``convertDesiredReplicasWithRules`` clamps to [min, min(max, max(2 x current, 4))]."""
    reasons: list[Reason] = []
    if not st.seeded:
        st.recommendations.append((now, current))
        st.seeded = True
    stabilised = max([desired, *(rec for t, rec in st.recommendations if t >= now - window_s)])
    st.recommendations = [r for r in st.recommendations if r[0] >= now - window_s] + [(now, desired)]
    if stabilised != desired:
        reasons.append(Reason(
            "stabilisation", f"scale-down stabilised: highest recommendation in the last {window_s:g} s is "
            f"{stabilised} (wanted {desired})", {"recommendation": desired, "stabilised": stabilised,
                                                  "window_s": window_s}))
    limit = int(max(LEGACY_SCALE_UP_FACTOR * current, LEGACY_SCALE_UP_MINIMUM))
    ceiling, rule = (limit, "rate_limit") if hi > limit else (hi, "clamp")
    if stabilised < lo:
        reasons.append(Reason("clamp", f"{stabilised} replicas limited to min replicas {lo}",
                              {"wanted": stabilised, "min_replicas": lo}))
        return lo, reasons
    if stabilised > ceiling:
        reasons.append(Reason(rule, f"scale-up to {stabilised} limited to {ceiling} by "
                              + ("the legacy scale-up limit max(2 x current, 4)" if rule == "rate_limit"
                                 else "max replicas"),
                              {"wanted": stabilised, "limit": ceiling, "policy_limit": limit, "max_replicas": hi}))
        return ceiling, reasons
    return stabilised, reasons


def longest_period(up: ResolvedRules, down: ResolvedRules) -> int:
    return max(p.period_seconds for p in (*up.policies, *down.policies))
