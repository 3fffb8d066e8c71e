"""The Prometheus ``MetricsReader``: the upstream PromQL, over prometheus-api-client.

Autoscalers on CLUSTER=local (and kind / cluster) read metrics here exactly as
their upstreams do, e.g. WVA's saturation analyzer asks
``max by (pod)(max_over_time(vllm:kv_cache_usage_perc{model_name="m"}[1m]))``.
Every query string is built by one function of this module (``PromQL``) and
pinned by golden files (tests/golden/promql/), so a change to what an
autoscaler sees is a visible diff.

Series are selected by ``model_name`` (the label vLLM puts on its metrics) and
by the variant label the scrape config attaches (``variant`` on local;
configurable, plus extra fixed labels such as ``namespace``).

Time scale: a run compressed by s (local CI runs) divides every PromQL range
window by s; the controller still asks for "1m" in scenario time.

Failures: an unreachable Prometheus, a timeout or a non-200 answer raises
``MetricsUnavailable`` (controllers then hold, as upstream WVA and HPA do).
Credentials (bearer token, client key) are passed to requests and never
appear in messages, logs or repr.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC
from typing import Any

import requests
from urllib3.util.retry import Retry

from scalearena.contracts.errors import MetricsUnavailable
from scalearena.contracts.series import (
    CACHE_CONFIG,
    EPP_QUEUE_SIZE,
    GPU_UTIL,
    KV_USAGE,
    NUM_RUNNING,
    NUM_WAITING,
    ROUTER_QUEUE,
)
from scalearena.controllers.base import PodMetrics


def promql_duration(seconds: float) -> str:
    """Seconds -> PromQL duration: 60 -> '1m', 15 -> '15s', 0.25 -> '250ms' (whole ms, >= 1 ms)."""
    ms = max(1, round(seconds * 1000))
    if ms % 3_600_000 == 0:
        return f"{ms // 3_600_000}h"
    if ms % 60_000 == 0:
        return f"{ms // 60_000}m"
    if ms % 1000 == 0:
        return f"{ms // 1000}s"
    return f"{ms}ms"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


@dataclass(frozen=True)
class PromQL:
    """Builds every query string; pure, so golden files can pin it."""

    variant_label: str = "variant"
    extra_labels: Mapping[str, str] = field(default_factory=dict)  # e.g. {"namespace": "llm-d"}
    time_scale: float = 1.0

    def selector(self, model: str, variant: str | None) -> str:
        labels = {"model_name": model, **self.extra_labels}
        if variant is not None:
            labels[self.variant_label] = variant
        return "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items()) + "}"

    def window(self, window_s: float) -> str:
        return promql_duration(window_s / self.time_scale)

    def pod_max_over_time(self, model: str, variant: str, metric: str, window_s: float) -> str:
        return f"max by (pod)(max_over_time({metric}{self.selector(model, variant)}[{self.window(window_s)}]))"

    def pod_avg_over_time(self, model: str, variant: str, metric: str, window_s: float) -> str:
        return f"avg by (pod)(avg_over_time({metric}{self.selector(model, variant)}[{self.window(window_s)}]))"

    def counter_increase(self, model: str, variant: str, metric: str, window_s: float) -> str:
        return f"sum(increase({metric}{self.selector(model, variant)}[{self.window(window_s)}]))"

    def histogram_quantile(self, model: str, variant: str, metric: str, q: float, window_s: float) -> str:
        sel = self.selector(model, variant)
        return f"histogram_quantile({q:g}, sum by (le)(rate({metric}_bucket{sel}[{self.window(window_s)}])))"

    def pod_latest(self, model: str, variant: str, metric: str) -> str:
        return f"max by (pod)({metric}{self.selector(model, variant)})"

    def pod_sample_time(self, model: str, variant: str) -> str:
        return f"max by (pod)(timestamp({KV_USAGE}{self.selector(model, variant)}))"

    def cache_config(self, model: str, variant: str) -> str:
        return f"max by (pod, num_gpu_blocks, block_size)({CACHE_CONFIG}{self.selector(model, variant)})"

    def router_queue(self, model: str) -> str:
        """Requests held at the gateway: the EPP's flow-control queue (serve-router counts its scale-from-zero
        queue in it too, as the simulator's ``router_queue`` does), else serve-router's own gauge. Reading
        only the latter left every flow-control hold out of kube runs' timeseries (found comparing sim and
        kwok: 0 where the gateway held 168)."""
        sel = self.selector(model, None)
        return f"sum({EPP_QUEUE_SIZE}{sel}) or sum({ROUTER_QUEUE}{sel})"


@dataclass(frozen=True)
class PrometheusAuth:
    """How to reach a protected Prometheus. Secrets are excluded from repr."""

    bearer_token: str | None = field(default=None, repr=False)
    bearer_token_file: str | None = None
    ca_file: str | None = None  # verify the server against this CA bundle
    client_cert: str | None = None  # mutual TLS
    client_key: str | None = field(default=None, repr=False)
    insecure_skip_verify: bool = False

    def token(self) -> str | None:
        if self.bearer_token:
            return self.bearer_token
        if self.bearer_token_file:
            with open(self.bearer_token_file, encoding="utf-8") as f:
                return f.read().strip()
        return None


def _session(auth: PrometheusAuth) -> requests.Session:
    s = requests.Session()
    if auth.insecure_skip_verify:
        s.verify = False
    elif auth.ca_file:
        s.verify = auth.ca_file
    if auth.client_cert:
        s.cert = (auth.client_cert, auth.client_key) if auth.client_key else auth.client_cert
    return s


class PrometheusMetrics:
    """``harness.control.ports.MetricsSource`` (and ``controllers.base.MetricsReader``) over a
    Prometheus HTTP API.

    ``clock`` (a ``harness.control.ports.WallClock``) maps between the run's scenario time and
    Prometheus' wall-clock timestamps: sample times in ``latest_pod_samples`` are returned in
    scenario seconds and ``query(expr, at)`` evaluates at the wall time of scenario time ``at``.
    Without it, times are Prometheus' own (unix seconds), as the in-cluster controller uses them.
    """

    def __init__(
        self,
        url: str,
        variants: Mapping[str, str],  # variant name -> model (model_name label value)
        *,
        promql: PromQL | None = None,
        auth: PrometheusAuth | None = None,
        timeout_s: float = 2.0,
        client: Any = None,  # a PrometheusConnect-like object (tests inject a fake)
        clock: Any = None,  # WallClock: scenario time <-> wall time; None: unix seconds throughout
    ) -> None:
        self.url = url
        self.clock = clock
        self.variants = dict(variants)
        self.promql = promql or PromQL()
        self.timeout_s = timeout_s
        auth = auth or PrometheusAuth()
        if client is None:
            from prometheus_api_client import PrometheusConnect

            token = auth.token()
            headers = {"Authorization": f"Bearer {token}"} if token else None
            client = PrometheusConnect(
                url=url,
                headers=headers,
                session=_session(auth),
                retry=Retry(total=0),  # no hidden back-off: a failed read is reported at once
                timeout=timeout_s,
            )
        self._client = client

    def __repr__(self) -> str:  # never show headers (they carry the token)
        return f"PrometheusMetrics(url={self.url!r}, variants={sorted(self.variants)})"

    # -- transport -------------------------------------------------------------------------------
    def _wall(self, t: float) -> float:
        return self.clock.t0 + t / self.clock.time_scale if self.clock is not None else t

    def query(self, promql: str, at: float | None = None) -> list[dict[str, Any]]:
        """Run an instant query (at Prometheus' present, or at time ``at``); any transport or API
        failure -> MetricsUnavailable."""
        try:
            if at is None:
                return list(self._client.custom_query(promql))
            return list(self._client.custom_query(promql, params={"time": repr(self._wall(at))}))
        except Exception as e:  # requests errors, PrometheusApiClientException, bad JSON
            kind = type(e).__name__
            raise MetricsUnavailable(f"prometheus at {self.url} could not answer ({kind})") from None

    def query_range(self, promql: str, start: float, end: float, step: float) -> list[dict[str, Any]]:
        """Run a range query over [start, end] every ``step`` seconds (the run's time)."""
        from datetime import datetime

        def stamp(t: float) -> datetime:
            return datetime.fromtimestamp(self._wall(t), tz=UTC)

        try:
            scale = self.clock.time_scale if self.clock is not None else 1.0
            return list(self._client.custom_query_range(promql, stamp(start), stamp(end),
                                                        promql_duration(step / scale)))
        except Exception as e:
            kind = type(e).__name__
            raise MetricsUnavailable(f"prometheus at {self.url} could not answer ({kind})") from None

    def evaluate_at(self, now: float) -> None:
        """Prometheus answers at its own present; nothing to pin."""

    def _model(self, variant: str) -> str:
        try:
            return self.variants[variant]
        except KeyError:
            raise MetricsUnavailable(f"unknown variant {variant!r}") from None

    @staticmethod
    def _by_pod(result: list[dict[str, Any]]) -> dict[str, float]:
        out: dict[str, float] = {}
        for series in result:
            pod = series.get("metric", {}).get("pod")
            value = float(series["value"][1])
            if pod is not None and not math.isnan(value):
                out[pod] = value
        return out

    # -- MetricsReader ---------------------------------------------------------------------------
    def pod_max_over_time(self, variant: str, metric: str, window_s: float) -> dict[str, float]:
        return self._by_pod(self.query(self.promql.pod_max_over_time(self._model(variant), variant, metric, window_s)))

    def pod_avg_over_time(self, variant: str, metric: str, window_s: float) -> dict[str, float]:
        return self._by_pod(self.query(self.promql.pod_avg_over_time(self._model(variant), variant, metric, window_s)))

    def counter_increase(self, variant: str, metric: str, window_s: float) -> float:
        result = self.query(self.promql.counter_increase(self._model(variant), variant, metric, window_s))
        if not result:
            return 0.0  # no series: no pod served the variant in the window
        # increase() extrapolates to the window edges; a counter cannot go up by a fraction of a request
        return float(result[0]["value"][1])

    def histogram_quantile(self, variant: str, metric: str, q: float, window_s: float) -> float | None:
        result = self.query(self.promql.histogram_quantile(self._model(variant), variant, metric, q, window_s))
        if not result:
            return None
        value = float(result[0]["value"][1])
        return None if math.isnan(value) else value

    # -- the harness's view builder ----------------------------------------------------------------
    def latest_pod_samples(self, variant: str) -> list[PodMetrics]:
        """The latest scraped sample of every pod of a variant (instant queries), for ClusterView."""
        model = self._model(variant)
        q = self.promql
        kv = self._by_pod(self.query(q.pod_latest(model, variant, KV_USAGE)))
        waiting = self._by_pod(self.query(q.pod_latest(model, variant, NUM_WAITING)))
        running = self._by_pod(self.query(q.pod_latest(model, variant, NUM_RUNNING)))
        gpu = self._by_pod(self.query(q.pod_latest(model, variant, GPU_UTIL)))
        ts = self._by_pod(self.query(q.pod_sample_time(model, variant)))
        blocks: dict[str, tuple[int | None, int | None]] = {}
        for series in self.query(q.cache_config(model, variant)):
            m = series.get("metric", {})
            if "pod" in m:
                nb, bs = m.get("num_gpu_blocks"), m.get("block_size")
                blocks[m["pod"]] = (int(nb) if nb else None, int(bs) if bs else None)
        out = []
        for pod in sorted(kv):
            nb, bs = blocks.get(pod, (None, None))
            out.append(
                PodMetrics(
                    pod=pod,
                    ts=self.clock.from_wall(ts.get(pod, 0.0)) if self.clock is not None else ts.get(pod, 0.0),
                    kv_usage=kv[pod],
                    waiting=int(waiting.get(pod, 0)),
                    running=int(running.get(pod, 0)),
                    gpu_util=gpu.get(pod),
                    num_gpu_blocks=nb,
                    block_size=bs,
                )
            )
        return out

    def router_queue(self, model: str) -> int:
        result = self.query(self.promql.router_queue(model))
        return int(float(result[0]["value"][1])) if result else 0
