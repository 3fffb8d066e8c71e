"""``hpa``: the Kubernetes HorizontalPodAutoscaler (autoscaling/v2) as upstream runs it.

One HPA per variant, synced every 15 s. Each metric proposes a replica count
(``hpa.replicas``), the largest wins, then ``behavior`` stabilises and
rate-limits it (``hpa.behavior``). The defaults are the paper's baseline:
Pods metrics with target average queue depth 3 and target average KV usage
0.5. In ``kind``/``cluster`` runs the real HPA in manifests/ is used; this
model serves ``sim`` and ``local`` so both are compared on equal terms.

Upstream rules kept on purpose: a target at 0 replicas is left alone unless
minReplicas is 0 (the HPAScaleToZero feature gate); a spec count outside
[min, max] is first brought inside; when every metric fails, or some fail
and the rest would scale down, nothing changes (and no recommendation is
recorded); when the metrics backend cannot be read the HPA keeps the
current count.
"""
from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from scalearena.contracts.series import KV_USAGE, NUM_WAITING
from scalearena.contracts.tunable import Tunable, around, declared, tune
from scalearena.controllers.base import AutoscalerBase, AutoscalerConfig, ClusterView, Decision
from scalearena.controllers.hpa.behavior import Behavior
from scalearena.controllers.hpa.engine import ExternalMetric, HPAEngine, MetricSpec, PodsMetric, metric_label

__all__ = ["HPA", "HPAConfig", "PodsMetric", "ExternalMetric", "MetricSpec"]


assert (NUM_WAITING, KV_USAGE) == ("vllm:num_requests_waiting", "vllm:kv_cache_usage_perc")
PAPER_METRICS: tuple[PodsMetric, ...] = (
    PodsMetric(type="Pods", metric="vllm:num_requests_waiting", average_value=3.0),
    PodsMetric(type="Pods", metric="vllm:kv_cache_usage_perc", average_value=0.5),
)


class HPAConfig(AutoscalerConfig):
    kind: Literal["hpa"] = Field(default="hpa", description="Kubernetes HPA autoscaling/v2 model.")
    period_s: float = Field(
        default=15.0, gt=0, description="Sync period (--horizontal-pod-autoscaler-sync-period), seconds."
    )
    metrics: list[MetricSpec] = Field(  # type: ignore[valid-type]
        default_factory=lambda: list[PodsMetric | ExternalMetric](PAPER_METRICS),
        min_length=1,
        description="Metrics; the largest proposal wins. Default: the paper's baseline, Pods "
        "num_requests_waiting avg 3 and kv_cache_usage_perc avg 0.5.",
    )
    tolerance: float = Field(
        default=0.1, ge=0, lt=1, description="No change while |usage/target - 1| <= tolerance.",
        json_schema_extra=tune(0.0, 0.5),
    )
    downscale_stabilization_s: int = Field(
        default=300, ge=0, le=3600,
        description="Controller default scale-down stabilisation when behavior leaves it unset, seconds.",
        json_schema_extra=tune(0, 900),
    )
    behavior: Behavior | None = Field(
        default_factory=Behavior, description="scaleUp / scaleDown rules; unset fields take upstream defaults. "
        "null: an HPA object without `behavior`, which upstream runs on the legacy path (at most "
        "max(2 x current, 4) replicas per sync, the highest recommendation over downscale_stabilization_s).",
    )
    scale_to_zero: bool = Field(
        default=False,
        description="HPAScaleToZero feature gate: honour a variant's min_replicas 0; otherwise min is at least 1.",
    )

    def tunables(self) -> list[Tunable]:
        """Tolerance, each metric's target and the stabilisation windows in force (the scale-down window
        is ``behavior.scale_down``'s when set, else ``downscale_stabilization_s``)."""
        down = self.behavior.scale_down.stabilization_window_seconds if self.behavior is not None else None
        out = [t for t in declared(self) if t.path != "downscale_stabilization_s" or down is None]
        out += [metric_target(f"metrics.{i}", m) for i, m in enumerate(self.metrics)]
        if self.behavior is not None:
            up = self.behavior.scale_up.stabilization_window_seconds
            out.append(Tunable("behavior.scale_up.stabilization_window_seconds", "int", 0 if up is None else up,
                               low=0, high=300, description="Scale-up stabilisation window, seconds."))
            if down is not None:
                out.append(Tunable("behavior.scale_down.stabilization_window_seconds", "int", down, low=0,
                                   high=900, description="Scale-down stabilisation window, seconds."))
        return out


def metric_target(path: str, m: PodsMetric | ExternalMetric) -> Tunable:
    """The tunable target of one metric: a KV-usage average over 0.1 .. 1, any other a quarter to four times
    its configured value on a log scale (its unit depends on the metric)."""
    field = "average_value" if isinstance(m, PodsMetric) or m.average_value is not None else "value"
    value = getattr(m, field)
    what = f"target {field} of {metric_label(m)}"
    if isinstance(m, PodsMetric) and m.metric == KV_USAGE:
        return Tunable(f"{path}.{field}", "float", value, low=0.1, high=1.0, description=what)
    return around(f"{path}.{field}", value, description=what)


class HPA(AutoscalerBase):
    kind: ClassVar[str] = "hpa"
    config: HPAConfig
    hpa_sync = True

    def __init__(self, config: HPAConfig) -> None:
        super().__init__(config)
        self._engines: dict[str, HPAEngine] = {}

    def _engine(self, name: str) -> HPAEngine:
        if name not in self._engines:
            c = self.config
            self._engines[name] = HPAEngine(c.metrics, c.tolerance, c.behavior, c.downscale_stabilization_s)
        return self._engines[name]

    def decide(self, now: float, view: ClusterView) -> list[Decision]:
        out = []
        for v in view.variants:
            lo = v.min_replicas if (self.config.scale_to_zero or v.min_replicas > 0) else 1
            lo = min(lo, v.max_replicas)
            out.append(self._engine(v.name).decide(now, view, v, lo, v.max_replicas))
        return out
