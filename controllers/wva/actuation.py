"""Actuation shaping: WVA's decisions as the Prometheus series an HPA or KEDA consumes.

Upstream WVA does not scale Deployments itself in the common path. It
publishes, per variant (labels ``variant_name``, ``namespace``,
``accelerator_type``):

- ``wva_desired_replicas`` (gauge) — the target; an HPA reads it as an
  External metric with target AverageValue 1 (via prometheus-adapter), or a
  KEDA ScaledObject with a ``prometheus`` trigger, threshold 1,
  activationThreshold 0;
- ``wva_current_replicas`` (gauge);
- ``wva_desired_ratio`` (gauge) — desired / current, and desired itself when
  current is 0 (a 0 -> N wake-up reads as ratio N, never a division by zero);
- ``wva_replica_scaling_total`` (counter) — scaling operations, with
  ``direction`` (up/down) and ``reason`` labels added.

Direct actuation (patching the scale subresource; upstream uses it for scale-
from-zero) reads ``Decision.desired_replicas`` instead. Both paths start from
the same decisions, so ``metric_samples`` is all a publishing actuator needs.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from scalearena.controllers.base import ClusterView, Decision

DESIRED = "wva_desired_replicas"
CURRENT = "wva_current_replicas"
RATIO = "wva_desired_ratio"
SCALING_TOTAL = "wva_replica_scaling_total"


@dataclass(frozen=True)
class MetricSample:
    name: str
    labels: Mapping[str, str]
    value: float


def desired_ratio(desired: int, current: int) -> float:
    return float(desired) if current == 0 else desired / current


ScalingKey = tuple[str, str, str, str]  # variant, accelerator, direction, reason


def scaling_key(d: Decision, accelerator: str) -> ScalingKey:
    """Counter labels of one scaling decision (the namespace is added when publishing)."""
    direction = "up" if d.desired_replicas > d.current_replicas else "down"
    reason = str(d.audit.get("trigger", d.reasons[0].rule))
    return (d.variant, accelerator, direction, reason)


def metric_samples(
    decisions: Iterable[Decision],
    view: ClusterView,
    namespace: str = "default",
    scaling_total: Mapping[ScalingKey, int] | None = None,
) -> list[MetricSample]:
    """The gauge values of these decisions (and the scaling counter, when given), ready to publish."""
    out: list[MetricSample] = []
    accel = {v.name: v.gpu for v in view.variants}
    for d in decisions:
        labels = {"variant_name": d.variant, "namespace": namespace, "accelerator_type": accel.get(d.variant, "")}
        out.append(MetricSample(DESIRED, labels, float(d.desired_replicas)))
        out.append(MetricSample(CURRENT, labels, float(d.current_replicas)))
        out.append(MetricSample(RATIO, labels, desired_ratio(d.desired_replicas, d.current_replicas)))
    for (variant, acc, direction, reason), n in sorted((scaling_total or {}).items()):
        labels = {"variant_name": variant, "namespace": namespace, "accelerator_type": acc,
                  "direction": direction, "reason": reason}
        out.append(MetricSample(SCALING_TOTAL, labels, float(n)))
    return out
