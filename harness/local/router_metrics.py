"""serve-router's /metrics: the llm-d EPP's series (contracts/series.py), plus the router's own.

serve-router plays the llm-d gateway + EPP for every model it serves, so it
exports what an EPP exports, with the names, labels and types of the
catalogue and the labels the simulator gives them (``epp_labels``: service
``<model>-epp``, InferencePool ``<model>``; ``namespace`` comes from the scrape):

* ``llm_d_epp_flow_control_queue_size``: requests held for the model, in the
  flow-control queues and in the scale-from-zero gateway queue (the simulator
  counts both);
* ``llm_d_epp_flow_control_pool_saturation``: max over the model's ready
  engines of max(waiting / queue_threshold, KV usage / kv_threshold), on the
  router's last scrape of each engine, 1.0 with none ready (the detector fails
  closed), as the simulator computes it at each scrape;
* ``llm_d_epp_request_running``: requests the router has dispatched to the
  model's engines and not seen finish;
* ``llm_d_epp_inflight_tokens{endpoint_name, producer_name}``: per engine,
  the uncached prompt tokens the picker booked on it (harness/sim/router.py, the
  simulator's own booking), released when the request's first byte comes
  back or it ends without one (upstream: StartOfStream);
* ``llm_d_epp_request_ttft_seconds`` (request received -> first response
  byte; a non-streaming request's whole duration, as upstream) and
  ``llm_d_epp_request_ntpot_seconds`` (end-to-end / output tokens) for every
  request answered 200, with the upstream buckets, ``target_model_name`` =
  ``model_name`` (no model rewrite). Times are scenario seconds;
* the Gateway API Inference Extension's request series as the simulator
  counts them: ``inference_objective_request_total`` and
  ``inference_objective_input_tokens`` (prompt tokens) at every arrival for a
  served model, ``inference_objective_output_tokens`` at every request
  answered 200 (GIE's buckets);
* scalearena's gateway queue (``scalearena_router_queue_size``).

The gauges are computed when /metrics is read (a collector over the router's
state), so nothing drifts. Series exist only for served models and live
engines: a request for another model is 404 and counted once under
``model_name="__other__"`` (the router's own counter), so /metrics cannot
grow with junk names (issue 17). The predicted-latency histograms of the
catalogue need the EPP's latency predictor, which scalearena does not model.
"""
from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily, Metric

from scalearena.contracts.series import (
    EPP_INFLIGHT_TOKENS,
    EPP_NTPOT_BUCKETS,
    EPP_POOL_SATURATION,
    EPP_PRODUCER,
    EPP_QUEUE_SIZE,
    EPP_REQUEST_RUNNING,
    EPP_TPOT_HIST,
    EPP_TTFT_BUCKETS,
    EPP_TTFT_HIST,
    GIE_INPUT_TOKEN_BUCKETS,
    GIE_OUTPUT_TOKEN_BUCKETS,
    OBJECTIVE_INPUT_TOKENS,
    OBJECTIVE_OUTPUT_TOKENS,
    OBJECTIVE_REQUESTS,
    ROUTER_QUEUE,
    epp_labels,
)
from scalearena.harness.sim.router import NO_BOOKING, Booking

_POOL = ("service", "model_name", "inference_pool")  # the exporter's labels (namespace: the scrape's)
_HIST = (*_POOL, "target_model_name")
_OBJ = ("service", "model_name", "target_model_name")
_COMPLETION_TOKENS = re.compile(rb'"completion_tokens":\s*(\d+)')


@dataclass
class InFlight:
    """One proxied request: its engine, when it came in (scenario s), the router's booking of its
    in-flight tokens (released at the first byte), what has streamed back."""

    pod: str
    model: str
    received: float
    booked: Booking = NO_BOOKING
    streamed: int = 0  # SSE events passed through (one per token; the usage chunk and [DONE] end it)
    first_byte: float | None = None
    tail: bytes = b""  # the stream's last bytes: the usage chunk and [DONE] are there
    last_byte: int = 0  # the previous chunk's last byte (an event's "\n\n" may straddle two chunks)

    def feed(self, chunk: bytes, now: float) -> None:
        if self.first_byte is None:
            self.first_byte = now
            self.release()
        self.streamed += chunk.count(b"\n\n") + (self.last_byte == 10 and chunk[:1] == b"\n")
        self.last_byte = chunk[-1] if chunk else self.last_byte
        self.tail = (self.tail + chunk)[-512:]

    def release(self) -> None:
        """The in-flight tokens leave the endpoint's count (once: ``Booking.release`` is idempotent)."""
        self.booked.release()

    def output_tokens(self, body: bytes | None = None) -> int:
        """Completion tokens from the usage (a unary body, or the stream's usage chunk), else the events
        streamed less [DONE]."""
        found = _COMPLETION_TOKENS.findall(body if body is not None else self.tail)
        if found:
            return int(found[-1])
        return max(0, self.streamed - 1)


class RouterMetrics:
    """Every series serve-router exports. ``state`` returns what the gauges read at scrape time:
    ``(models, held requests by model, [(pod, model, ready, waiting, kv_usage, in-flight tokens)],
    thresholds (q, kv))``."""

    def __init__(self, state: Callable[[], EppState]) -> None:
        self.state = state
        self.inflight: dict[int, InFlight] = {}
        disable_created_metrics()  # no *_created series: the Go client the EPP uses writes none
        self.registry = CollectorRegistry(auto_describe=False)
        self.queue = Gauge(ROUTER_QUEUE, "Requests held at the gateway for lack of a ready engine.",
                           ["model_name"], registry=self.registry)
        self.requests = Counter("scalearena_router_requests", "Requests by outcome.", ["model_name", "outcome"],
                                registry=self.registry)
        self.per_pod = Gauge("scalearena_router_inflight", "Requests being proxied, per engine.", ["pod", "variant"],
                             registry=self.registry)
        self.ttft = Histogram(EPP_TTFT_HIST, "Time to first token in seconds, from request received to first response byte.",
                              list(_HIST), buckets=EPP_TTFT_BUCKETS, registry=self.registry)
        self.ntpot = Histogram(EPP_TPOT_HIST, "Normalized time per output token in seconds (end-to-end latency "
                               "divided by output token count).", list(_HIST), buckets=EPP_NTPOT_BUCKETS,
                               registry=self.registry)
        self.received = Counter(OBJECTIVE_REQUESTS.removesuffix("_total"), "Counter of inference objective requests "
                                "broken out for each model and target model.", list(_OBJ), registry=self.registry)
        self.input_tokens = Histogram(OBJECTIVE_INPUT_TOKENS, "Inference objective input token count distribution "
                                      "for requests in each model.", list(_OBJ), buckets=GIE_INPUT_TOKEN_BUCKETS,
                                      registry=self.registry)
        self.output_tokens = Histogram(OBJECTIVE_OUTPUT_TOKENS, "Inference objective output token count "
                                       "distribution for requests in each model.", list(_OBJ),
                                       buckets=GIE_OUTPUT_TOKEN_BUCKETS, registry=self.registry)
        self.registry.register(_EppGauges(self))

    def text(self) -> bytes:
        for model in self.state()[0]:  # every served model has its histograms from the start (zero counts)
            self.serve_model(model)
        return generate_latest(self.registry)

    # -- one request -------------------------------------------------------------------------------
    def arrived(self, model: str, prompt_tokens: int) -> None:
        """A request for a served model reached the router (inference_objective_*)."""
        labels = _obj_labels(model)
        self.received.labels(**labels).inc()
        self.input_tokens.labels(**labels).observe(prompt_tokens)

    def started(self, key: int, pod: str, variant: str, model: str, received: float,
                booked: Booking = NO_BOOKING) -> InFlight:
        self.per_pod.labels(pod, variant).inc()
        req = self.inflight[key] = InFlight(pod, model, received, booked)
        return req

    def finished(self, key: int, variant: str, now: float, ok: bool, body: bytes | None = None) -> None:
        """The request is over; ``ok`` (HTTP 200 to its end) observes its TTFT and NTPOT."""
        req = self.inflight.pop(key)
        req.release()  # ended without a first byte (an error, a unary response): the booking goes now
        self.per_pod.labels(req.pod, variant).dec()
        if not ok:
            return
        labels = _hist_labels(req.model)
        first = req.first_byte if req.first_byte is not None else now
        self.ttft.labels(**labels).observe(max(0.0, first - req.received))
        tokens = req.output_tokens(body)
        self.output_tokens.labels(**_obj_labels(req.model)).observe(tokens)
        if tokens > 0:
            self.ntpot.labels(**labels).observe(max(0.0, now - req.received) / tokens)

    def forget_pod(self, pod: str, variant: str) -> None:
        """A gone engine's own series, once nothing of it is in flight (pod churn cannot grow /metrics)."""
        if not any(r.pod == pod for r in self.inflight.values()):
            with contextlib.suppress(KeyError):
                self.per_pod.remove(pod, variant)

    def forget_model(self, model: str) -> None:
        """A model no engine serves any more and no --model names: its series go, so models registered and
        withdrawn through the admin API cannot grow /metrics (10,000 of them made it 110 MB)."""
        hist, obj = _hist_labels(model), _obj_labels(model)
        for metric, labels in ((self.ttft, hist), (self.ntpot, hist), (self.received, obj),
                               (self.input_tokens, obj), (self.output_tokens, obj)):
            with contextlib.suppress(KeyError):
                metric.remove(*labels.values())
        with contextlib.suppress(KeyError):
            self.queue.remove(model)
        for outcome in OUTCOMES:
            with contextlib.suppress(KeyError):
                self.requests.remove(model, outcome)

    def serve_model(self, model: str) -> None:
        """The model's series with zero counts until a request comes, as an EPP has them for its pool."""
        labels = _hist_labels(model)
        self.ttft.labels(**labels)
        self.ntpot.labels(**labels)
        for m in (self.received, self.input_tokens, self.output_tokens):
            m.labels(**_obj_labels(model))
        self.queue.labels(model)


OUTCOMES = ("routed", "rejected", "queue_full", "queue_timeout", "model_not_found")  # requests' outcome label


def _obj_labels(model: str) -> dict[str, str]:
    return {"service": epp_labels(model)["service"], "model_name": model, "target_model_name": model}


def _hist_labels(model: str) -> dict[str, str]:
    lab = {k: v for k, v in epp_labels(model).items() if k in _POOL}
    return {**lab, "target_model_name": model}


class _EppGauges:
    """The EPP's gauges, computed from the router's state at each scrape."""

    def __init__(self, metrics: RouterMetrics) -> None:
        self.m = metrics

    def collect(self) -> Iterator[Metric]:
        models, held, endpoints, (q_t, kv_t) = self.m.state()
        size = GaugeMetricFamily(EPP_QUEUE_SIZE, "Current number of requests held in the flow-control queue.",
                                 labels=list(_POOL))
        sat = GaugeMetricFamily(EPP_POOL_SATURATION, "Current saturation level of the inference pool (0.0 = empty, "
                                "1.0 = fully saturated).", labels=list(_POOL))
        running = GaugeMetricFamily(EPP_REQUEST_RUNNING, "Current number of active running requests.",
                                    labels=list(_POOL))
        tokens = GaugeMetricFamily(EPP_INFLIGHT_TOKENS, "Current number of in-flight tokens per endpoint.",
                                   labels=[*_POOL, "endpoint_name", "producer_name"])
        by_model: dict[str, int] = {}
        for r in self.m.inflight.values():
            by_model[r.model] = by_model.get(r.model, 0) + 1
        for model in models:
            pool = [epp_labels(model)[k] for k in _POOL]
            ready = [(w, kv) for _, m, ok, w, kv, _ in endpoints if m == model and ok]
            size.add_metric(pool, float(held.get(model, 0)))
            sat.add_metric(pool, max((max(w / max(1.0, q_t), kv / kv_t) for w, kv in ready), default=1.0))
            running.add_metric(pool, float(by_model.get(model, 0)))
        for pod, model, _, _, _, booked in endpoints:
            tokens.add_metric([*(epp_labels(model)[k] for k in _POOL), pod, EPP_PRODUCER], float(booked))
        yield from (size, sat, running, tokens)


EppState = tuple[list[str], dict[str, int], list[tuple[str, str, bool, int, float, int]], tuple[float, float]]


def epp_state(server: Any) -> EppState:
    """What the EPP gauges read of a ``RouterServer``: served models, requests held per model (gateway
    queue + flow control), every engine (pod, model, ready, waiting, KV usage, in-flight tokens booked on it),
    the saturation thresholds."""
    held = dict(server._queued)
    for model, q in (server.flow.queues.items() if server.flow is not None else ()):
        held[model] = held.get(model, 0) + len(q)
    eps = [(ep.pod, ep.model, ep.state == "ready", ep.waiting, ep.kv_usage,
            ep.routed.inflight_tokens if ep.routed is not None else 0) for ep in server.endpoints.values()]
    adm = server.cfg.spec.admission
    return sorted(server.models), held, eps, (float(adm.queue_threshold), float(adm.kv_threshold))
