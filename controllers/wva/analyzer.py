"""The saturation analyzer: is a model short of capacity, or can it spare a replica?

Averages mislead in LLM serving: a model can show low mean KV utilisation while
two of its replicas are full and queueing ("distributional masking"). So the
analyzer works per replica first — a replica is saturated when its KV usage
reaches tau_kv or its waiting queue reaches tau_q — and only then averages the
spare capacity (tau_m - U_m) over the NON-saturated replicas.

- Scale up when, for some m in {kv, q}, that average spare is below gamma_m.
  With every replica saturated the average is taken as 0, which trips it.
- Scale down only when (a) at least ``min_non_saturated`` replicas are
  non-saturated — the fragmentation guard — and (b) removing one of them and
  spreading its load over the others (each load x N/(N-1)) still leaves an
  average spare of at least gamma_m for both m.

The analyzer never picks a variant; that is the optimizer's job. It only
approves or requests, and records its numbers for the audit trail.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from scalearena.controllers.wva.config import Thresholds


@dataclass(frozen=True)
class ReplicaSample:
    """One replica's peak metrics over the window (max_over_time[1m])."""

    variant: str
    pod: str
    kv: float
    queue: float


@dataclass(frozen=True)
class ModelAnalysis:
    model: str
    thresholds: Thresholds
    replicas: int
    saturated: tuple[str, ...]  # pod names
    non_saturated: int
    avg_spare_kv: float
    avg_spare_q: float
    load_kv: float  # summed KV usage over every replica, saturated ones included (headroom rule)
    load_q: float  # summed waiting requests over every replica
    scale_up: bool
    scale_up_reason: str
    scale_down_safe: bool
    scale_down_reason: str
    predicted_spare_kv: float | None = None  # after removing one replica; None when not simulated
    predicted_spare_q: float | None = None
    per_variant: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def normalised_spare(self) -> float:
        """The tighter of the two spares as a fraction of its threshold (0 = at saturation).

        Orders competing scale-up requests in the limiter: closest to saturation first.
        """
        return min(self.avg_spare_kv / self.thresholds.tau_kv, self.avg_spare_q / self.thresholds.tau_q)

    def numbers(self) -> dict[str, Any]:
        """The figures every WVA reason carries."""
        return {
            "replicas": self.replicas,
            "saturated": len(self.saturated),
            "non_saturated": self.non_saturated,
            "avg_spare_kv": round(self.avg_spare_kv, 6),
            "avg_spare_q": round(self.avg_spare_q, 6),
            **self.thresholds.as_dict(),
        }

    def to_audit(self) -> dict[str, Any]:
        out = self.numbers()
        out.update(
            saturated_pods=list(self.saturated),
            load_kv=round(self.load_kv, 6),
            load_q=round(self.load_q, 6),
            scale_up=self.scale_up,
            scale_up_reason=self.scale_up_reason,
            scale_down_safe=self.scale_down_safe,
            scale_down_reason=self.scale_down_reason,
            predicted_spare_kv=None if self.predicted_spare_kv is None else round(self.predicted_spare_kv, 6),
            predicted_spare_q=None if self.predicted_spare_q is None else round(self.predicted_spare_q, 6),
            per_variant=self.per_variant,
        )
        return out


def is_saturated(sample: ReplicaSample, t: Thresholds) -> bool:
    return sample.kv >= t.tau_kv or sample.queue >= t.tau_q


def analyze(model: str, samples: Sequence[ReplicaSample], t: Thresholds) -> ModelAnalysis:
    """Saturation analysis over every replica of every variant of one model."""
    saturated: list[str] = []
    spare_kv: list[float] = []
    spare_q: list[float] = []
    per_variant: dict[str, dict[str, Any]] = {}
    for s in samples:
        pv = per_variant.setdefault(s.variant, {"replicas": 0, "saturated": 0, "max_kv": 0.0, "max_queue": 0.0})
        pv["replicas"] += 1
        pv["max_kv"] = max(pv["max_kv"], s.kv)
        pv["max_queue"] = max(pv["max_queue"], s.queue)
        if is_saturated(s, t):
            saturated.append(s.pod)
            pv["saturated"] += 1
        else:
            spare_kv.append(t.tau_kv - s.kv)
            spare_q.append(t.tau_q - s.queue)

    n = len(spare_kv)
    avg_kv = sum(spare_kv) / n if n else 0.0
    avg_q = sum(spare_q) / n if n else 0.0
    base: dict[str, Any] = dict(model=model, thresholds=t, replicas=len(samples), saturated=tuple(saturated),
                non_saturated=n, avg_spare_kv=avg_kv, avg_spare_q=avg_q, per_variant=per_variant,
                load_kv=sum(s.kv for s in samples), load_q=sum(s.queue for s in samples))

    if not samples:
        return ModelAnalysis(**base, scale_up=False, scale_up_reason="no replica reports metrics",
                             scale_down_safe=False, scale_down_reason="no replica reports metrics")

    up_kv, up_q = avg_kv < t.gamma_kv, avg_q < t.gamma_q
    if n == 0:
        up_reason = f"all {len(samples)} replicas saturated"
    elif up_kv or up_q:
        parts = []
        if up_kv:
            parts.append(f"avg spare kv {avg_kv:.3f} < gamma_kv {t.gamma_kv:g}")
        if up_q:
            parts.append(f"avg spare queue {avg_q:.2f} < gamma_q {t.gamma_q:g}")
        up_reason = " and ".join(parts)
    else:
        up_reason = ""
    scale_up = bool(up_reason)

    if n < t.min_non_saturated:
        return ModelAnalysis(
            **base, scale_up=scale_up, scale_up_reason=up_reason, scale_down_safe=False,
            scale_down_reason=f"only {n} non-saturated replicas (< {t.min_non_saturated}, fragmentation guard)",
        )
    # Remove one non-saturated replica: the survivors carry its load, each load x N/(N-1).
    factor = n / (n - 1)
    pred_kv = t.tau_kv - (t.tau_kv - avg_kv) * factor
    pred_q = t.tau_q - (t.tau_q - avg_q) * factor
    safe = pred_kv >= t.gamma_kv and pred_q >= t.gamma_q
    why = (
        f"after removing one of {n}: spare kv {pred_kv:.3f} {'>=' if pred_kv >= t.gamma_kv else '<'} "
        f"{t.gamma_kv:g}, spare queue {pred_q:.2f} {'>=' if pred_q >= t.gamma_q else '<'} {t.gamma_q:g}"
    )
    return ModelAnalysis(**base, scale_up=scale_up, scale_up_reason=up_reason, scale_down_safe=safe,
                         scale_down_reason=why, predicted_spare_kv=pred_kv, predicted_spare_q=pred_q)
