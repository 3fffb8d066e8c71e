"""Status conditions of each VariantAutoscaling: TargetResolved, MetricsAvailable, OptimizationReady.

Upstream WVA reports its readiness gates as Kubernetes-style conditions on the
VariantAutoscaling status; only conditions and the desired allocation are
written there, never ephemeral metrics (saves API-server writes). Here they
live on the policy object (``WVA.conditions``) and are copied into each
decision's audit. ``last_transition_time`` moves only when a condition's
status flips, as in Kubernetes, and is virtual time (the ``now`` the harness
passed in), never the wall clock.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

TARGET_RESOLVED = "TargetResolved"
METRICS_AVAILABLE = "MetricsAvailable"
OPTIMIZATION_READY = "OptimizationReady"

Status = Literal["True", "False"]


@dataclass(frozen=True)
class Condition:
    type: str
    status: Status
    reason: str
    message: str
    last_transition_time: float

    def to_dict(self) -> dict[str, Any]:
        """``dataclasses.asdict``'s dict, built directly (asdict deep-copies each value: a third of a
        decision's audit cost, and these are all strings and a float)."""
        return {"type": self.type, "status": self.status, "reason": self.reason, "message": self.message,
                "last_transition_time": self.last_transition_time}


class ConditionBook:
    """Conditions per variant, keeping the last transition time across updates."""

    def __init__(self) -> None:
        self._by_variant: dict[str, dict[str, Condition]] = {}

    def set(self, variant: str, type_: str, ok: bool, reason: str, message: str, now: float) -> None:
        status: Status = "True" if ok else "False"
        conds = self._by_variant.setdefault(variant, {})
        prev = conds.get(type_)
        since = prev.last_transition_time if prev is not None and prev.status == status else now
        conds[type_] = Condition(type_, status, reason, message, since)

    def get(self, variant: str, type_: str) -> Condition | None:
        return self._by_variant.get(variant, {}).get(type_)

    def of(self, variant: str) -> dict[str, Condition]:
        return dict(self._by_variant.get(variant, {}))

    def audit(self, variant: str) -> dict[str, dict[str, Any]]:
        return {t: c.to_dict() for t, c in self._by_variant.get(variant, {}).items()}

    def __getitem__(self, variant: str) -> dict[str, Condition]:
        return self.of(variant)

    def __contains__(self, variant: object) -> bool:
        return variant in self._by_variant
