"""serve-engine's stand-in for vLLM's NixlConnector: the KV hand-off between two engine processes.

The request fields are vLLM's ``kv_transfer_params`` (vllm/distributed/kv_transfer/kv_connector/v1/
nixl_connector.py), so llm-d's routing sidecar protocol (and serve-router, which plays it) works
unchanged:

- a ``--role prefill`` engine given ``kv_transfer_params.do_remote_decode`` (the sidecar's
  ``max_tokens: 1``, ``stream: false`` request) prefills, keeps the prompt's KV blocks
  (harness/sim/engine/kv_transfer.py) and answers with ``kv_transfer_params`` for the decode side:
  ``do_remote_prefill``, ``remote_engine_id`` (its pod), ``remote_request_id``, ``remote_host``,
  ``remote_port``, ``remote_block_ids``, ``tp_size``;
- a ``--role decode`` engine given those parameters admits the request, and when it has the slot and
  the blocks (the engine's ``kv_pull`` event) reads the KV: ``POST /kv/read`` on the prefill engine
  with the hand-off's ``remote_secret``, and only for parameters serve-router signed (handoff_auth.py)
  (standing in for NIXL's RDMA READ and its completion notice). The prefill engine owns the link:
  reads queue on it first come, first served, each ``bytes x 8 / bandwidth_gbps + latency_ms``
  (``--kv-transfer``, the scenario's ``cluster.kv_transfer``), in scenario time; then it frees the
  blocks and answers 200, and the decode engine computes the last prompt token. 404 when the KV is
  not kept (expired after ``abort_timeout_s``, or never there): the decode request fails with an
  ``error`` chunk (vLLM's default ``kv_load_failure_policy: fail``). A decode request dropped
  before its read (client gone) sends ``{"release": true}``: the prefill engine frees the KV at once
  (vLLM's decode side notifies the producer in ``request_finished``).
- ``--role both`` (aggregated, the default) ignores ``kv_transfer_params``, as vLLM without a KV
  connector does.
"""
from __future__ import annotations

import asyncio
import contextlib
import math
from typing import Any

import aiohttp
from aiohttp import web

from scalearena.harness.local.handoff_auth import new_secret, secret_matches, vouched
from scalearena.harness.local.openai_api import ApiError


class KVConnector:
    """One engine process's side of the hand-off (both sides in one object: a pod has one role)."""

    def __init__(self, server: Any, kv: Any, latency: Any) -> None:
        """``server``: the EngineServer (its engine, clock, wake-up, address); ``kv``: a KVTransferSpec."""
        self.server, self.engine, self.kv = server, server.engine, kv
        shape = getattr(latency, "shape", None)  # the roofline model's ModelShape
        self.kv_bytes = kv.kv_bytes_per_token or (shape.kv_bytes_per_token if shape is not None else 0)
        self.time_scale = server.cfg.time_scale
        self.link_free_s = 0.0  # prefill side: when the KV link has sent everything queued on it
        self.remote: dict[int, dict[str, Any]] = {}  # decode side: engine rid -> the prefill's kv_transfer_params
        self.secrets: dict[int, str] = {}  # prefill side: engine rid -> the secret its /kv/read needs
        self.session: aiohttp.ClientSession | None = None
        self._tasks: set[asyncio.Task] = set()

    def spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- request parameters ------------------------------------------------------------------------
    @staticmethod
    def flags(role: str, params: Any) -> tuple[bool, bool]:
        """(do_remote_decode, do_remote_prefill) this engine honours for a request's kv_transfer_params."""
        if role == "both" or not isinstance(params, dict):
            return False, False
        if role == "prefill" and params.get("do_remote_decode"):
            return True, False
        if role == "decode" and params.get("do_remote_prefill"):
            for k in ("remote_host", "remote_port", "remote_request_id"):
                if params.get(k) in (None, ""):
                    raise ApiError(400, "invalid_request_error", f"kv_transfer_params.{k} is required with "
                                   "do_remote_prefill", f"kv_transfer_params.{k}")
            port = params["remote_port"]  # checked here, not when the read starts (int("abc"), int(1e400))
            if not isinstance(params["remote_host"], str) or isinstance(port, bool) or not isinstance(port, int) \
                    or not 0 < port < 65536:
                raise ApiError(400, "invalid_request_error", "kv_transfer_params: remote_host must be a host name "
                               f"and remote_port a port number (1-65535); got {params['remote_host']!r:.40}:"
                               f"{port!r:.40}", "kv_transfer_params.remote_port")
            return False, True
        return False, False

    def admit(self, role: str, req: Any, n_prompts: int) -> tuple[bool, bool, Any]:
        """(do_remote_decode, do_remote_prefill, kv_transfer_params) of a parsed request; ApiError when
        the parameters cannot be honoured (several sequences, or a streamed prefill)."""
        params = req.body.get("kv_transfer_params")
        remote_decode, remote_prefill = self.flags(role, params)
        if remote_prefill and not vouched(self.server.cfg.handoff_key, params):
            why = ("no valid handoff_signature" if self.server.cfg.handoff_key is not None
                   else "this engine has no --handoff-key-file")
            raise ApiError(403, "permission_denied", f"kv_transfer_params were not handed over by the gateway ({why}):"
                           " a decode engine reads KV only where serve-router sent it", "kv_transfer_params")
        if (remote_decode or remote_prefill) and (req.n > 1 or n_prompts > 1):
            raise ApiError(422, "invalid_request_error", "kv_transfer_params needs one prompt and n = 1")
        if remote_decode and req.stream:
            raise ApiError(400, "invalid_request_error", "do_remote_decode needs stream: false", "stream")
        return remote_decode, remote_prefill, params

    def produced(self, rid: int, prompt_tokens: int) -> dict[str, Any]:
        """The kv_transfer_params a prefill answers with (what the sidecar hands the decode side)."""
        blocks = math.ceil(prompt_tokens / self.engine.bs)
        if len(self.secrets) > 4096:  # KV expired or released since: forget their secrets
            self.secrets = {r: s for r, s in self.secrets.items() if self.engine.holds_kv(r)}
        self.secrets[rid] = new_secret()
        return {"do_remote_prefill": True, "do_remote_decode": False, "remote_block_ids": list(range(blocks)),
                "remote_engine_id": self.server.cfg.pod, "remote_request_id": str(rid),
                "remote_host": self.server.cfg.host, "remote_port": self.server.port, "tp_size": 1,
                "remote_secret": self.secrets[rid]}

    # -- prefill side: POST /kv/read ----------------------------------------------------------------
    async def handle_read(self, request: web.Request) -> web.Response:
        try:
            body = await request.json()
            rid, tokens = int(body["remote_request_id"]), max(0, int(body.get("tokens", 0)))
        except (ValueError, KeyError, TypeError, OverflowError, RecursionError):  # OverflowError: int(1e400)
            raise ApiError(400, "invalid_request_error", "expected {remote_request_id, tokens}") from None
        if not self.engine.holds_kv(rid):
            self.secrets.pop(rid, None)
            raise ApiError(404, "kv_not_found", f"no KV kept for request {rid} (expired or released)")
        if not secret_matches(self.secrets.get(rid), body.get("secret")):
            raise ApiError(403, "permission_denied", f"the KV of request {rid} is read with its hand-off's secret")
        self.secrets.pop(rid, None)  # one read or release per hand-off
        if body.get("release"):
            self.engine.release_kv(self.server.now(), rid)
            self.server._wake.set()
            return web.json_response({"released": rid})
        t = self.server.now()
        nbytes = math.ceil(tokens / self.engine.bs) * self.engine.bs * self.kv_bytes
        if nbytes:
            start = max(t, self.link_free_s)
            self.link_free_s = start + nbytes * 8.0 / (self.kv.bandwidth_gbps * 1e9)
            done = self.link_free_s + self.kv.latency_ms / 1000.0
        else:  # the decode side's prefix cache held it all: only the notice
            done = t + self.kv.latency_ms / 1000.0
        await asyncio.sleep(max(0.0, done - t) / self.time_scale)
        self.engine.release_kv(self.server.now(), rid)
        self.server._wake.set()
        return web.json_response({"bytes": nbytes})

    # -- decode side ---------------------------------------------------------------------------------
    def _url(self, params: dict[str, Any]) -> str:
        return f"http://{params['remote_host']}:{int(params['remote_port'])}/kv/read"

    def start_pull(self, rid: int, tokens: int) -> None:
        """The engine admitted a do_remote_prefill request: read its KV; if that fails, so does the
        request (vLLM's kv_load_failure_policy ``fail``: an error chunk, status error)."""
        async def run() -> None:
            st = self.server.streams.get(rid)
            if not await self.pull(rid, tokens) and st is not None and not (st.finished or st.error):
                self.engine.abort(self.server.now(), rid)
                st.error = "error"
                st.changed.set()
        self.spawn(run())

    async def pull(self, rid: int, tokens: int) -> bool:
        """Read ``tokens`` of prompt KV from the prefill engine; True once it is here (engine told)."""
        params = self.remote.get(rid)
        if params is None:
            return False
        if self.session is None:
            self.session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None, sock_connect=5.0))
        try:
            async with self.session.post(self._url(params), json={"remote_request_id": params["remote_request_id"],
                                                                  "secret": params.get("remote_secret"),
                                                                  "tokens": tokens}) as r:
                ok = r.status == 200
        except (aiohttp.ClientError, TimeoutError, ValueError):
            ok = False
        self.remote.pop(rid, None)
        if ok:
            self.engine.kv_loaded(self.server.now(), rid)
            self.server._wake.set()
        return ok

    async def release(self, rid: int) -> None:
        """A decode request ended before its read: tell the prefill engine to free the KV."""
        params = self.remote.pop(rid, None)
        if params is None:
            return
        if self.session is None:
            self.session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5.0))
        with contextlib.suppress(aiohttp.ClientError, TimeoutError, ValueError):
            async with self.session.post(self._url(params), json={"remote_request_id": params["remote_request_id"],
                                                                  "secret": params.get("remote_secret"),
                                                                  "release": True}):
                pass

    async def close(self) -> None:
        if self.session is not None:
            await self.session.close()
