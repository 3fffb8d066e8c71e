"""``kpa``: the Knative Pod Autoscaler (knative/serving pkg/autoscaler/scaling/autoscaler.go).

Concurrency-driven with two windows: the stable window (60 s) sets the pace,
the panic window (10 % of it, 6 s) catches bursts. Each tick (2 s) records
the variant's observed concurrency and computes

    desired_stable = ceil(avg_stable / target),  desired_panic = ceil(avg_panic / target)

each kept within [floor(ready / max_scale_down_rate), ceil(ready x
max_scale_up_rate)] (ready counted as at least 1). Panic starts when
desired_panic / ready >= 200 %, is extended every tick it still holds, and
ends one stable window after the last such tick; while panicking the count
never goes down (max of stable and panic, remembered as max panic pods). A
variant found with more than one ready pod at its first tick starts in panic,
holding that count (upstream newAutoscaler). ``activation_scale`` raises any
non-zero desired count to at least that many pods. ``scale`` is upstream's
Scale step from the window averages (tests/unit/controllers/test_kpa_upstream.py drives it
with Knative's autoscaler_test.go cases).

Concurrency for LLM serving: the in-flight requests of a pod, ``running +
waiting`` (what the queue-proxy would count: every request the pod has
accepted), averaged over the pods that report and multiplied by the ready
pods, as Knative's scraper extrapolates; while no pod is ready the requests
held at the gateway count (the activator's report), so a variant can start
from zero. Buckets: one sample per tick, a window average is the mean of
the samples inside it (a partial window early on, as upstream).

Target: Knative's default is 100 concurrent requests per pod (soft target,
containerConcurrency 0) x 0.7 utilisation, sized for web handlers. An LLM
replica saturates far earlier: the KV cache and max-num-seqs bound it to a
few (long prompts) to a few hundred (short chats) sequences. The default
here is ``target`` 4 in-flight requests per pod (x 0.7 = 2.8), sized for the
paper's set-up, where a 16,384-token KV cache holds about 3 requests of
~5,120 tokens; on exp1-staircase target 4 gave 351 failures at cost 1.99,
target 2 gave 49 failures at cost 2.87 and target 10 gave 2,477 failures
(docs/autoscalers.md). Raise it for short-context workloads; ``target:
null`` gives Knative's own default (100, or ``container_concurrency``).

Scale to zero (only when the variant's min_replicas is 0): a desired count of
0 keeps one pod until the revision has wanted 0 for longer than
``scale_to_zero_grace_s`` (30 s). When the metrics backend is unreachable no
sample is recorded and the scale is held (upstream would act on the trailing
partial window for up to one stable window; we hold, as every metrics-based
autoscaler here does).
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import ClassVar, Literal

from pydantic import Field

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


class KPAConfig(AutoscalerConfig):
    kind: Literal["kpa"] = Field(default="kpa", description="Knative Pod Autoscaler on in-flight requests.")
    period_s: float = Field(default=2.0, gt=0, description="tick-interval: decision period, seconds.")
    target: float | None = Field(
        default=4.0, gt=0,
        description="autoscaling.knative.dev/target: in-flight requests per pod; null = Knative default "
        "(100, or container_concurrency when set).", json_schema_extra=tune(1.0, 32.0, log=True),
    )
    container_concurrency: int = Field(
        default=0, ge=0, description="Hard limit per pod; caps the target; 0 = unlimited."
    )
    target_utilization: float = Field(
        default=0.7, gt=0, le=1, description="container-concurrency-target-percentage / 100.",
        json_schema_extra=tune(0.3, 1.0),
    )
    stable_window_s: float = Field(default=60.0, ge=6, le=3600, description="Stable window, seconds.",
                                   json_schema_extra=tune(6.0, 600.0, log=True))
    panic_window_percentage: float = Field(
        default=10.0, ge=1, le=100, description="Panic window as a percentage of the stable window."
    )
    panic_threshold_percentage: float = Field(
        default=200.0, ge=110, le=1000, description="Panic when desired_panic / ready >= this / 100.",
        json_schema_extra=tune(110.0, 1000.0, log=True),
    )
    max_scale_up_rate: float = Field(default=1000.0, gt=1, description="At most ready x this pods.")
    max_scale_down_rate: float = Field(default=2.0, gt=1, description="At least ready / this pods.",
                                       json_schema_extra=tune(1.1, 8.0, log=True))
    scale_to_zero_grace_s: float = Field(
        default=30.0, ge=6, description="scale-to-zero-grace-period: wanted 0 this long before going to 0."
    )
    enable_scale_to_zero: bool = Field(default=True, description="enable-scale-to-zero (needs min_replicas 0).")
    activation_scale: int = Field(
        default=1, ge=1, description="activation-scale: the least pods once there is any demand (dspc > 0).")
    scale_down_delay_s: float = Field(
        default=0.0, ge=0, le=3600, description="scale-down-delay: highest desired count over this window.",
        json_schema_extra=tune(0.0, 600.0),
    )

    @property
    def target_value(self) -> float:
        total = 100.0 if self.container_concurrency == 0 else float(self.container_concurrency)
        if self.target is not None:
            total = self.target
            if 0 < self.container_concurrency < total:
                total = float(self.container_concurrency)
        return max(0.01, total * self.target_utilization)


@dataclass
class _State:
    samples: list[tuple[float, float]] = field(default_factory=list)
    panic_since: float | None = None  # upstream panicTime: last tick over the threshold
    max_panic_pods: int = 0
    zero_since: float | None = None
    delay: list[tuple[float, int]] = field(default_factory=list)


def observed_concurrency(view: ClusterView, v: VariantView) -> float:
    if v.ready == 0:
        return float(view.router_queue.get(v.model, 0))
    if not v.pods:
        return 0.0
    per_pod = sum(p.running + p.waiting for p in v.pods) / len(v.pods)
    return per_pod * v.ready


class KPA(AutoscalerBase):
    kind: ClassVar[str] = "kpa"
    config: KPAConfig

    def __init__(self, config: KPAConfig) -> None:
        super().__init__(config)
        self._states: dict[str, _State] = {}

    def decide(self, now: float, view: ClusterView) -> list[Decision]:
        return [self._decide(now, view, v) for v in view.variants]

    def _decide(self, now: float, view: ClusterView, v: VariantView) -> Decision:
        c, current = self.config, v.spec_replicas
        st = self._states.get(v.name)
        if st is None:
            st = self._states[v.name] = self.new_state(now, v.ready)
        if not v.metrics_available:
            want = clamp(current, v.min_replicas, v.max_replicas)
            return Decision(v.name, current, want, (Reason(
                "metrics_unavailable", f"kpa: no concurrency data; keeping {want} replicas", {}),))
        stable_w = c.stable_window_s
        panic_w = stable_w * c.panic_window_percentage / 100.0
        st.samples.append((now, observed_concurrency(view, v)))
        st.samples = [s for s in st.samples if s[0] > now - stable_w]
        stable = _mean(x for t, x in st.samples)
        panic = _mean(x for t, x in st.samples if t > now - panic_w)
        desired, reasons = self.scale(now, st, stable, panic, v.ready)
        desired = self._to_zero(now, v, st, desired, current, reasons)
        final = clamp(desired, v.min_replicas, v.max_replicas)
        if final != desired:
            reasons.append(Reason("clamp", f"kpa: {desired} clamped to [{v.min_replicas}, {v.max_replicas}]",
                                  {"min_replicas": v.min_replicas, "max_replicas": v.max_replicas}))
        return Decision(v.name, current, final, tuple(reasons))

    @staticmethod
    def new_state(now: float, ready: int) -> _State:
        """Upstream newAutoscaler: a revision found with more than one ready pod starts in panic mode,
        max panic pods = the ready count, so the scale is held until the windows have data (the
        autoscaler lost its history)."""
        return _State(panic_since=now if ready > 1 else None, max_panic_pods=max(0, ready))

    def scale(self, now: float, st: _State, stable: float, panic: float, ready_pods: int) -> tuple[int, list[Reason]]:
        """Upstream autoscaler.Scale from the window averages: rate limits, activation scale, panic
        mode and the scale-down delay (scale to zero's grace and min/max are the reconciler's)."""
        c = self.config
        target = c.target_value
        ready = max(1.0, float(ready_pods))
        max_up = math.ceil(c.max_scale_up_rate * ready)
        max_down = math.floor(ready / c.max_scale_down_rate)
        dspc, dppc = math.ceil(stable / target - 1e-9), math.ceil(panic / target - 1e-9)
        want_stable = int(min(max(dspc, max_down), max_up))
        want_panic = int(min(max(dppc, max_down), max_up))
        if c.activation_scale > 1:
            if dspc > 0 and want_stable < c.activation_scale:
                want_stable = c.activation_scale
            if dppc > 0 and want_panic < c.activation_scale:
                want_panic = c.activation_scale
        over = dppc / ready >= c.panic_threshold_percentage / 100.0
        if over:
            st.panic_since = now
        elif st.panic_since is not None and st.panic_since + c.stable_window_s < now:
            st.panic_since, st.max_panic_pods = None, 0
        vals = {"stable_concurrency": stable, "panic_concurrency": panic, "target": target, "ready": ready_pods,
                "desired_stable": want_stable, "desired_panic": want_panic, "max_scale_up": max_up,
                "max_scale_down": max_down, "panicking": st.panic_since is not None}
        reasons = [Reason("kpa", f"kpa: stable {stable:.2f} / panic {panic:.2f} in flight, target {target:g} "
                          f"per pod -> stable {want_stable}, panic {want_panic}", vals)]
        desired = want_stable
        if st.panic_since is not None:
            desired = max(want_stable, want_panic)
            if desired > st.max_panic_pods:
                st.max_panic_pods = desired
            desired = st.max_panic_pods
            reasons.append(Reason("panic", f"kpa: panic mode (last over {c.panic_threshold_percentage:g} % at "
                                  f"t={st.panic_since:g}); never scaling down, holding {desired}",
                                  {"max_panic_pods": desired}))
        if c.scale_down_delay_s > 0:
            st.delay.append((now, desired))
            st.delay = [d for d in st.delay if d[0] > now - c.scale_down_delay_s]
            delayed = max(d for _, d in st.delay)
            if delayed != desired:
                reasons.append(Reason("scale_down_delay", f"kpa: scale-down delayed, holding {delayed}", {}))
            desired = delayed
        return desired, reasons

    def _to_zero(self, now: float, v: VariantView, st: _State, desired: int, current: int,
                 reasons: list[Reason]) -> int:
        if desired > 0:
            st.zero_since = None
            return desired
        if not self.config.enable_scale_to_zero or v.min_replicas > 0:
            return desired  # the clamp raises it to min
        if st.zero_since is None:
            st.zero_since = now
        if current == 0 or now > st.zero_since + self.config.scale_to_zero_grace_s:
            return 0
        reasons.append(Reason("scale_to_zero_grace", f"kpa: idle since t={st.zero_since:g}; keeping 1 pod for "
                              f"the {self.config.scale_to_zero_grace_s:g} s grace period", {}))
        return 1


def _mean(xs: Iterable[float]) -> float:
    vals = list(xs)
    return sum(vals) / len(vals) if vals else 0.0
