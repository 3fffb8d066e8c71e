"""`scalearena serve-engine`: the serving model behind an OpenAI-compatible HTTP API.

The same clock-free engine the simulator steps in virtual time (harness/sim/engine/core.py) is driven
here by the wall clock, so a local run exercises real HTTP, real streaming, real scrapes and real
process lifecycles while the serving behaviour (batching, KV cache, queueing, latencies) stays the
simulator's. One process = one pod.

Clock: engine time is scenario seconds since the process started,
``(monotonic - start) x time_scale``. With --time-scale s every duration
(TTFT, ITL, cold start, grace period) passes s times faster in wall time;
metrics stay in scenario units (a histogram of TTFT holds scenario seconds).

Driving loop: one asyncio task advances the engine to "now", turns engine events (first token,
finished) into stream updates, pushes the tokens each stream has gained, then sleeps until the engine's
next event or the next streaming tick (while anything decodes), or until a new request arrives.
Tokens are written as one SSE chunk each; several may share one write when
they fall in the same tick (clients measure ITL as the mean gap between the
first and the last chunk, which is unaffected).

Endpoints: POST /v1/completions, /v1/chat/completions (stream true/false,
``stream_options.include_usage``; ``n`` choices and batches of prompts, each
choice its own engine sequence, shaped as vLLM does: openai_responses.py), GET /v1/models, /metrics (vLLM names),
/health (200 while the process serves), /health/ready (503 until the cold
start ends, and again once draining). Requests are validated and counted by
openai_api.py (errors as OpenAI error JSON; prompt tokens from --tokenizer or
the documented approximation); the output length is ``max_tokens``, or 16
capped to what fits ``max_model_len`` when absent; a request whose prompt +
max_tokens exceeds ``max_model_len`` (the KV cache's token capacity when the
engine sets none) is the engine's admission 400 (too_long, as in the sim), so
no request can hold a slot for ever.
P/D disaggregation (``--role prefill|decode``, vLLM's ``kv_transfer_params``): kv_connector.py; a
draining decode engine still takes the decode half of a request it was handed, as the sim does.
A client that disconnects, streaming or not, queued or running, has its request aborted in the engine
(KV blocks and slot freed; http_guard.py).

SIGTERM: stop accepting (503), keep streaming in-flight requests, exit when they are done or when the
termination grace period ends; streams still open then get an SSE error chunk of type ``killed`` (what
the results call a request killed by scale-down).
"""
from __future__ import annotations

import asyncio
import json
import random
import signal
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from scalearena.harness.config.disagg_spec import KVTransferSpec
from scalearena.harness.local import openai_responses as out
from scalearena.harness.local.http_guard import (
    ConnectionLimits,
    listen,
    make_app,
    read_body,
    setup_logging,
)
from scalearena.harness.local.kv_connector import KVConnector
from scalearena.harness.local.metrics_text import engine_metrics_text
from scalearena.harness.local.openai_api import (
    ApiError,
    ParsedRequest,
    PromptCounter,
    check_lengths,
    output_tokens,
    parse_request,
    response_pieces,
)
from scalearena.harness.sim.engine.core import Engine, SubmitResult
from scalearena.harness.sim.engine.latency import build_latency

FAILURES = {  # llm-d-inference-sim failure types -> (HTTP status, OpenAI error type)
    "rate_limit": (429, "rate_limit_exceeded"),
    "invalid_api_key": (401, "invalid_api_key"),
    "context_length": (400, "context_length_exceeded"),
    "server_error": (503, "server_error"),
    "invalid_request": (400, "invalid_request_error"),
    "model_not_found": (404, "model_not_found"),
}


@dataclass
class EngineServerConfig:
    model: str
    engine_spec: Any  # harness.config.engine_spec.EngineSpec
    gpu: Any = "A100-80GB"  # catalog name or a GPUSpec (the scenario's own GPU type)
    host: str = "127.0.0.1"
    port: int = 8000
    served_model_names: tuple[str, ...] = ()
    startup_s: float = 0.0
    time_scale: float = 1.0
    termination_grace_s: float = 30.0
    failure_injection_rate: float = 0.0  # percent, 0..100
    failure_types: tuple[str, ...] = ()
    stream_tick_s: float = 0.005  # wall seconds between token pushes while decoding
    gpu_util_window_s: float = 15.0  # scenario seconds the busy-fraction gauge averages over
    pod: str = ""
    variant: str = ""
    seed: int | None = None
    spawned_at: float | None = None  # wall epoch the harness spawned us: process boot counts toward cold start
    mode: str = "random"  # llm-d-inference-sim --mode: random filler text or the prompt echoed
    tokenizer: str | None = None  # a local tokenizer.json for prompt_tokens
    limits: ConnectionLimits = field(default_factory=ConnectionLimits)
    role: str = "both"  # llm-d.ai/role: both (no KV connector) | prefill | decode
    kv_transfer: Any = None  # harness.config.disagg_spec.KVTransferSpec (None: its defaults)
    handoff_key: bytes | None = None  # decode: the router's hand-off key (handoff_auth.py); None refuses them


@dataclass
class _Stream:
    """One choice: one engine sequence. The choices of a request share ``changed``."""

    rid: int
    prompt_tokens: int
    output_tokens: int
    arrival: float
    index: int = 0  # the choice index: prompt_index x n + sample_index
    sent: int = 0
    tokens: int = 0
    finished: bool = False
    error: str | None = None  # "killed" | "error"
    remote_decode: bool = False  # P/D prefill: answer with the kv_transfer_params of the kept KV
    pieces: Sequence[str] = field(default_factory=list)  # the text of each output token (openai_api.Pieces)
    changed: asyncio.Event = field(default_factory=asyncio.Event)


class EngineServer:
    def __init__(self, cfg: EngineServerConfig) -> None:
        self.cfg = cfg
        latency, blocks = build_latency(cfg.engine_spec, cfg.gpu)
        spec = cfg.engine_spec
        kv = cfg.kv_transfer or KVTransferSpec()
        self.engine = Engine(latency, blocks, spec.block_size, spec.max_num_seqs, spec.max_waiting_queue,
                             spec.max_model_len, spec.max_num_batched_tokens, spec.enable_prefix_caching,
                             kv.abort_timeout_s)
        self.port = cfg.port  # the bound port once listening (--port 0)
        self.kv = KVConnector(self, kv, latency)
        self.num_gpu_blocks = blocks
        self.prompts = PromptCounter(cfg.tokenizer)
        self.names = {cfg.model, *cfg.served_model_names}
        self._mono0 = time.monotonic()
        self.streams: dict[int, _Stream] = {}
        self._next_rid = 0
        self._wake = asyncio.Event()
        self.draining = False
        self._drain_deadline: float | None = None
        self._busy_samples: deque[tuple[float, float]] = deque()
        self._rng = random.Random(cfg.seed)
        self.stopped = asyncio.Event()

    # -- clock -----------------------------------------------------------------------------------
    def now(self) -> float:
        """Engine time: scenario seconds since the process started."""
        return (time.monotonic() - self._mono0) * self.cfg.time_scale

    def ready(self) -> bool:
        if self.draining:
            return False
        if self.cfg.spawned_at is not None:
            return (time.time() - self.cfg.spawned_at) * self.cfg.time_scale >= self.cfg.startup_s
        return self.now() >= self.cfg.startup_s

    # -- driving loop ----------------------------------------------------------------------------
    async def drive(self) -> None:
        scale = self.cfg.time_scale
        while not self.stopped.is_set():
            t = self.now()
            for ev in self.engine.advance(t):
                st = self.streams.get(ev.rid)
                if st is None:
                    continue
                if ev.kind == "kv_pull":
                    self.kv.start_pull(ev.rid, ev.tokens)
                    continue
                st.tokens = max(st.tokens, ev.tokens)
                if ev.kind == "finished":
                    st.tokens = st.output_tokens
                    st.finished = True
                st.changed.set()
            decoding = False
            for st in self.streams.values():
                if st.finished or st.error:
                    continue
                n = self.engine.tokens_generated(st.rid, t)
                if n > st.tokens:
                    st.tokens = n
                    st.changed.set()
                if st.tokens > 0:
                    decoding = True
            self._sample_busy(t)
            if self.draining:
                self._check_drain(t)
            nxt = self.engine.next_event_time()
            delay = (nxt - t) / scale if nxt != float("inf") else 3600.0
            if decoding:
                delay = min(delay, self.cfg.stream_tick_s)
            if self._drain_deadline is not None:
                delay = min(delay, max(0.0, (self._drain_deadline - t) / scale))
            delay = max(delay, 0.0)
            self._wake.clear()
            try:
                await asyncio.wait_for(self._wake.wait(), timeout=min(delay, 1.0))
            except TimeoutError:
                pass

    def _sample_busy(self, t: float) -> None:
        s = self._busy_samples
        if not s or t - s[-1][0] >= 0.05 * self.cfg.gpu_util_window_s:
            s.append((t, self.engine.busy_s))
        while len(s) > 2 and s[1][0] <= t - self.cfg.gpu_util_window_s:
            s.popleft()

    def gpu_busy_fraction(self, t: float) -> float:
        """Busy (non-empty batch) share of the last window, 0..1."""
        busy_now = self.engine.metrics(t).busy_s
        if not self._busy_samples:
            return 0.0
        t0, b0 = self._busy_samples[0]
        if t - t0 <= 0:
            return 0.0
        return min(1.0, max(0.0, (busy_now - b0) / (t - t0)))

    # -- draining --------------------------------------------------------------------------------
    def begin_drain(self) -> None:
        if self.draining:
            return
        self.draining = True
        self._drain_deadline = self.now() + self.cfg.termination_grace_s
        self._wake.set()

    def _check_drain(self, t: float) -> None:
        live = [s for s in self.streams.values() if not (s.finished or s.error)]
        if live and self._drain_deadline is not None and t >= self._drain_deadline:
            for rid, _tokens in self.engine.kill_all(t):
                st = self.streams.get(rid)
                if st is not None and not st.finished:
                    st.error = "killed"
                    st.changed.set()
            live = []
        if not live:
            # let handlers flush their last chunk, then stop
            asyncio.get_running_loop().call_later(0.2, self.stopped.set)

    # -- HTTP ------------------------------------------------------------------------------------
    def app(self) -> web.Application:
        app = make_app(self.cfg.limits)
        app.router.add_post("/v1/completions", self.handle_completion)
        app.router.add_post("/v1/chat/completions", self.handle_completion)
        app.router.add_get("/v1/models", self.handle_models)
        app.router.add_get("/metrics", self.handle_metrics)
        app.router.add_get("/health", self.handle_health)
        app.router.add_get("/health/ready", self.handle_ready)
        app.router.add_post("/kv/read", self.kv.handle_read)
        return app

    async def handle_health(self, request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def handle_ready(self, request: web.Request) -> web.Response:
        if self.ready():
            return web.Response(text="ready")
        return web.Response(status=503, text="draining" if self.draining else "loading model")

    async def handle_models(self, request: web.Request) -> web.Response:
        data = [{"id": n, "object": "model", "owned_by": "scalearena", "root": self.cfg.model} for n in sorted(self.names)]
        return web.json_response({"object": "list", "data": data})

    async def handle_metrics(self, request: web.Request) -> web.Response:
        t = self.now()
        text = engine_metrics_text(self.engine.metrics(t), self.cfg.model, self.gpu_busy_fraction(t),
                                   self.cfg.engine_spec, self.num_gpu_blocks, self.cfg.pod)
        return web.Response(body=text, content_type="text/plain", charset="utf-8",
                            headers={"X-Content-Type-Options": "nosniff"})

    def _admit(self, req: ParsedRequest) -> tuple[list[_Stream], int]:
        """Check, count and submit a validated request, one engine sequence per choice.

        Returns the choices and the request's prompt tokens (each prompt once); ApiError when it
        cannot be served, with nothing left in the engine.
        """
        if req.model not in self.names:
            raise ApiError(404, "model_not_found", f"The model `{req.model}` does not exist.", "model")
        if self.cfg.failure_injection_rate > 0 and self._rng.random() * 100 < self.cfg.failure_injection_rate:
            kind = self._rng.choice(self.cfg.failure_types or tuple(FAILURES))
            status, etype = FAILURES[kind]
            raise ApiError(status, etype, f"injected failure ({kind})")
        counts = self.prompts.counts(req)
        limit = self.engine.max_model_len
        check_lengths(req, counts, limit)  # every prompt checked before any is submitted, as vLLM validates
        remote_decode, remote_prefill, params = self.kv.admit(self.cfg.role, req, len(counts))
        cached = self.engine.cache is not None
        units = [self.prompts.prompt_units(req, self.engine.bs, p) if cached else () for p in range(len(counts))]
        t, changed = self.now(), asyncio.Event()
        streams: list[_Stream] = []
        for p, prompt in enumerate(counts):
            n_out = output_tokens(req.max_tokens, prompt, limit)
            for j in range(req.n):
                rid = self._next_rid
                self._next_rid += 1
                if self.engine.submit(t, rid, prompt, n_out, prefix=units[p], do_remote_decode=remote_decode,
                                      do_remote_prefill=remote_prefill) is not SubmitResult.ACCEPTED:
                    for st in streams:
                        self.engine.abort(t, st.rid)
                    raise ApiError(429, "rate_limit_exceeded", "waiting queue is full")
                pieces = response_pieces(self.cfg.mode, req, n_out, self._rng, p)
                streams.append(_Stream(rid, prompt, n_out, t, index=p * req.n + j, pieces=pieces, changed=changed,
                                       remote_decode=remote_decode))
                if remote_prefill:
                    self.kv.remote[rid] = params
        for st in streams:
            self.streams[st.rid] = st
        self._wake.set()
        return streams, sum(counts)

    async def handle_completion(self, request: web.Request) -> web.StreamResponse:
        ready = self.ready()
        if not ready and not self.draining:
            raise ApiError(503, "service_unavailable", "model is loading")
        req = parse_request(await read_body(request), chat=request.path.endswith("/chat/completions"))
        if not ready and not self.kv.flags(self.cfg.role, req.body.get("kv_transfer_params"))[1]:
            raise ApiError(503, "service_unavailable", "draining")
        streams, prompt_tokens = self._admit(req)
        rid = out.response_id(req.chat, streams[0].rid)
        try:
            if req.stream:
                return await self._stream(request, streams, rid, req, prompt_tokens)
            return await self._unary(streams, rid, req, prompt_tokens)
        finally:  # also on cancellation: the client went away
            for st in streams:
                self.streams.pop(st.rid, None)
                if not (st.finished or st.error):
                    self.engine.abort(self.now(), st.rid)
                if st.rid in self.kv.remote:  # gone before its KV read: the prefill engine may free it
                    self.kv.spawn(self.kv.release(st.rid))
            self._wake.set()

    async def _stream(self, request: web.Request, streams: list[_Stream], rid: str, req: ParsedRequest,
                      prompt_tokens: int) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await resp.prepare(request)
        changed = streams[0].changed
        while True:
            await changed.wait()
            changed.clear()
            parts = []
            for st in streams:
                if st.tokens > st.sent:
                    upto = min(st.tokens, st.output_tokens)
                    parts += [out.chunk(rid, req.model, req.chat, st, i, st.finished and i == upto - 1)
                              for i in range(st.sent, upto)]
                    st.sent = upto
            if parts:
                await resp.write(b"".join(parts))
            failed = next((st.error for st in streams if st.error), None)
            if failed:
                err = {"error": {"type": failed, "message": f"request {failed}: pod terminated", "code": 503}}
                await resp.write(b"data: " + json.dumps(err).encode() + b"\n\n")
                break
            if all(st.finished for st in streams):
                tail = b""
                if req.include_usage:
                    tail = out.usage_chunk(rid, req.model, req.chat, prompt_tokens, sum(st.sent for st in streams))
                await resp.write(tail + b"data: [DONE]\n\n")
                break
        await resp.write_eof()
        return resp

    async def _unary(self, streams: list[_Stream], rid: str, req: ParsedRequest, prompt_tokens: int) -> web.Response:
        changed = streams[0].changed
        while not (all(st.finished for st in streams) or any(st.error for st in streams)):
            await changed.wait()
            changed.clear()
        failed = next((st.error for st in streams if st.error), None)
        if failed:
            raise ApiError(503, failed, f"request {failed}: pod terminated")
        body = out.unary(rid, req.model, req.chat, list(streams), prompt_tokens)
        if streams[0].remote_decode:  # the prefill half of a P/D request: where its KV waits
            body["kv_transfer_params"] = self.kv.produced(streams[0].rid, prompt_tokens)
        return web.json_response(body)


async def serve(cfg: EngineServerConfig) -> None:
    """Run one engine until SIGTERM has drained it (or SIGINT)."""
    setup_logging()
    server = EngineServer(cfg)
    listener = await listen(server.app(), cfg.host, cfg.port, "serve-engine")
    server.port = int(listener.url.rsplit(":", 1)[1])
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, server.begin_drain)
    loop.add_signal_handler(signal.SIGINT, server.stopped.set)
    driver = asyncio.create_task(server.drive())
    await server.stopped.wait()
    driver.cancel()
    await server.kv.close()
    await listener.close()
