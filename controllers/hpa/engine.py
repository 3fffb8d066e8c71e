"""One HPA object: metric specs, the per-sync computation and its history.

Shared by ``hpa`` (one engine per variant, Pods metrics by default) and
``keda`` (the HPA that KEDA generates: one External metric, AverageValue).
The flow is ``reconcileAutoscaler`` in kubernetes horizontal.go: bring the
spec count inside [min, max] first; otherwise compute one proposal per
metric, take the largest, refuse to act on invalid metrics as upstream
does, then stabilise and rate-limit (``hpa.behavior``); with ``behavior``
None (an HPA object without the field) the legacy path does that.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Literal

from pydantic import Field, model_validator

from scalearena.contracts.errors import MetricsUnavailable
from scalearena.contracts.limits import StrictSpec
from scalearena.controllers.base import ClusterView, Decision, Reason, VariantView
from scalearena.controllers.hpa.behavior import (
    Behavior,
    BehaviorState,
    longest_period,
    normalize,
    normalize_legacy,
    resolve,
)
from scalearena.controllers.hpa.replicas import (
    Proposal,
    external_average_replicas,
    external_value_replicas,
    milli,
    pods_metric_replicas,
)
from scalearena.controllers.signals import Signal, query_rows, signal_value

TARGET_PODS = "$__target_pods"
# ^ in a Pods query: replaced at each sync by the variant's pod names joined with '|' (what the HPA hands
#   prometheus-adapter as the pods its selector matches; harness/objects/adapter.py writes it)


class _Spec(StrictSpec):
    """Extra keys forbidden, frozen, NaN/inf and numbers past their unit's limit refused."""


class PodsMetric(_Spec):
    type: Literal["Pods"] = Field(description="Per-pod metric averaged over ready pods (target AverageValue).")
    metric: Literal["vllm:num_requests_waiting", "vllm:kv_cache_usage_perc", "vllm:num_requests_running"] | None = (
        Field(default=None, description="vLLM gauge read from each pod's latest sample (or set `query`).")
    )
    query: str | None = Field(
        default=None, description="PromQL with one series per pod (label `pod`), e.g. what prometheus-adapter "
        "sends for a Pods or Resource metric; instead of `metric`.")
    name: str | None = Field(default=None, description="Metric name shown in decisions (the object's metric name).")
    pod_label: str = Field(default="pod", description="With `query`: the label naming each row's pod.")
    average_value: float = Field(gt=0, description="Target average per pod.")

    @model_validator(mode="after")
    def _one_source(self) -> PodsMetric:
        if (self.metric is None) == (self.query is None):
            raise ValueError("set exactly one of metric / query")
        return self


class ExternalMetric(_Spec):
    type: Literal["External", "Object"] = Field(
        description="One value for the whole variant: External (see controllers/signals.py, or a query whose "
        "series are summed) or Object (a query for one object, e.g. the Deployment).")
    signal: Signal | None = Field(
        default=None, description="Which named query: queue, waiting_sum, running_sum, inflight_sum, kv_sum, ...")
    query: str | None = Field(default=None, description="PromQL instead of `signal`.")
    name: str | None = Field(default=None, description="Metric name shown in decisions (the object's metric name).")
    value: float | None = Field(default=None, gt=0, description="Target type Value: total / value = ratio.")
    average_value: float | None = Field(
        default=None, gt=0, description="Target type AverageValue: desired = ceil(total / average_value)."
    )

    @model_validator(mode="after")
    def _one_target(self) -> ExternalMetric:
        if (self.value is None) == (self.average_value is None):
            raise ValueError("set exactly one of value / average_value")
        if (self.signal is None) == (self.query is None):
            raise ValueError("set exactly one of signal / query")
        return self


MetricSpec = Annotated[PodsMetric | ExternalMetric, Field(discriminator="type")]

def metric_label(m: PodsMetric | ExternalMetric) -> str:
    if m.query is not None:
        return f"{m.type.lower()}:{m.name or m.query}"
    return m.metric if isinstance(m, PodsMetric) else f"external:{m.signal}"  # type: ignore[return-value]


def query_pods(view: ClusterView, v: VariantView, expr: str, pod_label: str = "pod") -> list[float]:
    """The per-pod values of a Pods query for the variant's ready pods with a sample (rows matched on the
    ``pod_label``; a pod the query has no row for is missing, as one without a scrape is)."""
    if not v.pods:
        return []
    expr = expr.replace(TARGET_PODS, "|".join(p.pod for p in v.pods))  # rows of other pods are dropped below
    by_pod = {labels.get(pod_label): value for labels, value in query_rows(view, expr)}
    return [by_pod[p.pod] for p in v.pods if p.pod in by_pod]


def query_total(view: ClusterView, m: ExternalMetric) -> float:
    """An External query's value: the sum over its series of each value as the milli-quantity the metrics
    API carries (the replica calculator sums the items it gets); an Object query must return one series."""
    assert m.query is not None
    rows = query_rows(view, m.query)
    if not rows:
        raise ValueError(f"no metrics returned from the {m.type.lower()} metrics API")
    if m.type == "Object" and len(rows) > 1:
        raise ValueError(f"object metric query returned {len(rows)} series, expected one")
    return sum(milli(value) for _, value in rows) / 1000


ExternalValue = Callable[[ExternalMetric], float]


class HPAEngine:
    """The state and sync step of one HorizontalPodAutoscaler."""

    def __init__(
        self,
        metrics: list[PodsMetric | ExternalMetric] | tuple[PodsMetric | ExternalMetric, ...],
        tolerance: float,
        behavior: Behavior | None,
        downscale_stabilization_s: int = 300,
        labels: tuple[str, ...] | None = None,
    ) -> None:
        self.metrics = tuple(metrics)
        self.labels = labels or tuple(metric_label(m) for m in self.metrics)  # names in the reasons
        self.legacy = behavior is None  # no ``behavior`` field: upstream's normalizeDesiredReplicas
        self.downscale_stabilization_s = downscale_stabilization_s
        behavior = behavior or Behavior()
        self.up = resolve(behavior.scale_up, True, downscale_stabilization_s)
        self.down = resolve(behavior.scale_down, False, downscale_stabilization_s)
        self.tol_up = tolerance if behavior.scale_up.tolerance is None else behavior.scale_up.tolerance
        self.tol_down = tolerance if behavior.scale_down.tolerance is None else behavior.scale_down.tolerance
        self.state = BehaviorState()

    def _propose(self, view: ClusterView, v: VariantView, m: PodsMetric | ExternalMetric,
                 external: ExternalValue | None) -> Proposal:
        current = v.spec_replicas
        if isinstance(m, PodsMetric):
            if m.query is not None:
                values = query_pods(view, v, m.query, m.pod_label)
            else:
                assert m.metric is not None
                values = [_pod_value(p, m.metric) for p in v.pods]
            # upstream groupPods: only phase-Pending pods are unready; a Running-not-Ready pod without
            # a sample is missing, like a ready one without a sample
            missing = max(0, v.ready + v.starting - len(v.pods))
            return pods_metric_replicas(current, values, m.average_value, missing, v.pending - v.starting,
                                        self.tol_up, self.tol_down)
        if external is not None:
            value = external(m)
        elif m.query is not None:
            value = query_total(view, m)
        else:
            assert m.signal is not None
            value = signal_value(view, v, m.signal)
        if m.value is not None:
            return external_value_replicas(current, v.ready, value, m.value, self.tol_up, self.tol_down)
        assert m.average_value is not None
        return external_average_replicas(v.ready + v.pending, value, m.average_value, self.tol_up, self.tol_down)

    def decide(self, now: float, view: ClusterView, v: VariantView, lo: int, hi: int,
               external: ExternalValue | None = None, who: str = "hpa") -> Decision:
        current = v.spec_replicas

        def done(desired: int, reasons: list[Reason]) -> Decision:
            if desired != current:
                self.state.record_scale(now, current, desired, longest_period(self.up, self.down))
            return Decision(v.name, current, desired, tuple(reasons))

        bounds = {"min_replicas": lo, "max_replicas": hi, "current": current}
        if current == 0 and lo != 0:
            return done(0, [Reason("scaling_disabled", f"{who}: the target is at 0 replicas and "
                                   "minReplicas > 0: scaling is disabled", bounds)])
        if current > hi:
            return done(hi, [Reason("clamp", f"{who}: {current} replicas above max {hi}", bounds)])
        if current < lo:
            return done(lo, [Reason("clamp", f"{who}: {current} replicas below min {lo}", bounds)])
        if external is None and not v.metrics_available:
            return done(current, [Reason("metrics_unavailable", f"{who}: metrics backend unreachable; "
                                         f"keeping {current} replicas", bounds)])
        reasons: list[Reason] = []
        proposal, invalid, winner = 0, 0, ""
        for m, label in zip(self.metrics, self.labels, strict=True):
            try:
                p = self._propose(view, v, m, external)
            except (ValueError, MetricsUnavailable) as e:
                invalid += 1
                reasons.append(Reason("metric_invalid", f"{label}: {e}", {"metric": label}))
                continue
            target = m.average_value if m.average_value is not None else getattr(m, "value", None)
            reasons.append(Reason("metric", f"{label}: usage {p.usage:g} / target {target:g} -> ratio "
                                  f"{p.ratio:.3f}, proposes {p.replicas} ({p.rule})", {
                                      "metric": label, "usage": p.usage, "target": target, "ratio": p.ratio,
                                      "proposal": p.replicas, "rule": p.rule, "ready": v.ready,
                                      "with_metrics": len(v.pods), "pending": v.pending}))
            if p.replicas > proposal:
                proposal, winner = p.replicas, label
        if invalid == len(self.metrics) or (invalid and proposal < current):
            reasons.append(Reason("metrics_invalid", f"{who}: {invalid} of {len(self.metrics)} metrics invalid; "
                                  f"keeping {current} replicas", {"invalid": invalid, **bounds}))
            return done(current, reasons)
        reasons.append(Reason("max_over_metrics", f"{who}: largest proposal {proposal} from {winner}",
                              {"proposal": proposal, "metric": winner}))
        if self.legacy:
            desired, why = normalize_legacy(now, self.state, self.downscale_stabilization_s, current, proposal, lo, hi)
        else:
            desired, why = normalize(now, self.state, self.up, self.down, current, proposal, lo, hi)
        reasons += why
        reasons.append(Reason("desired", f"{who}: {current} -> {desired} replicas", {"desired": desired, **bounds}))
        return done(desired, reasons)


def _pod_value(p: object, metric: str) -> float:
    if metric == "vllm:num_requests_waiting":
        return float(p.waiting)  # type: ignore[attr-defined]
    if metric == "vllm:kv_cache_usage_perc":
        return float(p.kv_usage)  # type: ignore[attr-defined]
    return float(p.running)  # type: ignore[attr-defined]
