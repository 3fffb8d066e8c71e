"""Scale-to-zero, the keep-one floor, and fast scale-from-zero.

An idle model still holds GPUs. With scale-to-zero enabled for a model, zero
successful requests (``vllm:request_success_total``, summed over the model's
variants) across the retention window (default 10 min) sends every variant to
0. Upstream's safety rules carry over: if the success query fails the target
is kept; with scale-to-zero disabled and every target at 0, the cheapest
variant is kept at 1. Three guards of our own keep a run from killing live
work: the window must be fully observed (the model was seen at least
``retention_s`` ago), no pod may have requests running or waiting, and no
request may be queued at the gateway.

Scale-from-zero is a separate, fast loop (every 100 ms upstream): a model at
0 replicas with requests queued at the gateway (``router_queue``) gets one
replica of its cheapest variant at once, through direct actuation, instead of
waiting up to a whole optimisation period.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scalearena.contracts.errors import MetricsUnavailable
from scalearena.contracts.series import REQUEST_SUCCESS
from scalearena.controllers.base import MetricsReader, VariantView


@dataclass(frozen=True)
class ZeroOutcome:
    targets: dict[str, int]
    reason: str  # empty when nothing was changed or checked
    audit: dict[str, Any]


def cheapest(variants: Sequence[VariantView]) -> VariantView | None:
    """The variant to keep or wake: lowest cost, then first name, that may run a replica."""
    ok = [v for v in variants if v.max_replicas >= 1]
    return min(ok, key=lambda v: (v.cost, v.name)) if ok else None


def successes(metrics: MetricsReader, variants: Sequence[VariantView], window_s: float) -> float | None:
    """Successful requests of the model over the window; None when the query fails."""
    try:
        return sum(metrics.counter_increase(v.name, REQUEST_SUCCESS, window_s) for v in variants)
    except MetricsUnavailable:
        return None


def enforce(
    model: str,
    targets: Mapping[str, int],
    variants: Sequence[VariantView],
    *,
    enabled: bool,
    retention_s: float,
    observed_s: float,
    metrics: MetricsReader,
    router_queue: int,
    scaling_up: bool,
) -> ZeroOutcome:
    """Apply scale-to-zero (enabled) or the keep-cheapest-at-1 floor (disabled) to a model's targets."""
    out = dict(targets)
    if not enabled:
        if variants and all(t == 0 for t in out.values()):
            keep = cheapest(variants)
            if keep is not None:
                out[keep.name] = 1
                return ZeroOutcome(out, f"scale-to-zero disabled: keep cheapest variant {keep.name} at 1",
                                   {"scale_to_zero": False, "kept": keep.name})
        return ZeroOutcome(out, "", {"scale_to_zero": False})

    audit: dict[str, Any] = {"scale_to_zero": True, "retention_s": retention_s}
    if all(v.spec_replicas == 0 for v in variants):
        return ZeroOutcome(out, "", {**audit, "skipped": "already at zero"})
    busy = sum(p.running + p.waiting for v in variants for p in v.pods)
    skip = None
    if scaling_up:
        skip = "model is scaling up"
    elif router_queue > 0:
        skip = f"{router_queue} requests queued at the gateway"
    elif busy > 0:
        skip = f"{busy} requests running or waiting on its pods"
    elif observed_s < retention_s:
        skip = f"retention window not yet observed ({observed_s:.0f}s < {retention_s:.0f}s)"
    if skip:
        return ZeroOutcome(out, "", {**audit, "skipped": skip})

    ok = successes(metrics, variants, retention_s)
    audit["successes"] = ok
    if ok is None:
        return ZeroOutcome(out, "scale-to-zero: success-count query failed, keeping the current target", audit)
    if ok > 0:
        return ZeroOutcome(out, "", audit)
    for name in out:
        out[name] = 0
    return ZeroOutcome(out, f"scale-to-zero: 0 successful requests in {retention_s:.0f}s, all variants to 0",
                       audit)


def wake_from_zero(variants: Sequence[VariantView], router_queue: Mapping[str, int]) -> dict[str, VariantView]:
    """Models at 0 replicas with requests queued at the gateway -> the variant to wake (cheapest)."""
    by_model: dict[str, list[VariantView]] = {}
    for v in variants:
        by_model.setdefault(v.model, []).append(v)
    out: dict[str, VariantView] = {}
    for model, vs in sorted(by_model.items()):
        if router_queue.get(model, 0) <= 0:
            continue
        if any(v.spec_replicas > 0 or v.ready > 0 or v.pending > 0 for v in vs):
            continue
        pick = cheapest(vs)
        if pick is not None:
            out[model] = pick
    return out
