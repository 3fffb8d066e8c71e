"""``multimetric``: the multi-metric HPA of the GPU-inference note (SPEC section 1b).

GPU utilisation alone swings between ~0 and ~100 % inside one sampling window
and misses KV-cache pressure, so this controller smooths it (EWMA, alpha 0.3,
one sample per 5 s period) and never acts on one signal alone. Rules, first
match wins:

- A: smoothed GPU > 0.80 and queue > 10        -> scale up 1 (compute saturated)
- B: KV usage > 0.90 and smoothed GPU > 0.60   -> scale up 2 (memory pressure)
- C: p99 latency > 2 x baseline (500 ms)       -> alert only
- D: smoothed GPU < 0.20 and queue == 0        -> scale down 1 (idle)
- otherwise no-op.

Signals, per variant: GPU utilisation is the mean of ``PodMetrics.gpu_util``
over the pods that report it; queue is the *sum* of
``vllm:num_requests_waiting`` over the variant's pods (the application's
request backlog, which is what "queue > 10" counts); KV usage is the *mean*
of ``vllm:kv_cache_usage_perc`` over pods (a fraction, like the 0.90
threshold); p99 is ``histogram_quantile(0.99, e2e latency[60s])``.

Cooldowns are per direction: a scale-up at most once per 60 s, a scale-down
at most once per 300 s (cold starts cost more than an idle pod). A scale-up
past max replicas becomes an alert: the controller goes as far as max (if it
is not there yet) and raises the alert; a scale-down below min is a no-op.
Bounds: min 2 (raised to the variant's min, never above its max) and the
variant's max unless set lower. When the metrics backend is unreachable
nothing changes and the EWMA keeps its last value.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, Literal

from pydantic import Field

from scalearena.contracts.errors import MetricsUnavailable
from scalearena.contracts.series import E2E_HIST
from scalearena.contracts.tunable import tune
from scalearena.controllers.base import (
    AutoscalerBase,
    AutoscalerConfig,
    ClusterView,
    Decision,
    Reason,
    VariantView,
    clamp,
)


class MultiMetricConfig(AutoscalerConfig):
    kind: Literal["multimetric"] = Field(default="multimetric", description="GPU-util EWMA + queue + KV + p99 rules.")
    period_s: float = Field(default=5.0, gt=0, description="Evaluation period = EWMA sample interval, seconds.")
    ewma_alpha: float = Field(default=0.3, gt=0, le=1, description="EWMA weight of the newest GPU sample.",
                              json_schema_extra=tune(0.05, 1.0))
    latency_window_s: float = Field(default=60.0, gt=0, description="Sliding window of the p99, seconds.")
    baseline_p99_ms: float = Field(default=500.0, gt=0, description="Baseline p99 end-to-end latency, ms.")
    p99_alert_factor: float = Field(default=2.0, gt=0, description="Rule C: alert when p99 > factor x baseline.")
    compute_gpu: float = Field(default=0.80, ge=0, le=1, description="Rule A: smoothed GPU above this ...",
                               json_schema_extra=tune(0.5, 0.95))
    compute_queue: int = Field(default=10, ge=0, description="Rule A: ... and total queue above this.",
                               json_schema_extra=tune(0, 50))
    compute_step: int = Field(default=1, ge=1, description="Rule A: replicas added.",
                              json_schema_extra=tune(1, 4))
    memory_kv: float = Field(default=0.90, ge=0, le=1, description="Rule B: mean KV usage above this ...",
                             json_schema_extra=tune(0.5, 0.99))
    memory_gpu: float = Field(default=0.60, ge=0, le=1, description="Rule B: ... and smoothed GPU above this.",
                              json_schema_extra=tune(0.2, 0.9))
    memory_step: int = Field(default=2, ge=1, description="Rule B: replicas added.",
                             json_schema_extra=tune(1, 4))
    idle_gpu: float = Field(default=0.20, ge=0, le=1, description="Rule D: smoothed GPU below this ...",
                            json_schema_extra=tune(0.05, 0.5))
    idle_queue: int = Field(default=0, ge=0, description="Rule D: ... and total queue at most this (0: empty).")
    idle_step: int = Field(default=1, ge=1, description="Rule D: replicas removed.")
    scale_up_cooldown_s: float = Field(default=60.0, ge=0, description="At most one scale-up per this, seconds.",
                                       json_schema_extra=tune(0.0, 300.0))
    scale_down_cooldown_s: float = Field(default=300.0, ge=0, description="At most one scale-down per this, s.",
                                         json_schema_extra=tune(30.0, 900.0))
    min_replicas: int = Field(default=2, ge=0, description="Lower bound (within the variant's bounds).")
    max_replicas: int | None = Field(default=None, ge=1, description="Upper bound; null = the variant's max.")


@dataclass
class _State:
    gpu_ewma: float | None = None
    last_up: float = float("-inf")
    last_down: float = float("-inf")


class MultiMetric(AutoscalerBase):
    kind: ClassVar[str] = "multimetric"
    config: MultiMetricConfig

    def __init__(self, config: MultiMetricConfig) -> None:
        super().__init__(config)
        self._states: dict[str, _State] = {}

    def decide(self, now: float, view: ClusterView) -> list[Decision]:
        return [self._decide(now, view, v) for v in view.variants]

    def _bounds(self, v: VariantView) -> tuple[int, int]:
        hi = min(self.config.max_replicas or v.max_replicas, v.max_replicas)
        hi = max(hi, v.min_replicas)
        return clamp(self.config.min_replicas, v.min_replicas, hi), hi

    def _decide(self, now: float, view: ClusterView, v: VariantView) -> Decision:
        c, current = self.config, v.spec_replicas
        st = self._states.setdefault(v.name, _State())
        lo, hi = self._bounds(v)
        if current < lo or current > hi:
            want = clamp(current, lo, hi)
            return Decision(v.name, current, want, (Reason("clamp", f"{current} replicas outside [{lo}, {hi}]",
                                                           {"min_replicas": lo, "max_replicas": hi}),))
        if not v.metrics_available:
            return Decision(v.name, current, current, (Reason(
                "metrics_unavailable", f"metrics backend unreachable; keeping {current} replicas", {}),))
        gpus = [p.gpu_util for p in v.pods if p.gpu_util is not None]
        gpu_raw = sum(gpus) / len(gpus) if gpus else None
        if gpu_raw is not None:
            st.gpu_ewma = gpu_raw if st.gpu_ewma is None else c.ewma_alpha * gpu_raw + (1 - c.ewma_alpha) * st.gpu_ewma
        g = st.gpu_ewma
        queue = sum(p.waiting for p in v.pods)
        kv = sum(p.kv_usage for p in v.pods) / len(v.pods) if v.pods else None
        try:
            p99_s = view.metrics.histogram_quantile(v.name, E2E_HIST, 0.99, c.latency_window_s)
        except MetricsUnavailable:
            p99_s = None
        p99_ms = None if p99_s is None else p99_s * 1000.0
        signals = {"gpu_raw": gpu_raw, "gpu_smoothed": g, "queue": queue, "kv_mean": kv, "p99_ms": p99_ms}
        sig = Reason("signals", f"gpu ewma {_f(g)} (raw {_f(gpu_raw)}), queue {queue}, kv {_f(kv)}, "
                     f"p99 {_f(p99_ms)} ms", signals)

        def out(desired: int, *reasons: Reason, alerts: tuple[str, ...] = ()) -> Decision:
            return Decision(v.name, current, desired, (sig, *reasons), alerts=alerts)

        if g is not None and g > c.compute_gpu and queue > c.compute_queue:
            return self._up(now, st, current, hi, c.compute_step, "A", "compute saturated", out)
        if kv is not None and g is not None and kv > c.memory_kv and g > c.memory_gpu:
            return self._up(now, st, current, hi, c.memory_step, "B", "memory pressure", out)
        limit_ms = c.p99_alert_factor * c.baseline_p99_ms
        if p99_ms is not None and p99_ms > limit_ms:
            msg = f"p99 {p99_ms:.0f} ms > {limit_ms:.0f} ms"
            return out(current, Reason("rule_C", f"C: {msg}: alert only", {"limit_ms": limit_ms}), alerts=(msg,))
        if g is not None and g < c.idle_gpu and queue <= c.idle_queue:
            if now - st.last_down < c.scale_down_cooldown_s:
                return out(current, Reason("cooldown", "D: idle, but scale-down cooldown "
                                           f"({now - st.last_down:.0f} s of {c.scale_down_cooldown_s:.0f} s)", {}))
            if current - c.idle_step < lo:
                return out(current, Reason("rule_D", f"D: idle, but {current} - {c.idle_step} is below "
                                           f"min {lo}: no-op", {"min_replicas": lo}))
            st.last_down = now
            return out(current - c.idle_step, Reason("rule_D", f"D: idle -> scale down {c.idle_step}", {}))
        return out(current, Reason("no_op", "no rule matched", {}))

    def _up(self, now: float, st: _State, current: int, hi: int, step: int, rule: str, what: str,
            out: Callable[..., Decision]) -> Decision:
        c = self.config
        if now - st.last_up < c.scale_up_cooldown_s:
            return out(current, Reason("cooldown", f"{rule}: {what}, but scale-up cooldown "
                                       f"({now - st.last_up:.0f} s of {c.scale_up_cooldown_s:.0f} s)", {}))
        want = current + step
        alerts: tuple[str, ...] = ()
        reasons = [Reason(f"rule_{rule}", f"{rule}: {what} -> scale up {step}", {"step": step})]
        if want > hi:
            alerts = (f"{rule}: {what}: scale-up to {want} exceeds max replicas {hi}",)
            reasons.append(Reason("clamp", f"scale-up past max {hi} becomes an alert", {"max_replicas": hi}))
            want = hi
        if want > current:
            st.last_up = now
        return out(want, *reasons, alerts=alerts)


def _f(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3g}"
