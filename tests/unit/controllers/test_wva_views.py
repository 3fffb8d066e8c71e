"""Hand-built cluster views and a fake MetricsReader for the wva tests.

The fake sits at our own adapter boundary (``MetricsReader``): each pod's
``kv_usage`` / ``waiting`` sample doubles as its max_over_time peak, success
counts are set per variant, and ``fail=True`` makes every query raise
``MetricsUnavailable`` as an unreachable Prometheus would. The other wva test
modules import the builders from here.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from scalearena.contracts.errors import MetricsUnavailable
from scalearena.contracts.series import KV_USAGE, NUM_WAITING, REQUEST_SUCCESS
from scalearena.controllers.base import ClusterView, PodMetrics, VariantView

NOW = 1000.0


@dataclass
class FakeMetrics:
    variants: Sequence[VariantView]
    successes: dict[str, float] = field(default_factory=dict)
    fail: bool = False
    fail_counter: bool = False
    calls: list[tuple[str, str, str, float]] = field(default_factory=list)

    def _variant(self, name: str) -> VariantView:
        return next(v for v in self.variants if v.name == name)

    def pod_max_over_time(self, variant: str, metric: str, window_s: float) -> dict[str, float]:
        self.calls.append(("max", variant, metric, window_s))
        if self.fail:
            raise MetricsUnavailable("prometheus unreachable")
        pods = self._variant(variant).pods
        if metric == KV_USAGE:
            return {p.pod: p.kv_usage for p in pods}
        if metric == NUM_WAITING:
            return {p.pod: float(p.waiting) for p in pods}
        raise AssertionError(metric)

    def pod_avg_over_time(self, variant: str, metric: str, window_s: float) -> dict[str, float]:
        raise AssertionError("wva does not read averages")

    def counter_increase(self, variant: str, metric: str, window_s: float) -> float:
        self.calls.append(("increase", variant, metric, window_s))
        assert metric == REQUEST_SUCCESS
        if self.fail or self.fail_counter:
            raise MetricsUnavailable("prometheus unreachable")
        return self.successes.get(variant, 0.0)

    def histogram_quantile(self, variant: str, metric: str, q: float, window_s: float) -> float | None:
        raise AssertionError("wva does not read histograms")


def variant(
    name: str,
    pods: Sequence[tuple[float, float]] = (),
    *,
    model: str = "m",
    gpu: str = "A100",
    cost: float = 1.0,
    gpus: int = 1,
    min_replicas: int = 0,
    max_replicas: int = 10,
    spec: int | None = None,
    ready: int | None = None,
    pending: int = 0,
    terminating: int = 0,
    ts: float = NOW,
    running: int = 0,
    metrics_available: bool = True,
    target_exists: bool = True,
) -> VariantView:
    """A variant whose ready pods report (kv, waiting) peaks; spec and ready default to len(pods)."""
    samples = tuple(
        PodMetrics(pod=f"{name}-{i}", ts=ts, kv_usage=kv, waiting=int(q), running=running)
        for i, (kv, q) in enumerate(pods)
    )
    n = len(pods)
    return VariantView(
        name=name, model=model, gpu=gpu, gpus_per_replica=gpus, cost=cost,
        min_replicas=min_replicas, max_replicas=max_replicas,
        spec_replicas=n if spec is None else spec, ready=n if ready is None else ready,
        pending=pending, terminating=terminating, pods=samples,
        metrics_available=metrics_available, target_exists=target_exists,
    )


def view(
    *variants: VariantView,
    now: float = NOW,
    router_queue: dict[str, int] | None = None,
    gpu_capacity: dict[str, int] | None = None,
    metrics: FakeMetrics | None = None,
    successes: dict[str, float] | None = None,
) -> ClusterView:
    return ClusterView(
        now=now,
        variants=tuple(variants),
        metrics=metrics or FakeMetrics(variants, successes=dict(successes or {})),
        router_queue=dict(router_queue or {}),
        gpu_capacity=gpu_capacity,
    )


def by_variant(decisions: Sequence) -> dict:
    return {d.variant: d for d in decisions}


def test_fake_reader_reports_pod_peaks_and_fails_on_demand() -> None:
    v = variant("va", [(0.5, 2)])
    m = FakeMetrics([v])
    assert m.pod_max_over_time("va", KV_USAGE, 60) == {"va-0": 0.5}
    assert m.pod_max_over_time("va", NUM_WAITING, 60) == {"va-0": 2.0}
    m.fail = True
    try:
        m.pod_max_over_time("va", KV_USAGE, 60)
    except MetricsUnavailable:
        pass
    else:  # pragma: no cover
        raise AssertionError("expected MetricsUnavailable")
