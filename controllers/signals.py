"""Named load signals computed from a ``VariantView``: what an External metric or
a KEDA prometheus query returns.

HPA External metrics and KEDA triggers read one number per variant from
Prometheus. In ``sim`` and ``local`` runs the numbers come from the view, so
each query has a name here, one definition, and the PromQL it stands for
(``SIGNAL_QUERIES``) for writing the matching Kubernetes objects.

Sums are over the variant's ready pods that metrics cover. ``queue`` also
counts the requests the gateway holds for the variant's model (the router
queue, llm-d flow control): without it a variant at zero replicas shows no
load and a KEDA ScaledObject could never activate. With several variants of
one model each variant sees the whole gateway queue, as each ScaledObject's
model-level query would.

A metric written as PromQL instead (a user's HPA or ScaledObject) is read
with ``query_rows``: the instant query through ``view.metrics.query`` (the
MetricsSource: the in-memory engine in sim, the real Prometheus elsewhere),
one ``(labels, value)`` row per series.
"""
from __future__ import annotations

from typing import Any, Literal

from scalearena.contracts.errors import MetricsUnavailable
from scalearena.controllers.base import ClusterView, VariantView

Signal = Literal[
    "queue", "waiting_sum", "running_sum", "inflight_sum", "kv_sum", "kv_mean", "gateway_queue"
]

SIGNAL_QUERIES: dict[str, str] = {
    "queue": "sum(vllm:num_requests_waiting{variant}) + gateway queue of the model",
    "waiting_sum": "sum(vllm:num_requests_waiting{variant})",
    "running_sum": "sum(vllm:num_requests_running{variant})",
    "inflight_sum": "sum(running + waiting{variant}) + gateway queue of the model",
    "kv_sum": "sum(vllm:kv_cache_usage_perc{variant})",
    "kv_mean": "avg(vllm:kv_cache_usage_perc{variant})",
    "gateway_queue": "requests queued at the gateway for the model",
}


def signal_value(view: ClusterView, v: VariantView, signal: str) -> float:
    """The value of ``signal`` for variant ``v``; raises ``MetricsUnavailable`` when the
    metrics backend could not be read."""
    if not v.metrics_available:
        raise MetricsUnavailable(f"metrics for variant {v.name} unavailable")
    gateway = float(view.router_queue.get(v.model, 0))
    pods = v.pods
    if signal == "queue":
        return float(sum(p.waiting for p in pods)) + gateway
    if signal == "waiting_sum":
        return float(sum(p.waiting for p in pods))
    if signal == "running_sum":
        return float(sum(p.running for p in pods))
    if signal == "inflight_sum":
        return float(sum(p.running + p.waiting for p in pods)) + gateway
    if signal == "kv_sum":
        return float(sum(p.kv_usage for p in pods))
    if signal == "kv_mean":
        return sum(p.kv_usage for p in pods) / len(pods) if pods else 0.0
    if signal == "gateway_queue":
        return gateway
    raise ValueError(f"unknown signal {signal!r}")


def query_rows(view: ClusterView, expr: str) -> list[tuple[dict[str, str], float]]:
    """The instant PromQL ``expr`` (as of the view's time) as ``(labels, value)`` rows (a scalar result is one
    row without labels). Raises ``MetricsUnavailable`` when the source cannot answer."""
    result: list[Any] = view.metrics.query(expr)  # at the time the view was built for
    if len(result) == 2 and not isinstance(result[0], dict):  # a scalar: [t, "v"]
        return [({}, float(result[1]))]
    return [(dict(item.get("metric", {})), float(item["value"][1])) for item in result]
