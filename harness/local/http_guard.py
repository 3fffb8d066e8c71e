"""What both local servers need from their HTTP layer and aiohttp does not give.

* Per-connection deadlines: a request's head must arrive within
  ``header_timeout_s`` (wall) of its first byte (of the accept, for a
  connection's first request), its body within ``body_timeout_s``; a silent or
  half-sent (slowloris) connection is closed instead of being held for ever.
  At most ``max_connections`` are open at once: past it a new connection gets a
  503 and is closed, so a flood of idle sockets cannot exhaust the descriptors
  the engine needs for the requests it serves. aiohttp has keep-alive and size limits but no header
  deadline, so each connection's protocol is wrapped by ``_GuardedConnection``
  (a delegating asyncio protocol: it forwards every callback to aiohttp's
  handler and arms a timer while a request head is incomplete).
* Client disconnects cancel the handler (aiohttp's ``handler_cancellation``),
  so a server frees what the request held (an engine slot and its KV blocks,
  a router queue place) whether the request streams or not, runs or waits.
  Each one is logged as one line, never a traceback.
* Errors are OpenAI error JSON, also for what aiohttp answers itself: 404 for
  an unknown path, 405, 413 for a body over ``max_body_bytes``.
* On start a server prints the URL it listens on (read back from the socket,
  so ``--port 0`` works): ``serve-engine: listening on http://127.0.0.1:PORT``.
"""
from __future__ import annotations

import asyncio
import logging
import resource
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any

from aiohttp import hdrs, web, web_urldispatcher
from aiohttp.http import HttpVersion11
from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.web_protocol import RequestHandler, RequestPayloadError

from scalearena.harness.local.openai_api import ApiError, error_response

log = logging.getLogger("scalearena.serve")

_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                404: "not_found_error", 405: "invalid_request_error", 408: "timeout",
                413: "request_too_large", 422: "invalid_request_error", 429: "rate_limit_exceeded"}


@dataclass(frozen=True)
class ConnectionLimits:
    """Wall-time deadlines and the body size cap of one server's connections."""

    header_timeout_s: float = 10.0
    body_timeout_s: float = 30.0
    max_body_bytes: int = 8 * 1024 * 1024
    max_connections: int = 4096  # open connections; past it a new one gets a 503 and is closed


_FULL_BODY = (b'{"error": {"message": "too many open connections", "type": "service_unavailable", "param": null, '
              b'"code": 503}}')
_FULL = (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nConnection: close\r\n"
         b"Content-Length: %d\r\n\r\n%s" % (len(_FULL_BODY), _FULL_BODY))


class _GuardedConnection(asyncio.Protocol):
    """aiohttp's per-connection handler plus a deadline on incomplete request heads."""

    def __init__(self, inner: RequestHandler, registry: dict[Any, _GuardedConnection], limits: ConnectionLimits) -> None:
        self.inner, self.registry, self.timeout_s = inner, registry, limits.header_timeout_s
        self.cap = limits.max_connections
        self.transport: asyncio.Transport | None = None
        self.busy = 0  # requests of this connection inside a handler
        self.timer: asyncio.TimerHandle | None = None
        self.refused = False  # over the cap: answered 503 here, never handed to aiohttp

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        if len(self.registry) >= self.cap:
            self.refused = True
            log.info("refused %s: %d connections open", transport.get_extra_info("peername"), len(self.registry))
            self.transport.write(_FULL)  # type: ignore[union-attr]
            self.transport.close()  # type: ignore[union-attr]
            return
        self.registry[transport] = self
        # idle from accept: a connection that never sends a request head is closed like a half-sent one
        self.timer = asyncio.get_running_loop().call_later(self.timeout_s, self._expire)
        self.inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        if self.refused:
            return
        if not self.busy and self.timer is None:  # the first bytes of a request head
            self.timer = asyncio.get_running_loop().call_later(self.timeout_s, self._expire)
        self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        if not self.refused:
            self.inner.eof_received()
        return None  # as aiohttp's handler: the transport closes itself

    def connection_lost(self, exc: Exception | None) -> None:
        if self.refused:
            return
        self._cancel()
        self.registry.pop(self.transport, None)
        self.inner.connection_lost(exc)

    def pause_writing(self) -> None:
        if not self.refused:
            self.inner.pause_writing()

    def resume_writing(self) -> None:
        if not self.refused:
            self.inner.resume_writing()

    def begin(self) -> None:
        self.busy += 1
        self._cancel()

    def end(self) -> None:
        self.busy -= 1

    def _cancel(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def _expire(self) -> None:
        self.timer = None
        if not self.busy and self.transport is not None:
            peer = self.transport.get_extra_info("peername")
            log.info("closed %s: no complete request head %.1f s after it was due", peer, self.timeout_s)
            self.transport.close()


_REGISTRY = web.AppKey("guarded_connections", dict)
_LIMITS = web.AppKey("connection_limits", ConnectionLimits)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@web.middleware
async def _guard(request: web.Request, handler: Handler) -> web.StreamResponse:
    conn = request.app[_REGISTRY].get(request.transport)
    if conn is not None:
        conn.begin()
    try:
        return await handler(request)
    except ApiError as e:
        return e.response()
    except web.HTTPException as e:
        if e.status < 400:
            raise
        return error_response(e.status, _ERROR_TYPES.get(e.status, "server_error"), e.reason)
    except asyncio.CancelledError:
        log.info("client disconnected: %s %s (request aborted)", request.method, request.path)
        raise
    except ConnectionResetError:
        log.info("client disconnected: %s %s (request aborted)", request.method, request.path)
        return web.Response(status=499)  # nobody reads it; ends the handler quietly
    finally:
        if conn is not None:
            conn.end()


def make_app(limits: ConnectionLimits) -> web.Application:
    """An aiohttp application with the guard middleware, the body cap and the deadlines."""
    app = web.Application(client_max_size=limits.max_body_bytes, middlewares=[_guard])
    app[_REGISTRY] = {}
    app[_LIMITS] = limits
    return app


async def read_body(request: web.Request) -> bytes:
    """The whole body within the body deadline (408 otherwise); 413 over the size cap."""
    limits = request.app[_LIMITS]
    try:
        return await asyncio.wait_for(request.read(), limits.body_timeout_s)
    except TimeoutError:
        raise ApiError(408, "timeout", f"request body not received within {limits.body_timeout_s:g} s") from None
    except (HttpProcessingError, RequestPayloadError) as e:  # a body the parser could not read (its framing)
        raise ApiError(400, "invalid_request_error", f"the body cannot be decoded: {type(e).__name__}") from None


FD_RESERVE = 64  # descriptors kept for what a server opens itself (logs, client sessions to engines, files)


def connection_cap(limits: ConnectionLimits) -> ConnectionLimits:
    """``limits`` with ``max_connections`` lowered to what the process's descriptor limit leaves: 1,100 silent
    sockets exhausted an engine limited to 1,024 descriptors (accept failed, a normal request timed out)."""
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft == resource.RLIM_INFINITY:
        return limits
    return replace(limits, max_connections=max(1, min(limits.max_connections, soft - FD_RESERVE)))


class Listener:
    """A started server: its URL and how to stop it."""

    def __init__(self, runner: web.AppRunner, server: asyncio.Server, url: str) -> None:
        self.runner, self.server, self.url = runner, server, url

    async def close(self) -> None:
        self.server.close()
        await self.runner.cleanup()


async def _expect(request: web.Request) -> web.StreamResponse | None:
    """aiohttp's default Expect handling (``100-continue`` answered, the body then read), but any other
    expectation is one 417 whatever its bytes: aiohttp's own handler quoted the header, non-UTF-8 bytes as
    surrogates, into a text it could not encode, a 500 with a traceback (``Expect: \\xff``; issue 31's fuzz)."""
    if request.version != HttpVersion11:
        return None
    if request.headers.get(hdrs.EXPECT, "").lower() == "100-continue":
        await request.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        request.writer.output_size = 0  # the 100 is not part of the response's size
        return None
    return error_response(417, "invalid_request_error", "unsupported Expect header (only 100-continue)")


# every route's Expect handler, also the 404/405 routes aiohttp makes per request: a route takes the module's
# default when it is constructed (after this import in both servers), and aiohttp has no public setting for it
web_urldispatcher._default_expect_handler = _expect  # type: ignore[assignment]  # a response is allowed


async def listen(app: web.Application, host: str, port: int, name: str) -> Listener:
    """Start serving ``app`` on host:port (0: any free port); print where it listens."""
    # auto_decompress off: a body marked Content-Encoding gzip that is not made aiohttp's parser store an error
    # that it re-raised and logged as "Unhandled exception" after the 400 went out; the engines, like vLLM's
    # server, read the body as sent (a compressed body is then not JSON: 400)
    runner = web.AppRunner(app, access_log=None, handle_signals=False, handler_cancellation=True, auto_decompress=False)
    await runner.setup()
    registry, limits = app[_REGISTRY], connection_cap(app[_LIMITS])
    server = runner.server
    assert server is not None

    def connection() -> _GuardedConnection:
        return _GuardedConnection(server(), registry, limits)

    srv = await asyncio.get_running_loop().create_server(connection, host, port, reuse_address=True, backlog=4096)
    bound_host, bound_port = srv.sockets[0].getsockname()[:2]
    shown = f"[{bound_host}]" if ":" in bound_host else bound_host
    url = f"http://{shown}:{bound_port}"
    print(f"{name}: listening on {url}", flush=True)
    return Listener(runner, srv, url)


class _MalformedHttpOneLine(logging.Filter):
    """aiohttp logs a traceback for every unparsable request; a malformed request is the
    client's fault, so it becomes one line (a bug in a handler keeps its traceback)."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, HttpProcessingError):
            first = (exc.message or "").strip().splitlines()
            record.msg = f"{record.getMessage()}: malformed HTTP ({exc.code}: {first[0] if first else ''})"
            record.args, record.exc_info, record.exc_text = (), None, None
        return True


def setup_logging() -> None:
    """One line per event on stderr (the child's log file when the harness started it)."""
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
    logging.getLogger("aiohttp.server").addFilter(_MalformedHttpOneLine())
