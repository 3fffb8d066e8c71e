"""VariantAutoscaling status: conditions and the last decision, nothing ephemeral.

Upstream WVA keeps per-pod metrics out of the resource status: a status
write per scrape per variant would load the API server for nothing a
Prometheus query cannot answer. So the status holds the readiness gates
(TargetResolved, MetricsAvailable, OptimizationReady), the desired and
current replica counts and how the decision was actuated — and it is written
only when one of those changes.

Conditions follow metav1.Condition: lastTransitionTime moves only when the
status flips, reasons are CamelCase identifiers.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

TARGET_RESOLVED = "TargetResolved"
METRICS_AVAILABLE = "MetricsAvailable"
OPTIMIZATION_READY = "OptimizationReady"


def rfc3339(epoch_s: float) -> str:
    return datetime.fromtimestamp(epoch_s, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Condition:
    type: str
    status: bool | None  # None = Unknown
    reason: str
    message: str

    @property
    def status_str(self) -> str:
        return "Unknown" if self.status is None else ("True" if self.status else "False")


def merge_conditions(old: list[dict[str, Any]], new: list[Condition], now_s: float,
                     generation: int | None) -> list[dict[str, Any]]:
    """New conditions laid over the old ones, keeping lastTransitionTime when status holds."""
    by_type = {c["type"]: dict(c) for c in old}
    for c in new:
        prev = by_type.get(c.type)
        ltt = prev["lastTransitionTime"] if prev and prev.get("status") == c.status_str else rfc3339(now_s)
        entry: dict[str, Any] = {"type": c.type, "status": c.status_str, "reason": c.reason,
                                 "message": c.message[:32768], "lastTransitionTime": ltt}
        if generation is not None:
            entry["observedGeneration"] = generation
        by_type[c.type] = entry
    order = [TARGET_RESOLVED, METRICS_AVAILABLE, OPTIMIZATION_READY]
    return sorted(by_type.values(), key=lambda c: (order.index(c["type"]) if c["type"] in order else 99, c["type"]))


def build_status(old_status: dict[str, Any] | None, *, conditions: list[Condition], desired: int | None,
                 current: int, reason: str, applied: bool, mode: str, now_s: float,
                 generation: int | None) -> dict[str, Any]:
    old = old_status or {}
    status: dict[str, Any] = {
        "conditions": merge_conditions(old.get("conditions", []), conditions, now_s, generation),
        "currentAlloc": {"numReplicas": current},
        "actuation": {"applied": applied, "mode": mode},
    }
    if generation is not None:
        status["observedGeneration"] = generation
    prev_desired = old.get("desiredOptimizedAlloc")
    if desired is not None:
        status["desiredOptimizedAlloc"] = {"numReplicas": desired, "lastRunTime": rfc3339(now_s),
                                           "reason": reason[:1024]}
    elif prev_desired:
        status["desiredOptimizedAlloc"] = prev_desired
    return status


def _comparable(status: dict[str, Any]) -> Any:
    """A status without timestamps: what decides whether a write is needed."""
    conds = [{k: v for k, v in c.items() if k != "lastTransitionTime"} for c in status.get("conditions", [])]
    desired = {k: v for k, v in (status.get("desiredOptimizedAlloc") or {}).items() if k != "lastRunTime"}
    return (conds, desired, status.get("currentAlloc"), status.get("actuation"), status.get("observedGeneration"))


def status_changed(old: dict[str, Any] | None, new: dict[str, Any]) -> bool:
    return _comparable(old or {}) != _comparable(new)
