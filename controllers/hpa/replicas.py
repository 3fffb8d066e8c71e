"""The HPA replica calculator (kubernetes pkg/controller/podautoscaler/replica_calculator.go).

One proposal per metric; the HPA then takes the largest. Quantities are
handled as the Kubernetes metrics APIs hand them over: integer milli-units
(prometheus-adapter truncates ``value * 1000``), and the per-pod average is
an integer division, so the tolerance edge falls where upstream's does.

Pods metrics (``calcPlainMetricReplicas``), with the pod groups mapped from
the view:
- ready pods with a sample (``view.pods``) are the metrics;
- pods without a sample, ready or Running-but-not-Ready (a server still
  loading, ``view.starting``), are *missing*: on a scale-down they count as
  using exactly the target, on a scale-up as 0;
- Pending-phase pods (not bound yet: ``view.pending - view.starting``) are
  *unready*: ignored, but on a scale-up they count as 0 (upstream
  ``groupPods`` treats only ``PodPending`` so for Pods metrics);
- terminating pods are ignored.
If filling in the missing/unready pods flips the direction, or brings the
ratio within tolerance, the current count is kept. At a ratio of exactly 1.0
missing pods are left out (upstream fills them only when the ratio is above or
below 1.0). Replica counts are int32 in the API, so every proposal saturates
at ``MAX_INT32`` as upstream's conversion does.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

MAX_INT32 = 2**31 - 1


def replica_count(x: float) -> int:
    """``ceil(x)`` as an int32 replica count: saturates at ``MAX_INT32`` (inf included)."""
    return MAX_INT32 if x >= MAX_INT32 else math.ceil(x)


def milli(x: float) -> int:
    """A float metric value as the integer milli-quantity the adapter reports."""
    return int(x * 1000 + 1e-9)


@dataclass(frozen=True)
class Proposal:
    replicas: int
    usage: float  # average (Pods, External AverageValue) or total (External Value), in metric units
    ratio: float
    rule: str  # how the proposal was reached: scaled, tolerance, missing_pods, direction_flip, ...


def within(ratio: float, tol_up: float, tol_down: float) -> bool:
    """Whether ``ratio`` is inside the tolerance band around 1.0."""
    if ratio > 1.0:
        return ratio - 1.0 <= tol_up
    return 1.0 - ratio <= tol_down


def pods_metric_replicas(
    current: int, values: list[float], target: float, missing: int, unready: int, tol_up: float, tol_down: float
) -> Proposal:
    """``calcPlainMetricReplicas``; ``values`` are the ready pods' samples. Raises ValueError
    when no ready pod has a sample (upstream: "did not receive metrics for targeted pods")."""
    if not values:
        raise ValueError("did not receive metrics for any ready pod")
    tgt = milli(target)
    vals = [milli(v) for v in values]
    avg = sum(vals) // len(vals)
    ratio = avg / tgt
    usage = avg / 1000
    scale_up_with_unready = unready > 0 and ratio > 1.0
    if not scale_up_with_unready and missing == 0:
        if within(ratio, tol_up, tol_down):
            return Proposal(current, usage, ratio, "tolerance")
        return Proposal(replica_count(ratio * len(vals)), usage, ratio, "scaled")
    filled = list(vals)
    if missing and ratio != 1.0:  # at exactly 1.0 upstream fills in neither value
        filled += [tgt if ratio < 1.0 else 0] * missing
    if scale_up_with_unready:
        filled += [0] * unready
    new_ratio = (sum(filled) // len(filled)) / tgt
    if within(new_ratio, tol_up, tol_down):
        return Proposal(current, usage, new_ratio, "tolerance_after_missing")
    if (ratio < 1.0 < new_ratio) or (ratio > 1.0 > new_ratio):
        return Proposal(current, usage, new_ratio, "direction_flip")
    new = replica_count(new_ratio * len(filled))
    if (new_ratio < 1.0 and new > current) or (new_ratio > 1.0 and new < current):
        return Proposal(current, usage, new_ratio, "direction_flip")
    return Proposal(new, usage, new_ratio, "scaled_with_missing")


def external_value_replicas(
    spec: int, ready: int, value: float, target: float, tol_up: float, tol_down: float
) -> Proposal:
    """``GetExternalMetricReplicas`` (target type Value): ratio = total / target."""
    ratio = milli(value) / milli(target)
    if spec != 0:
        if within(ratio, tol_up, tol_down):
            return Proposal(spec, value, ratio, "tolerance")
        return Proposal(replica_count(ratio * ready), value, ratio, "scaled")
    return Proposal(replica_count(ratio), value, ratio, "from_zero")


def external_average_replicas(
    status_replicas: int, value: float, target: float, tol_up: float, tol_down: float
) -> Proposal:
    """``GetExternalPerPodMetricReplicas`` (target type AverageValue): desired =
    ceil(total / target) unless total / (target x current pods) is within tolerance."""
    total, tgt = milli(value), milli(target)
    if status_replicas == 0:
        if total == 0:  # upstream: 0/0 is NaN, never outside tolerance -> stays at 0
            return Proposal(0, 0.0, float("nan"), "tolerance")
        return Proposal(replica_count(total / tgt), value, math.inf, "scaled")
    ratio = total / (tgt * status_replicas)
    usage = math.ceil(total / status_replicas) / 1000
    if within(ratio, tol_up, tol_down):
        return Proposal(status_replicas, usage, ratio, "tolerance")
    return Proposal(replica_count(total / tgt), usage, ratio, "scaled")
