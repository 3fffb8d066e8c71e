"""``apa``: AIBrix's Autoscaling Pod Autoscaler (vllm-project/aibrix, pkg/controller/podautoscaler).

The control law is ``APAAlgorithm.computeTargetReplicas`` (algorithm/apa.go). With ``n`` the
current replicas, ``u`` the metric's value per pod and ``t`` its target per pod:

    u / t > 1 + up_tolerance    ->  min(ceil(n x u / t), ceil(n x max_scale_up_rate))
    u / t < 1 - down_tolerance  ->  max(ceil(n x u / t), floor(n / max_scale_down_rate))
    otherwise                   ->  n

so the fluctuation band [1 - down, 1 + up] around the target is where nothing moves. With several
metrics (``metricsSources``) each proposes a count and the largest wins (AIBrix's multi-metric "max"
strategy). The proposal then passes AIBrix's cooldown windows, which work like the HPA's
stabilisation: a scale-down takes the highest recommendation of the last
``scale_down_cooldown_s`` (300 s), a scale-up the lowest of the last ``scale_up_cooldown_s`` (0 s:
none), and finally the [min, max] replicas.

Metric semantics (``APAMetricAggregator``: the current value is the metric's window value): each
tick records the mean over the pods that report of the pod metric; ``u`` is the mean of those
records over ``observe_window_s`` (``observeWindowSeconds``, default 180 s). ``n`` is the
variant's current spec replicas.

Defaults and their source (pkg/controller/podautoscaler/context/context.go ``NewBaseScalingContext``
and docs/source/features/autoscaling/metric-based-autoscaling.rst): max-scale-up-rate 2,
max-scale-down-rate 2, scale-up-tolerance 0.1, scale-down-tolerance 0.1, scale-up-cooldown 0 s,
scale-down-cooldown 300 s, observe window 180 s, scale-to-zero false. The default metric is the one
AIBrix's samples scale on, ``gpu_cache_usage_perc`` (vLLM v1: ``vllm:kv_cache_usage_perc``) at 0.5
per pod. ``period_s`` 15 s is scalearena's choice (AIBrix re-evaluates on its controller's resync,
not a documented interval).

When the metrics backend cannot be read, or no pod has reported within the window, AIBrix's
aggregator returns an error and no scaling happens: the count is held (kept inside the bounds).
Upstream's algorithm tests (algorithm/apa_test.go) are ported as a table in tests/unit/controllers/test_apa.py.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from scalearena.contracts.tunable import tune
from scalearena.controllers.base import (
    AutoscalerBase,
    AutoscalerConfig,
    ClusterView,
    Decision,
    PodMetrics,
    Reason,
    VariantView,
    clamp,
)

PodMetric = Literal["vllm:kv_cache_usage_perc", "vllm:num_requests_waiting", "vllm:num_requests_running",
                    "gpu_utilization"]


def pod_value(p: PodMetrics, metric: str) -> float | None:
    """One pod's sample of ``metric`` (None: the pod does not report it)."""
    if metric == "vllm:kv_cache_usage_perc":
        return p.kv_usage
    if metric == "vllm:num_requests_waiting":
        return float(p.waiting)
    if metric == "vllm:num_requests_running":
        return float(p.running)
    return p.gpu_util


class APAMetric(BaseModel):
    """One entry of ``spec.metricsSources``: a pod metric and its target value per pod."""

    model_config = ConfigDict(extra="forbid")
    metric: PodMetric = Field(description="targetMetric: the pod metric (vLLM names).")
    target_value: float = Field(gt=0, description="targetValue: the metric per pod to hold.")


def apa_replicas(n: float, use_per_pod: float, target: float, up_tolerance: float, down_tolerance: float,
                 max_scale_up_rate: float, max_scale_down_rate: float) -> int:
    """``computeTargetReplicas`` of algorithm/apa.go, line for line."""
    ratio = use_per_pod / target
    if ratio > 1 + up_tolerance:
        max_up = math.ceil(max_scale_up_rate * n)
        return int(min(math.ceil(n * ratio), max_up))
    if ratio < 1 - down_tolerance:
        max_down = math.floor(n / max_scale_down_rate)
        return int(max(math.ceil(n * ratio), max_down))
    return int(n)


class APAConfig(AutoscalerConfig):
    kind: Literal["apa"] = Field(default="apa", description="AIBrix Autoscaling Pod Autoscaler (APA).")
    period_s: float = Field(default=15.0, gt=0, description="Decision period, seconds (scalearena's choice).")
    metrics: list[APAMetric] = Field(
        default_factory=lambda: [APAMetric(metric="vllm:kv_cache_usage_perc", target_value=0.5)], min_length=1,
        description="metricsSources; the largest proposal wins. Default: KV cache usage 0.5 per pod "
        "(AIBrix samples: gpu_cache_usage_perc 0.5).")
    up_fluctuation_tolerance: float = Field(
        default=0.1, ge=0, le=10, description="autoscaling.aibrix.ai/scale-up-tolerance: scale up only when "
        "value / target > 1 + this.", json_schema_extra=tune(0.0, 0.5))
    down_fluctuation_tolerance: float = Field(
        default=0.1, ge=0, le=1, description="autoscaling.aibrix.ai/scale-down-tolerance: scale down only when "
        "value / target < 1 - this.", json_schema_extra=tune(0.0, 0.5))
    max_scale_up_rate: float = Field(
        default=2.0, ge=1, le=1000, description="autoscaling.aibrix.ai/max-scale-up-rate: at most ceil(n x this).",
        json_schema_extra=tune(1.1, 10.0, log=True))
    max_scale_down_rate: float = Field(
        default=2.0, ge=1, le=1000, description="autoscaling.aibrix.ai/max-scale-down-rate: at least "
        "floor(n / this).")
    scale_up_cooldown_s: float = Field(
        default=0.0, ge=0, le=3600, description="scale-up-cooldown-window: a scale-up takes the lowest "
        "recommendation of this window, seconds.")
    scale_down_cooldown_s: float = Field(
        default=300.0, ge=0, le=3600, description="scale-down-cooldown-window: a scale-down takes the highest "
        "recommendation of this window, seconds.", json_schema_extra=tune(0.0, 600.0))
    observe_window_s: float = Field(
        default=180.0, ge=1, le=3600, description="observeWindowSeconds: the metric is averaged over this, s.",
        json_schema_extra=tune(15.0, 600.0, log=True))
    scale_to_zero: bool = Field(
        default=False, description="autoscaling.aibrix.ai/scale-to-zero: honour min_replicas 0 (else at least 1).")


@dataclass
class _State:
    samples: dict[str, list[tuple[float, float]]] = field(default_factory=dict)  # metric -> (t, mean per pod)
    recommendations: list[tuple[float, int]] = field(default_factory=list)


class APA(AutoscalerBase):
    kind: ClassVar[str] = "apa"
    config: APAConfig

    def __init__(self, config: APAConfig) -> None:
        super().__init__(config)
        self._states: dict[str, _State] = {}

    def decide(self, now: float, view: ClusterView) -> list[Decision]:
        return [self._decide(now, v) for v in view.variants]

    def _observe(self, now: float, v: VariantView, st: _State) -> dict[str, float]:
        """Record this tick's per-pod means and return each metric's window mean (absent: no data)."""
        out: dict[str, float] = {}
        for m in self.config.metrics:
            vals = [x for p in v.pods if (x := pod_value(p, m.metric)) is not None]
            hist = st.samples.setdefault(m.metric, [])
            if vals:
                hist.append((now, sum(vals) / len(vals)))
            hist[:] = [s for s in hist if s[0] > now - self.config.observe_window_s]
            if hist:
                out[m.metric] = sum(x for _, x in hist) / len(hist)
        return out

    def _decide(self, now: float, v: VariantView) -> Decision:
        c, current = self.config, v.spec_replicas
        lo = v.min_replicas if (c.scale_to_zero or v.min_replicas > 0) else min(1, v.max_replicas)
        st = self._states.setdefault(v.name, _State())
        if not v.metrics_available:
            want = clamp(current, lo, v.max_replicas)
            return Decision(v.name, current, want, (Reason(
                "metrics_unavailable", f"apa: metrics unreadable; holding {want} replicas", {}),))
        use = self._observe(now, v, st)
        if len(use) < len(c.metrics):
            want = clamp(current, lo, v.max_replicas)
            missing = [m.metric for m in c.metrics if m.metric not in use]
            return Decision(v.name, current, want, (Reason(
                "no_metric_data", f"apa: no pod reported {', '.join(missing)} in the last "
                f"{c.observe_window_s:g} s; holding {want}", {"missing": missing}),))
        reasons, proposals = [], []
        for m in c.metrics:
            n = apa_replicas(float(current), use[m.metric], m.target_value, c.up_fluctuation_tolerance,
                             c.down_fluctuation_tolerance, c.max_scale_up_rate, c.max_scale_down_rate)
            proposals.append(n)
            reasons.append(Reason("apa", f"apa: {m.metric} {use[m.metric]:.3g} per pod / target {m.target_value:g} "
                                  f"= {use[m.metric] / m.target_value:.3f} (band [{1 - c.down_fluctuation_tolerance:g}, "
                                  f"{1 + c.up_fluctuation_tolerance:g}]) -> {n} replicas",
                                  {"metric": m.metric, "value_per_pod": use[m.metric], "target": m.target_value,
                                   "ratio": use[m.metric] / m.target_value, "current": current, "proposal": n}))
        desired = max(proposals)
        desired = self._stabilize(now, st, desired, current, reasons)
        final = clamp(desired, lo, v.max_replicas)
        if final != desired:
            reasons.append(Reason("clamp", f"apa: {desired} clamped to [{lo}, {v.max_replicas}]",
                                  {"min_replicas": lo, "max_replicas": v.max_replicas}))
        return Decision(v.name, current, final, tuple(reasons))

    def _stabilize(self, now: float, st: _State, desired: int, current: int, reasons: list[Reason]) -> int:
        c = self.config
        st.recommendations.append((now, desired))
        keep = max(c.scale_up_cooldown_s, c.scale_down_cooldown_s)
        st.recommendations = [r for r in st.recommendations if r[0] > now - keep - 1e-9]
        if desired < current:
            window = [n for t, n in st.recommendations if t > now - c.scale_down_cooldown_s - 1e-9]
            held = min(current, max(window))
            rule = "scale_down_cooldown"
        elif desired > current:
            window = [n for t, n in st.recommendations if t > now - c.scale_up_cooldown_s - 1e-9]
            held = max(current, min(window)) if c.scale_up_cooldown_s > 0 else desired
            rule = "scale_up_cooldown"
        else:
            return desired
        if held != desired:
            reasons.append(Reason(rule, f"apa: {rule.replace('_', '-')} window keeps {held} (wanted {desired})",
                                  {"recommendation": desired, "stabilized": held}))
        return held
