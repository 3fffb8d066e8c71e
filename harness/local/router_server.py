# size: the gateway shell is one aiohttp server object: membership, EPP-like scrapes, admin API, routing waits and the streaming proxy (with the P/D hand-off) share its state
"""`scalearena serve-router`: the gateway in front of the local engines.

The same endpoint picker the simulator uses (harness/sim/router.py: weighted
queue / KV / prefix scorers, saturation admission) decides; this module is
its HTTP shell, playing the part of llm-d's gateway + EPP:

* it reads every registered engine's /metrics itself every ``refresh_s``
  (scenario time), as the EPP's metrics refresh loop does, and the picker
  scores on those snapshots;
* it proxies the request (streaming or not) to the chosen engine and adds
  ``x-scalearena-pod`` / ``x-scalearena-variant`` response headers so the
  client can attribute every request;
* 429 when every ready engine of the model is saturated (or its own queue is
  full), or with ``admission.kind: flow_control`` a wait in flow-control queues
  (router_flow.py); when the model has no ready engine at all the request waits in the
  gateway queue (``scalearena_router_queue_size{model_name}`` on /metrics,
  the scale-from-zero signal) until one becomes ready or the queue timeout;
* prefill/decode disaggregation: with a prefill pod picked too, the sidecar's prefill call goes
  first (router_pd.py); the picker's in-flight tokens are released at the first chunk;
* a stream that breaks before ``[DONE]`` gets a final SSE error chunk: type
  ``killed`` when the harness had marked the engine as terminating (a
  scale-down), ``error`` otherwise (a crash).

Models: the router serves the models named by ``--model`` (every model
that may scale from zero) and any model an engine registers with; a request
for another model gets 404 at once, and its /metrics series share one
``model_name="__other__"`` label so junk names cannot grow the page. The
scale-from-zero queue holds at most ``admission.queue_limit`` requests per
model, as the simulator's gateway does, so one model's flood cannot starve
another's cold start.

Engines are registered by the harness: ``PUT /admin/endpoints`` with the full
list, or a JSON file given by --endpoints-file that the router re-reads when
it changes. Each entry: pod, variant, model, url, state (ready | draining).
``GET /admin/state`` returns the router's view (queues, per-pod snapshots,
in-flight counts) for the harness's time series. The admin API is off unless
``--admin-token-file`` names a file holding a token; then every admin call
needs ``Authorization: Bearer <token>`` (401 otherwise). The local harness
generates a fresh token per run in the run folder (mode 0600) and hands it
to the router only through that file. Without the flag /admin/* is 404.
``--admin-port`` moves the admin API to a listener of its own (on
``--admin-host``, loopback by default), so that in a cluster the API port can
be public while only the pod itself, or what a NetworkPolicy admits, reaches
the admin port.
"""
from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import math
import os
import signal
import time
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp import web

from scalearena.contracts.errors import UserError
from scalearena.contracts.files import read_regular
from scalearena.harness.local.http_guard import (
    ConnectionLimits,
    listen,
    log,
    make_app,
    read_body,
    setup_logging,
)
from scalearena.harness.local.metrics_text import parse_engine_metrics
from scalearena.harness.local.openai_api import (
    DEFAULT_MAX_TOKENS,
    ApiError,
    ParsedRequest,
    PromptCounter,
    parse_request,
)
from scalearena.harness.local.router_flow import FlowGate, flow_tags
from scalearena.harness.local.router_metrics import RouterMetrics, epp_state
from scalearena.harness.local.router_pd import (
    KV_PARAMS,
    pd_headers,
    prefill_then_decode_body,
    without_kv_params,
)
from scalearena.harness.sim.router import Route, RoutedPod, Router
from scalearena.workloads.base import RequestSpec
from scalearena.workloads.load_handoff import POD_HEADER, PROBE_HEADER, REQUEST_ID_HEADER, VARIANT_HEADER

ERROR_EVENT = b'data: {"error"'  # an OpenAI-style error event in a stream (ours, vLLM's, llm-d-inference-sim's)
PREFIX_BLOCK_TOKENS = 16  # the prefix scorer hashes the prompt in blocks of this many tokens (vLLM's default block)
OTHER_MODEL = "__other__"  # the model_name label of requests for models the router does not serve


@dataclass
class RouterServerConfig:
    spec: Any  # harness.config.scenario.RouterSpec
    host: str = "127.0.0.1"
    port: int = 8080
    endpoints_file: str | None = None
    time_scale: float = 1.0
    queue_timeout_s: float = 300.0  # scenario seconds a request may wait for a first ready engine
    seed: int = 0
    models: tuple[str, ...] = ()  # served even with no engine registered (scale from zero)
    admin_token: str | None = None  # None: the admin API is off
    admin_port: int | None = None  # a listener of its own for /admin/* (None: on the API port)
    admin_host: str = "127.0.0.1"
    handoff_key: bytes | None = None  # P/D: signs the hand-offs it passes to decode engines (handoff_auth.py)
    tokenizer: str | None = None
    limits: ConnectionLimits = field(default_factory=ConnectionLimits)
    trace_path: str | None = None  # a JSON line per routing decision and membership change (--trace-file)


def endpoint_entries(doc: Any) -> list[dict[str, Any]]:
    """The engines of an endpoints document (the admin PUT's body, the --endpoints-file):
    ``{"endpoints": [{pod, variant, model, url, state?, role?}]}``; ValueError naming what is wrong."""
    entries = doc.get("endpoints", []) if isinstance(doc, dict) else None
    if not isinstance(entries, list):
        raise ValueError('expected {"endpoints": [...]}')
    if len(entries) > MAX_ENDPOINTS:
        raise ValueError(f"{len(entries):,} endpoints; at most {MAX_ENDPOINTS:,}")
    for i, e in enumerate(entries):
        if not isinstance(e, dict) or not all(isinstance(e.get(k), str) for k in ("pod", "variant", "model", "url")) \
                or not isinstance(e.get("state", ""), str) or e.get("role", "both") not in ("both", "prefill", "decode"):
            raise ValueError(f"entry {i}: expected an object with string pod, variant, model, url (and state), "
                             f"role both|prefill|decode; got {e!r:.80}")
        long = [k for k in ("pod", "variant", "model", "url", "state") if len(e.get(k, "")) > MAX_NAME_CHARS]
        if long:
            raise ValueError(f"entry {i}: {long[0]} of {len(e[long[0]]):,} characters; at most {MAX_NAME_CHARS}")
    models = {e["model"] for e in entries}
    if len(models) > MAX_MODELS:
        raise ValueError(f"{len(models):,} models; at most {MAX_MODELS:,} (each has its own /metrics series)")
    return entries


MAX_ENDPOINTS = 4096  # engines in one endpoints document
MAX_MODELS = 256  # distinct models in it: each brings ~40 /metrics series
MAX_NAME_CHARS = 2048  # a pod, variant, model name or URL
TRACE_MAX_BYTES = 64 * 1024 * 1024  # --trace-file: ~200 k routed requests of a 6-pod pool (~300 bytes a line)


@dataclass(eq=False)
class Endpoint:
    """One engine as the router knows it; ``load(now)`` is what the picker calls."""

    pod: str
    variant: str
    model: str
    url: str
    state: str = "ready"
    waiting: int = 0
    running: int = 0
    kv_usage: float = 0.0
    gpu_util: float | None = None
    scraped_at: float | None = None
    scrape_ok: bool = False
    inflight: int = 0
    routed: RoutedPod | None = field(default=None, repr=False)
    role: str = "both"  # llm-d.ai/role: both | prefill | decode

    def load(self, now: float) -> tuple[int, int, float]:
        return (self.waiting, self.running, self.kv_usage)


class RouterServer:
    def __init__(self, cfg: RouterServerConfig) -> None:
        self.cfg = cfg
        self.router = Router(cfg.spec, seed=cfg.seed)
        self.models: set[str] = set(cfg.models)  # --model and the models of the registered engines
        self.prompts = PromptCounter(cfg.tokenizer)
        self.endpoints: dict[str, Endpoint] = {}
        self._mono0 = time.monotonic()
        self._queued: dict[str, int] = {}
        self.completed: dict[str, int] = {}  # variant -> streams/requests finished ok (harness time series)
        self._ready_changed = asyncio.Condition()
        self._file_mtime: float | None = None
        self.metrics = RouterMetrics(lambda: epp_state(self))  # the EPP's series and the router's own
        self._request_seq = 0
        self.session: aiohttp.ClientSession | None = None
        self.stopped = asyncio.Event()
        self._trace_left = TRACE_MAX_BYTES
        self._traced_pods: dict[str, str] | None = None
        try:  # closed in serve()
            self._trace = open(cfg.trace_path, "a", buffering=1) if cfg.trace_path else None  # noqa: SIM115
        except OSError as e:
            raise UserError(f"cannot write the trace file: {e.strerror}", where=f"--trace-file {cfg.trace_path}",
                            expected="a file path in a writable folder") from None
        flow = cfg.spec.admission.kind == "flow_control"
        self.flow = FlowGate(self.router, cfg.spec, self.now, self.trace_route if self._trace else None) if flow else None

    def now(self) -> float:
        return (time.monotonic() - self._mono0) * self.cfg.time_scale

    # -- membership ------------------------------------------------------------------------------
    async def set_endpoints(self, entries: list[dict[str, Any]]) -> None:
        seen = set()
        for e in entries:
            pod = e["pod"]
            seen.add(pod)
            ep = self.endpoints.get(pod)
            if ep is not None and (ep.url, ep.model, ep.variant, ep.role) != (
                    e["url"].rstrip("/"), e["model"], e["variant"], e.get("role", "both")):
                # the same pod name at another address (or model, variant, role) replaces the old entry; it was
                # kept, so the router sent the pod's requests to the old URL for ever (issue 31's router fuzz)
                self._set_state(self.endpoints.pop(pod), "gone")
                self._forget_series(ep)
                ep = None
            if ep is None:
                self.models.add(e["model"])
                ep = Endpoint(pod=pod, variant=e["variant"], model=e["model"], url=e["url"].rstrip("/"),
                              role=e.get("role", "both"))
                self.endpoints[pod] = ep
            self._set_state(ep, e.get("state", "ready"))
        for pod in [p for p in self.endpoints if p not in seen]:
            ep = self.endpoints.pop(pod)
            self._set_state(ep, "gone")
            self._forget_series(ep)
        served = set(self.cfg.models) | {ep.model for ep in self.endpoints.values()}
        busy = {r.model for r in self.metrics.inflight.values()}  # forgotten once their requests are done
        for model in self.models - served - busy:
            self.metrics.forget_model(model)  # withdrawn: 404 from now on, and no series left behind
        self.models = served | (self.models & busy)
        states = {ep.pod: ep.state for ep in self.endpoints.values()}
        if states != self._traced_pods:  # a change, not every re-send of the same list
            self._traced_pods = states
            self._write_trace({"t": round(self.now(), 3), "ev": "endpoints", "pods": states})
        async with self._ready_changed:
            self._ready_changed.notify_all()

    # -- the decision trace (--trace-file) ----------------------------------------------------------
    def trace_route(self, route: Route, via: str) -> None:
        """One routing decision: the pod chosen, how (``direct``, or ``flow`` for a held request), and what the
        picker saw of every ready pod of the model: [pod, its snapshot's waiting, requests sent in this refresh
        slot, the last scrape's waiting and running, the scrape's time]."""
        if self._trace is None or route.pod is None:
            return
        model = route.pod.engine.model
        pods = [[ep.pod, ep.routed.waiting, ep.routed.sent, ep.waiting, ep.running,
                 None if ep.scraped_at is None else round(ep.scraped_at, 3)]
                for ep in self.endpoints.values() if ep.routed is not None and ep.model == model]
        self._write_trace({"t": round(self.now(), 3), "ev": "route", "via": via, "pod": route.pod.name,
                           "held": len(self.flow.queues[model]) if self.flow and model in self.flow.queues else 0,
                           "pods": pods})

    def _write_trace(self, doc: dict[str, Any]) -> None:
        """One line: ``t`` in the router's own scenario seconds (since it started), ``wall`` in Unix seconds (to
        place it on a run's timeline: the run's t0_wall). At TRACE_MAX_BYTES a last line ``{"ev": "truncated"}``
        ends it, so a long run's trace cannot fill the disk."""
        if self._trace is None:
            return
        line = json.dumps({**doc, "wall": round(time.time(), 3)}) + "\n"
        self._trace_left -= len(line)
        if self._trace_left < 0:
            line = json.dumps({"t": doc.get("t"), "ev": "truncated", "max_bytes": TRACE_MAX_BYTES}) + "\n"
        try:
            self._trace.write(line)
        except OSError as e:  # a full disk ends the trace, not the gateway
            log.warning("trace stopped: %s", e)
            self._trace_left = -1
        if self._trace_left < 0:
            self.close_trace()

    def close_trace(self) -> None:
        if self._trace is not None:
            with contextlib.suppress(OSError):
                self._trace.close()
            self._trace = None

    def _set_state(self, ep: Endpoint, state: str) -> None:
        ep.state = state
        if state == "ready" and ep.routed is None:
            ep.routed = RoutedPod(name=ep.pod, engine=ep, role=ep.role)
            self.router.add_pod(ep.model, ep.routed)
        elif state != "ready" and ep.routed is not None:
            self.router.remove_pod(ep.model, ep.routed)
            ep.routed = None

    def _forget_series(self, ep: Endpoint) -> None:
        """A gone engine's in-flight series is dropped once idle, so pod churn cannot grow /metrics."""
        if ep.state == "gone" and ep.inflight == 0:
            self.metrics.forget_pod(ep.pod, ep.variant)

    async def watch_file(self) -> None:
        path = self.cfg.endpoints_file
        while path and not self.stopped.is_set():
            try:
                mtime = os.stat(path).st_mtime_ns
                if mtime != self._file_mtime:
                    self._file_mtime = mtime
                    raw = read_regular(path, 64 * 1024 * 1024, "the endpoints file")
                    await self.set_endpoints(endpoint_entries(json.loads(raw)))
            except (OSError, json.JSONDecodeError, UserError):
                pass  # half-written, missing or no regular file: next round
            except (ValueError, RecursionError) as e:  # the watch goes on: the next write may be good
                log.info("ignored %s: %s", path, e)
            await asyncio.sleep(0.05)

    # -- metrics refresh (EPP-like) ----------------------------------------------------------------
    async def refresh_loop(self) -> None:
        assert self.session is not None
        period = self.cfg.spec.refresh_s / self.cfg.time_scale
        while not self.stopped.is_set():
            eps = list(self.endpoints.values())
            if eps:
                await asyncio.gather(*(self._scrape(ep) for ep in eps))
            if self.flow is not None:
                self.flow.pump()
            await asyncio.sleep(max(period, 0.005))

    async def _scrape(self, ep: Endpoint) -> None:
        assert self.session is not None
        try:
            async with self.session.get(ep.url + "/metrics", timeout=aiohttp.ClientTimeout(total=1.0)) as r:
                text = await r.text()
            vals = parse_engine_metrics(text)
            if not all(math.isfinite(v) for v in vals.values() if v is not None):  # int(inf) ended the loop
                raise ValueError(f"{ep.pod}: non-finite engine series {vals}")
            ep.waiting = int(vals.get("waiting", 0))
            ep.running = int(vals.get("running", 0))
            ep.kv_usage = float(vals.get("kv_usage", 0.0))
            ep.gpu_util = vals.get("gpu_util")
            ep.scraped_at, ep.scrape_ok = self.now(), True
        except (aiohttp.ClientError, TimeoutError, ValueError):
            ep.scrape_ok = False

    # -- HTTP ------------------------------------------------------------------------------------
    def app(self) -> web.Application:
        app = make_app(self.cfg.limits)
        app.router.add_post("/v1/completions", self.handle_completion)
        app.router.add_post("/v1/chat/completions", self.handle_completion)
        app.router.add_get("/v1/models", self.handle_models)
        app.router.add_get("/metrics", self.handle_metrics)
        app.router.add_get("/health", self.handle_health)
        if self.cfg.admin_token and self.cfg.admin_port is None:
            self._add_admin_routes(app)
        return app

    def admin_app(self) -> web.Application:
        """The admin API alone, for its own listener (--admin-port)."""
        app = make_app(self.cfg.limits)
        self._add_admin_routes(app)
        return app

    def _add_admin_routes(self, app: web.Application) -> None:
        app.router.add_get("/admin/state", self.handle_state)
        app.router.add_put("/admin/endpoints", self.handle_put_endpoints)

    async def handle_health(self, request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def handle_models(self, request: web.Request) -> web.Response:
        data = [{"id": m, "object": "model", "owned_by": "scalearena", "root": m} for m in sorted(self.models)]
        return web.json_response({"object": "list", "data": data})

    async def handle_metrics(self, request: web.Request) -> web.Response:
        return web.Response(body=self.metrics.text(), content_type="text/plain", charset="utf-8")

    def _authorize(self, request: web.Request) -> None:
        token = self.cfg.admin_token or ""
        given = request.headers.get("Authorization", "")  # bytes that are not UTF-8 arrive as surrogates
        if not (token and hmac.compare_digest(given.encode("utf-8", "surrogateescape"), f"Bearer {token}".encode())):
            raise ApiError(401, "authentication_error", "admin API: missing or wrong bearer token")

    async def handle_put_endpoints(self, request: web.Request) -> web.Response:
        self._authorize(request)
        try:
            entries = endpoint_entries(json.loads(await read_body(request)))
        except (ValueError, RecursionError) as e:
            raise ApiError(400, "invalid_request_error", f"endpoints: {e}") from None
        await self.set_endpoints(entries)
        return web.json_response({"endpoints": len(self.endpoints)})

    async def handle_state(self, request: web.Request) -> web.Response:
        self._authorize(request)
        pods = {
            ep.pod: {"variant": ep.variant, "model": ep.model, "state": ep.state, "waiting": ep.waiting,
                     "running": ep.running, "kv_usage": ep.kv_usage, "gpu_util": ep.gpu_util,
                     "inflight": ep.inflight, "scrape_ok": ep.scrape_ok}
            for ep in self.endpoints.values()
        }
        return web.json_response({"now": self.now(), "queue": dict(self._queued), "pods": pods,
                                  "completed": dict(self.completed)})

    def _spec(self, request: web.Request, req: ParsedRequest) -> RequestSpec:
        try:
            rid = int(request.headers.get(REQUEST_ID_HEADER, "-1"))
        except ValueError:
            rid = -1
        # n choices or a batch of prompts go to one engine as one request (as llm-d's gateway forwards
        # them); the picker sees the load of all its sequences: each prompt n times, every choice's output
        tenant, priority = flow_tags(request.headers)
        return RequestSpec(request_id=rid, model=req.model, arrival_s=self.now(),
                           input_tokens=req.n * self.prompts.count(req),
                           output_tokens=req.choices * (req.max_tokens or DEFAULT_MAX_TOKENS),
                           tenant=tenant, priority=priority)

    async def handle_completion(self, request: web.Request) -> web.StreamResponse:
        raw = await read_body(request)
        req = parse_request(raw, chat=request.path.endswith("/chat/completions"))
        model = req.model
        if model not in self.models:
            self.metrics.requests.labels(OTHER_MODEL, "model_not_found").inc()
            raise ApiError(404, "model_not_found", f"The model `{model}` does not exist.", "model")
        spec = self._spec(request, req)
        if request.headers.get(PROBE_HEADER) != "1":  # the harness's readiness probe is not the workload's
            self.metrics.arrived(model, spec.input_tokens)
        units = self.prompts.prompt_units(req, PREFIX_BLOCK_TOKENS) if self.cfg.spec.scorers.prefix_cache > 0 else ()
        route = await self._wait_for_route(spec, units)
        ep: Endpoint = route.pod.engine  # type: ignore[union-attr]
        self.metrics.requests.labels(model, "routed").inc()
        if route.prefill is not None:  # P/D: the sidecar's prefill call first
            body = await prefill_then_decode_body(self, request.path, req.body, route.prefill.engine)
            if isinstance(body, web.Response):
                route.booked.release()
                return body
            raw = body
        elif KV_PARAMS in req.body:  # a client's own hand-off parameters never reach an engine (handoff_auth.py)
            raw = json.dumps(without_kv_params(req.body)).encode()
        return await self._proxy(request, raw, ep, req.stream, route, spec)

    async def _wait_for_route(self, spec: RequestSpec, units: tuple[tuple[int, int], ...] = ()) -> Any:
        """A pod route, after waiting in the model's gateway queue if no engine is ready; ApiError if none."""
        model = spec.model
        deadline = time.monotonic() + self.cfg.queue_timeout_s / self.cfg.time_scale
        queued = False
        try:
            while True:
                held = self.flow is not None and self.flow.busy(model)  # others are held: queue behind them
                route = Route("hold") if held else self.router.route(self.now(), spec, units)
                if route.kind == "hold" and self.flow is not None:
                    return await self.flow.wait(spec, units, deadline - time.monotonic())
                if route.kind == "pod":
                    self.trace_route(route, "direct")
                    return route
                if route.kind == "reject":
                    self.metrics.requests.labels(model, "rejected").inc()
                    raise ApiError(429, "rate_limit_exceeded", "every ready engine is saturated")
                if not queued:
                    if self._queued.get(model, 0) >= self.cfg.spec.admission.queue_limit:
                        self.metrics.requests.labels(model, "queue_full").inc()
                        raise ApiError(429, "rate_limit_exceeded", f"gateway queue of model {model!r} is full")
                    queued = True
                    self._queued[model] = self._queued.get(model, 0) + 1
                    self.metrics.queue.labels(model).set(self._queued[model])
                left = deadline - time.monotonic()
                if left <= 0:
                    self.metrics.requests.labels(model, "queue_timeout").inc()
                    raise ApiError(503, "service_unavailable", f"no ready engine for model {model!r}")
                async with self._ready_changed:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._ready_changed.wait(), timeout=min(left, 1.0))
        finally:  # also when the client went away while queued
            if queued:
                self._queued[model] -= 1
                self.metrics.queue.labels(model).set(self._queued[model])

    async def _proxy(self, request: web.Request, raw: bytes, ep: Endpoint, stream: bool, route: Route,
                     spec: RequestSpec) -> web.StreamResponse:
        assert self.session is not None
        ep.inflight += 1
        self._request_seq += 1
        key, ok, body = self._request_seq, False, None
        # the EPP's in-flight tokens (route.booked) go at the first chunk or when the request ends (rec)
        rec = self.metrics.started(key, ep.pod, ep.variant, ep.model, spec.arrival_s, route.booked)
        headers = {POD_HEADER: ep.pod, VARIANT_HEADER: ep.variant, **pd_headers(route)}
        resp: web.StreamResponse | None = None
        try:
            async with self.session.post(ep.url + request.path, data=raw,
                                         headers={"Content-Type": "application/json"}) as up:
                if up.status != 200 or not stream:
                    body = await up.read()
                    if up.status == 200:
                        ok = True
                        self.completed[ep.variant] = self.completed.get(ep.variant, 0) + 1
                    return web.Response(status=up.status, body=body, headers={**headers, "Content-Type":
                                        up.headers.get("Content-Type", "application/json")})
                resp = web.StreamResponse(headers={**headers, "Content-Type": "text/event-stream",
                                                   "Cache-Control": "no-cache"})
                await resp.prepare(request)
                async for chunk in up.content.iter_any():
                    rec.feed(chunk, self.now())
                    await resp.write(chunk)
                    if not ok and b"[DONE]" in rec.tail[-64:] and ERROR_EVENT not in rec.tail:
                        # the client has its whole answer: a client that hangs up now (aiohttp then cancels
                        # this handler while the engine's stream closes) still got a served request. An error
                        # event before [DONE] is a failed request (llm-d-inference-sim answers a prompt that
                        # does not fit its free KV blocks with 200, an error event, then [DONE])
                        ok = True
                        self.completed[ep.variant] = self.completed.get(ep.variant, 0) + 1
            if not ok and ERROR_EVENT not in rec.tail:
                raise aiohttp.ClientPayloadError("stream ended early")
        except (aiohttp.ClientError, TimeoutError):
            kind = "killed" if ep.state != "ready" else "error"
            if resp is None:  # no response started: connection refused or reset before headers
                return ApiError(502, kind, f"engine {ep.pod} unreachable").response(headers)
            err = {"error": {"type": kind, "message": f"engine {ep.pod} went away mid-stream", "code": 502}}
            with contextlib.suppress(ConnectionError, RuntimeError):
                await resp.write(b"data: " + json.dumps(err).encode() + b"\n\n")
        finally:
            ep.inflight -= 1
            self.metrics.finished(key, ep.variant, self.now(), ok and request.headers.get(PROBE_HEADER) != "1", body)
            self._forget_series(ep)
        with contextlib.suppress(ConnectionError, RuntimeError):
            await resp.write_eof()
        return resp


async def serve(cfg: RouterServerConfig) -> None:
    setup_logging()
    server = RouterServer(cfg)
    server.session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0, force_close=False),
                                           timeout=aiohttp.ClientTimeout(total=None, sock_connect=5.0))
    listener = await listen(server.app(), cfg.host, cfg.port, "serve-router")
    admin = None
    if cfg.admin_token and cfg.admin_port is not None:
        admin = await listen(server.admin_app(), cfg.admin_host, cfg.admin_port, "serve-router admin")
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, server.stopped.set)
    tasks = [asyncio.create_task(server.refresh_loop()), asyncio.create_task(server.watch_file())]
    await server.stopped.wait()
    for t in tasks:
        t.cancel()
    await listener.close()
    if admin is not None:
        await admin.close()
    await server.session.close()
    server.close_trace()
