"""The simulator's metrics backend: scrapes kept in memory, queried like Prometheus.

The simulator scrapes every ready pod every ``scrape_interval_s`` and hands the
sample to ``MemoryMetrics.record``. Controllers query it through the
``MetricsReader`` methods, which mirror the PromQL upstream autoscalers use.
Semantics kept from Prometheus, because controllers' behaviour depends on them:

- a pod's series is gone once its newest sample is older than ``staleness_s``
  (Prometheus' 5-minute lookback), so a deleted pod drops out of the results
  after that delay, not at once;
- ``*_over_time`` looks only at samples inside ``(now - window, now]``;
- counters and histograms use ``increase``: the newest sample minus the last
  sample at or before the window start (or the first one inside the window:
  a series born inside the window is not counted from zero);
- during a ``metrics_outage`` fault every query raises ``MetricsUnavailable``.

Raw PromQL (``query`` / ``query_range``) is answered by the PromQL engine
(harness/promql) over the native series every scrape also appends, with the
names and labels of contracts/series.py (vLLM gauges, the success, token and
prefix-cache counters and the latency histograms per pod, labelled
``namespace``, ``pod``, ``model_name``, ``variant``; the llm-d EPP's pool
gauges per model and its in-flight tokens per endpoint; kube-state-metrics
per Deployment; the gateway's queue per model), and over what recording rules (``add_rules``)
derive from them; the engine follows Prometheus exactly (closed windows,
extrapolated ``increase``), which the fixed methods above predate.

An empty result (no pod has fresh data) is an empty dict / 0 / None, as an
empty Prometheus vector is; only an unreachable backend raises.
"""
from __future__ import annotations

import math
from bisect import bisect_right
from collections import deque
from collections.abc import Callable
from typing import Any, NamedTuple

from scalearena.contracts.errors import MetricsUnavailable
from scalearena.contracts.series import (
    E2E_HIST,
    EPP_POOL_SATURATION,
    EPP_QUEUE_SIZE,
    EPP_REQUEST_RUNNING,
    GPU_UTIL,
    ITL_HIST,
    KV_USAGE,
    NAMESPACE,
    NUM_RUNNING,
    NUM_WAITING,
    OBJECTIVE_INPUT_TOKENS,
    OBJECTIVE_OUTPUT_TOKENS,
    OBJECTIVE_REQUESTS,
    REQUEST_SUCCESS,
    ROUTER_QUEUE,
    TTFT_HIST,
    deployment_values,
    epp_labels,
)
from scalearena.controllers.base import PodMetrics
from scalearena.harness.metrics.native_keys import NativeKeys, epp_latency_keys, native_keys
from scalearena.harness.promql import TSDB, PromQLEngine
from scalearena.harness.promql.rules import RuleEvaluator, RuleGroup
from scalearena.harness.promql.tsdb import to_ms
from scalearena.harness.promql.values import Labels, make_labels, to_api_result
from scalearena.harness.sim.engine.histogram import (
    E2E_BUCKETS,
    ITL_BUCKETS,
    TTFT_BUCKETS,
    EppLatency,
    Histogram,
    quantile_from_buckets,
)


class Sample(NamedTuple):
    t: float
    kv_usage: float
    waiting: int
    running: int
    gpu_util: float | None
    success_total: float
    ttft: tuple[float, ...]  # cumulative bucket counts (last = +Inf)
    itl: tuple[float, ...]
    e2e: tuple[float, ...]
    prefix_queries: float = 0.0  # vllm:prefix_cache_queries_total (prompt tokens looked up)
    prefix_hits: float = 0.0  # vllm:prefix_cache_hits_total
    # vllm:prompt_tokens_total, vllm:generation_tokens_total, and the EPP's in-flight tokens to this pod
    prompt_tokens: float = 0.0
    generation_tokens: float = 0.0
    inflight_tokens: float = 0.0
    sums: tuple[float, float, float] = (0.0, 0.0, 0.0)  # the TTFT / ITL / E2E histograms' _sum


# Metric name -> how to read it off a Sample (the gauge value; the histogram's cumulative buckets and bounds).
_GAUGES: dict[str, Callable[[Sample], float | None]] = {
    KV_USAGE: lambda s: s.kv_usage,
    NUM_WAITING: lambda s: s.waiting,
    NUM_RUNNING: lambda s: s.running,
    GPU_UTIL: lambda s: s.gpu_util,
}
_HISTS: dict[str, tuple[Callable[[Sample], tuple[float, ...]], tuple[float, ...]]] = {
    TTFT_HIST: (lambda s: s.ttft, TTFT_BUCKETS),
    ITL_HIST: (lambda s: s.itl, ITL_BUCKETS),
    E2E_HIST: (lambda s: s.e2e, E2E_BUCKETS),
}


def last_on_grid(now: float, spacing: float, offset: float) -> float:
    """The last point of offset + k x spacing at or before ``now`` (a point within 1e-9 of it counts as at it):
    where a loop on its own fixed grid (a scrape target's offset, the wall clock's whole seconds) last ran."""
    return offset + math.floor((now - offset) / spacing + 1e-9) * spacing


class MemoryMetrics:
    """In-memory ``harness.control.ports.MetricsSource`` (and ``controllers.base.MetricsReader``)."""

    def __init__(self, staleness_s: float = 300.0, retention_s: float = 1800.0, namespace: str = NAMESPACE) -> None:
        self.staleness_s = staleness_s
        self.retention_s = max(retention_s, staleness_s)
        self.now = 0.0  # set by the owner (evaluate_at) before a controller queries
        self.available = True  # False during a metrics outage
        self.query_grid = (1.0, 0.0)  # the wall clock's whole seconds: (spacing, offset), keda_query_time
        self._series: dict[str, dict[str, deque[Sample]]] = {}
        # variant -> (num_gpu_blocks, block_size): what vllm:cache_config_info would say of its pods
        self.cache_config: dict[str, tuple[int | None, int | None]] = {}
        self.models: dict[str, str] = {}  # variant -> model_name label (default: the variant's name)
        self.namespace = namespace
        self.tsdb = TSDB(retention_s=self.retention_s)
        self.promql = PromQLEngine(self.tsdb, lookback_s=staleness_s)
        self._rules: RuleEvaluator | None = None
        self.epp: dict[str, EppLatency] = {}  # model -> the EPP's request histograms (``epp_latency``)
        self._epp_keys: dict[str, list[tuple[list[Labels], Labels, Labels, Histogram]]] = {}  # built once
        self._keys: dict[tuple[str, str], NativeKeys] = {}
        # scrapes not yet in the TSDB: written when PromQL is first asked (or the backlog is long), so a
        # run whose policies never send PromQL pays nothing for the native series
        # (variant, pod, Sample) per scrape, or (variant, pod, t) when the pod stopped being scraped at t
        self._unflushed: list[tuple[str, str, Sample | float]] = []
        self._unflushed_deployments: list[tuple[Labels, int, float]] = []
        self._scraped_now: set[tuple[str, str]] = set()
        self._scraped_before: set[tuple[str, str]] = set()

    # ---- writing ----------------------------------------------------------------------------------
    def record(self, variant: str, pod: str, sample: Sample) -> None:
        q = self._series.setdefault(variant, {}).setdefault(pod, deque())
        q.append(sample)
        horizon = sample.t - self.retention_s
        while q and q[0].t < horizon:
            q.popleft()
        self._unflushed.append((variant, pod, sample))
        self._scraped_now.add((variant, pod))
        if len(self._unflushed) + len(self._unflushed_deployments) >= _MAX_UNFLUSHED:
            self.flush_native()

    def end_scrape(self, t: float) -> None:
        """Close a scrape round: a pod scraped last round but not this one (deleted, not ready) gets
        staleness markers on its series at t, as Prometheus writes them when a target goes away."""
        for variant, pod in sorted(self._scraped_before - self._scraped_now):
            self._unflushed.append((variant, pod, t))
        self._scraped_before, self._scraped_now = self._scraped_now, set()

    def record_deployment(self, variant: str, t: float, spec: int, active: int, ready: int) -> None:
        """kube-state-metrics for the variant's Deployment (named after the variant), as scraped at t.

        ``status.replicas`` counts the non-terminating pods, ``unavailable`` is spec - ready (floored at
        0; minReadySeconds 0, so ready pods are available), per kube-state-metrics' deployment metrics.
        """
        lab = {"namespace": self.namespace, "deployment": variant}
        for name, value in deployment_values(spec, active, ready):
            self._unflushed_deployments.append((make_labels(name, lab), to_ms(t), value))

    def record_pool(self, model: str, t: float, queued: int, saturation: float, in_flight: int,
                    objective: tuple[float, float, float, float] | None = None, gateway: int = 0) -> None:
        """The llm-d EPP's pool gauges for one model's InferencePool (named after the model), scraped at t:
        requests held in flow control, the saturation detector's value, requests dispatched and not done;
        ``objective``: the EPP's request counters so far (requests received, their prompt tokens, output tokens
        and count of completed requests), as ``inference_objective_*`` (histograms as _sum / _count); and the
        gateway's own queue gauge (``gateway``: held while no engine of the model is ready)."""
        lab = epp_labels(model, self.namespace)
        for name, value in ((EPP_QUEUE_SIZE, queued), (EPP_POOL_SATURATION, saturation),
                            (EPP_REQUEST_RUNNING, in_flight)):
            self._unflushed_deployments.append((make_labels(name, lab), to_ms(t), float(value)))
        key = make_labels(ROUTER_QUEUE, {"namespace": self.namespace, "model_name": model})
        self._unflushed_deployments.append((key, to_ms(t), float(gateway)))
        keys = self._epp_keys.get(model)
        if keys is None:
            keys = self._epp_keys[model] = epp_latency_keys(self.namespace, model, self.epp_latency(model))
        t_ms, out = to_ms(t), self._unflushed_deployments
        for buckets, sum_key, count_key, hist in keys:
            out.extend((k, t_ms, c) for k, c in zip(buckets, hist.cumulative(), strict=True))
            out.append((sum_key, t_ms, hist.sum))
            out.append((count_key, t_ms, hist.count))
        if objective is None:
            return
        obj = {"namespace": self.namespace, "service": f"{model}-epp", "model_name": model, "target_model_name": model}
        received, in_tokens, out_tokens, done = objective
        for name, value in ((OBJECTIVE_REQUESTS, received), (f"{OBJECTIVE_INPUT_TOKENS}_sum", in_tokens),
                            (f"{OBJECTIVE_INPUT_TOKENS}_count", received), (f"{OBJECTIVE_OUTPUT_TOKENS}_sum", out_tokens),
                            (f"{OBJECTIVE_OUTPUT_TOKENS}_count", done)):
            self._unflushed_deployments.append((make_labels(name, obj), to_ms(t), float(value)))

    def epp_latency(self, model: str) -> EppLatency:
        """The model's EPP request histograms, for the simulator's requests to observe into."""
        h = self.epp.get(model)
        if h is None:
            h = self.epp[model] = EppLatency()
        return h

    def flush_native(self) -> None:
        """Write the held-back scrapes into the TSDB (done before every PromQL read)."""
        for variant, pod, sample in self._unflushed:
            if isinstance(sample, Sample):
                self._append_native(variant, pod, sample)
            elif (variant, pod) in self._keys:
                self._mark_gone(self._keys[(variant, pod)], to_ms(sample))
        self._unflushed.clear()
        for key, t, value in self._unflushed_deployments:
            self.tsdb.append_ms(key, t, value)
        self._unflushed_deployments.clear()

    def _append_native(self, variant: str, pod: str, sample: Sample) -> None:
        """The series a real Prometheus would hold after scraping this pod (contracts/series.py names)."""
        keys = self._keys.get((variant, pod))
        if keys is None:
            model = self.models.get(variant, variant)
            keys = self._keys[(variant, pod)] = native_keys(self.namespace, variant, pod, model,
                                                             self.cache_config.get(variant, (None, None)))
        t, app = to_ms(sample.t), self.tsdb.append_ms
        app(keys.kv, t, sample.kv_usage)
        app(keys.waiting, t, float(sample.waiting))
        app(keys.running, t, float(sample.running))
        app(keys.success, t, sample.success_total)
        if keys.prefix_queries is not None and keys.prefix_hits is not None:
            app(keys.prefix_queries, t, sample.prefix_queries)
            app(keys.prefix_hits, t, sample.prefix_hits)
        for key, value in zip(keys.tokens, (sample.prompt_tokens, sample.generation_tokens, sample.inflight_tokens),
                              strict=True):
            app(key, t, value)
        if sample.gpu_util is not None:
            app(keys.gpu, t, sample.gpu_util)
        if keys.cache is not None:
            app(keys.cache, t, 1.0)
        for (bucket_keys, count_key, sum_key), cumulative, total in zip(
                keys.hists, (sample.ttft, sample.itl, sample.e2e), sample.sums, strict=True):
            if len(cumulative) != len(bucket_keys):
                continue  # a sample without this histogram (test fakes pass empty tuples)
            for key, c in zip(bucket_keys, cumulative, strict=True):
                app(key, t, c)
            app(count_key, t, cumulative[-1])
            app(sum_key, t, total)

    def _mark_gone(self, keys: NativeKeys, t: int) -> None:
        singles = [keys.kv, keys.waiting, keys.running, keys.gpu, keys.success, keys.cache, keys.prefix_queries,
                   keys.prefix_hits, *keys.tokens]
        for key in [*singles, *(k for buckets, count, total in keys.hists for k in (*buckets, count, total))]:
            if key is not None:
                self.tsdb.mark_stale_key(key, t)

    def add_rules(self, groups: list[RuleGroup], offsets: dict[str, float] | None = None, start: float = 0.0) -> None:
        """Evaluate these recording rules on their interval, as the queried Prometheus would; ``offsets``: a group's
        evaluation offset by name (a real run's, Scenario.phases.rules_s), else its name's hash; ``start``: when
        the rule manager started (a real Prometheus runs its rules from before the load: -phases.control_lead_s)."""
        old = self._rules
        self._rules = RuleEvaluator(self.promql, [*(old.groups if old else []), *groups], start=start,
                                    offsets={**(old.offsets if old else {}), **(offsets or {})})

    # ---- reading ----------------------------------------------------------------------------------
    def _check(self) -> None:
        if not self.available:
            raise MetricsUnavailable("metrics backend unreachable (metrics_outage)")

    def _fresh(self, variant: str) -> dict[str, deque[Sample]]:
        cutoff = self.now - self.staleness_s
        return {p: q for p, q in self._series.get(variant, {}).items() if q and q[-1].t >= cutoff and q[-1].t <= self.now}

    def latest(self, variant: str) -> dict[str, Sample]:
        """The newest fresh sample of every pod of a variant (an instant query)."""
        self._check()
        out = {}
        for p, q in self._fresh(variant).items():
            out[p] = q[-1]
        return out

    # ---- MetricsSource ----------------------------------------------------------------------------
    def evaluate_at(self, now: float) -> None:
        self.now = now
        if self._rules is not None:
            self.flush_native()
            self._rules.advance(now)

    def latest_pod_samples(self, variant: str) -> list[PodMetrics]:
        """``latest`` as the view's ``PodMetrics`` (scrape time in virtual seconds), in scrape order."""
        blocks, block_size = self.cache_config.get(variant, (None, None))
        return [PodMetrics(pod, s.t, s.kv_usage, s.waiting, s.running, s.gpu_util, blocks, block_size)
                for pod, s in self.latest(variant).items()]

    def query(self, expr: str, at: float | None = None) -> list[dict[str, Any]]:
        """PromQL instant query at ``at`` (default: now) -> Prometheus' JSON ``result``."""
        self._check()
        self.flush_native()
        t = self.now if at is None else at
        if self._rules is not None:
            self._rules.advance(t)
        return to_api_result(self.promql.query(expr, t), to_ms(t))

    def keda_query_time(self, now: float) -> float:
        """When KEDA's Prometheus scaler asks at ``now``: the last whole wall second at or before it (its query's
        ``time`` is RFC 3339 without a fraction), on the grid ``query_grid`` (phases.keda_query_grid_s)."""
        return last_on_grid(now, *self.query_grid)

    def query_range(self, expr: str, start: float, end: float, step: float) -> list[dict[str, Any]]:
        """PromQL range query -> Prometheus' JSON ``result`` matrix."""
        self._check()
        self.flush_native()
        if self._rules is not None:
            self._rules.advance(end)
        return to_api_result(self.promql.query_range(expr, start, end, step), to_ms(end))

    def _window(self, q: deque[Sample], window_s: float) -> list[Sample]:
        lo = self.now - window_s
        return [s for s in q if lo < s.t <= self.now]

    def _per_pod(self, variant: str, metric: str, window_s: float,
                 agg: Callable[[list[float]], float]) -> dict[str, float]:
        """``agg by (pod)(agg_over_time(metric[window]))`` over fresh series; pods with no sample are absent."""
        self._check()
        gauge = _gauge(metric)
        out = {}
        for p, q in self._fresh(variant).items():
            vals = [v for s in self._window(q, window_s) if (v := gauge(s)) is not None]
            if vals:
                out[p] = float(agg(vals))
        return out

    def pod_max_over_time(self, variant: str, metric: str, window_s: float) -> dict[str, float]:
        return self._per_pod(variant, metric, window_s, max)

    def pod_avg_over_time(self, variant: str, metric: str, window_s: float) -> dict[str, float]:
        return self._per_pod(variant, metric, window_s, lambda v: sum(v) / len(v))

    def _increase_ends(self, q: deque[Sample], window_s: float) -> tuple[Sample, Sample] | None:
        """The two samples ``increase`` subtracts (start, end), or None when the series has none in the window."""
        lo = self.now - window_s
        samples = list(q)
        times = [s.t for s in samples]
        end = bisect_right(times, self.now) - 1
        if end < 0 or samples[end].t <= lo:
            return None
        start = bisect_right(times, lo) - 1
        if start < 0:
            start = 0
        return samples[start], samples[end]

    def counter_increase(self, variant: str, metric: str, window_s: float) -> float:
        self._check()
        if metric != REQUEST_SUCCESS:
            raise KeyError(f"memory metrics source has no counter {metric!r}")
        total = 0.0
        for q in self._series.get(variant, {}).values():
            ends = self._increase_ends(q, window_s)
            if ends is not None:
                a, b = ends
                total += float(max(0.0, b.success_total - a.success_total))
        return total

    def histogram_quantile(self, variant: str, metric: str, q: float, window_s: float) -> float | None:
        self._check()
        try:
            buckets, bounds = _HISTS[metric]
        except KeyError:
            raise KeyError(f"memory metrics source has no histogram {metric!r}") from None
        acc = [0.0] * (len(bounds) + 1)
        for series in self._series.get(variant, {}).values():
            ends = self._increase_ends(series, window_s)
            if ends is not None:
                a, b = ends
                inc = tuple(max(0.0, y - x) for x, y in zip(buckets(a), buckets(b), strict=True))
                for i, v in enumerate(inc):
                    acc[i] += v
        return quantile_from_buckets(q, bounds, tuple(acc))


_MAX_UNFLUSHED = 20_000  # pod scrapes held back at most (bounds memory on long runs without PromQL)


def _gauge(metric: str) -> Callable[[Sample], float | None]:
    try:
        return _GAUGES[metric]
    except KeyError:
        raise KeyError(f"memory metrics source has no gauge {metric!r} (have {sorted(_GAUGES)})") from None
