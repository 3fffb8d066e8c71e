"""The signal stage: per-replica peak KV usage and waiting queue, and whether they can be trusted.

WVA reads ``max by (pod)(max_over_time(metric[1m]))`` for
``vllm:kv_cache_usage_perc`` and ``vllm:num_requests_waiting``: the peak over
a minute, not the instant value, so a replica that filled up between two
optimisation cycles still counts as saturated (safety first).

A variant's metrics are unavailable when the view says the backend could not
be read, when a query raises ``MetricsUnavailable``, or when the newest pod
sample is older than ``staleness_s``. The controller then holds the model's
last state (the MetricsAvailable gate). Series of pods that are no longer
ready (terminated within the window) are dropped, so "fewer replicas report
metrics than are ready" is a transition signal, not double counting.
"""
from __future__ import annotations

from dataclasses import dataclass

from scalearena.contracts.errors import MetricsUnavailable
from scalearena.contracts.series import KV_USAGE, NUM_WAITING
from scalearena.controllers.base import ClusterView, VariantView
from scalearena.controllers.wva.analyzer import ReplicaSample


@dataclass(frozen=True)
class VariantSignal:
    variant: str
    available: bool
    why: str  # why metrics are unavailable; empty when available
    samples: tuple[ReplicaSample, ...] = ()

    @property
    def reporting(self) -> int:
        return len(self.samples)


def read_variant(view: ClusterView, v: VariantView, window_s: float, staleness_s: float) -> VariantSignal:
    if not v.metrics_available:
        return VariantSignal(v.name, False, "metrics backend could not be read")
    if v.pods:
        newest = max(p.ts for p in v.pods)
        if view.now - newest > staleness_s:
            return VariantSignal(
                v.name, False, f"stale: newest pod sample {view.now - newest:.0f}s old (> {staleness_s:g}s)"
            )
    if v.ready == 0 and not v.pods:
        return VariantSignal(v.name, True, "")  # nothing serving, nothing to read
    try:
        kv = view.metrics.pod_max_over_time(v.name, KV_USAGE, window_s)
        queue = view.metrics.pod_max_over_time(v.name, NUM_WAITING, window_s)
    except MetricsUnavailable as e:
        return VariantSignal(v.name, False, f"query failed: {e}")
    live = {p.pod for p in v.pods}
    pods = sorted(p for p in kv if p in queue and (not live or p in live))
    samples = tuple(ReplicaSample(v.name, p, float(kv[p]), float(queue[p])) for p in pods)
    return VariantSignal(v.name, True, "", samples)


def transition_reasons(v: VariantView, signal: VariantSignal, last_desired: int | None) -> list[str]:
    """Why a variant counts as mid-transition (empty list: stable)."""
    out = []
    if last_desired is not None and last_desired != v.spec_replicas:
        out.append(f"{v.name}: desired({last_desired})!=spec({v.spec_replicas})")
    if v.spec_replicas != v.ready:
        out.append(f"{v.name}: spec({v.spec_replicas})!=ready({v.ready})")
    if v.pending > 0:
        out.append(f"{v.name}: pending({v.pending})")
    if signal.reporting < v.ready:
        out.append(f"{v.name}: metrics({signal.reporting})<ready({v.ready})")
    return out
