"""Hand-built cluster views for autoscaler unit tests: a pod, a variant, a view, and
a MetricsReader fake that answers fixed numbers or fails like an unreachable
Prometheus."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from scalearena.contracts.errors import MetricsUnavailable
from scalearena.controllers.base import ArrivalForecast, ClusterView, PodMetrics, VariantView


class FakeMetrics:
    """A MetricsReader with a fixed p99 (seconds) or one that always raises."""

    def __init__(self, p99_s: float | None = None, unavailable: bool = False) -> None:
        self.p99_s = p99_s
        self.unavailable = unavailable

    def _check(self) -> None:
        if self.unavailable:
            raise MetricsUnavailable("prometheus unreachable (fake)")

    def pod_max_over_time(self, variant: str, metric: str, window_s: float) -> dict[str, float]:
        self._check()
        return {}

    def pod_avg_over_time(self, variant: str, metric: str, window_s: float) -> dict[str, float]:
        self._check()
        return {}

    def counter_increase(self, variant: str, metric: str, window_s: float) -> float:
        self._check()
        return 0.0

    def histogram_quantile(self, variant: str, metric: str, q: float, window_s: float) -> float | None:
        self._check()
        return self.p99_s

    def query(self, expr: str, at: float | None = None) -> list[dict[str, Any]]:
        """PromQL: an empty vector (no such series), or the outage."""
        self._check()
        return []


def pod(i: int, kv: float = 0.0, waiting: int = 0, running: int = 0, gpu: float | None = None,
        ts: float = 0.0) -> PodMetrics:
    return PodMetrics(pod=f"p{i}", ts=ts, kv_usage=kv, waiting=waiting, running=running, gpu_util=gpu)


def pods(*waiting: int, kv: float = 0.0) -> tuple[PodMetrics, ...]:
    return tuple(pod(i, kv=kv, waiting=w) for i, w in enumerate(waiting))


def variant(
    name: str = "v",
    spec: int = 2,
    pods: Sequence[PodMetrics] = (),
    ready: int | None = None,
    pending: int = 0,
    min_replicas: int = 1,
    max_replicas: int = 10,
    metrics_available: bool = True,
    model: str = "m",
    cost: float = 1.0,
    startup_s: float | None = None,
    engine: Mapping[str, Any] | None = None,
) -> VariantView:
    pods = tuple(pods)
    return VariantView(
        name=name, model=model, gpu="A100-80GB", gpus_per_replica=1, cost=cost,
        min_replicas=min_replicas, max_replicas=max_replicas, spec_replicas=spec,
        ready=len(pods) if ready is None else ready, pending=pending, terminating=0, pods=pods,
        metrics_available=metrics_available, startup_s=startup_s, engine=dict(engine or {}),
    )


def view(
    now: float,
    *variants: VariantView,
    router_queue: Mapping[str, int] | None = None,
    forecast: Sequence[ArrivalForecast] = (),
    metrics: Any = None,
) -> ClusterView:
    return ClusterView(
        now=now, variants=tuple(variants), metrics=metrics or FakeMetrics(),
        router_queue=dict(router_queue or {}), forecast=tuple(forecast),
    )
