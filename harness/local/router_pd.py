"""serve-router's prefill/decode hand-off: the two calls llm-d's routing sidecar makes.

When the picker (harness/sim/router.py) chose a prefill pod as well as a decode pod, serve-router does
what llm-d-inference-scheduler's sidecar does on the decode pod (pkg/sidecar/proxy/
connector_nixlv2.go, runNIXLProtocolV2):

1. the prefill request: the client's body with every output limit set to 1 (``max_tokens``, and
   ``max_completion_tokens`` when the body has it), ``stream: false``, no ``stream_options``, and
   ``kv_transfer_params: {do_remote_decode: true, do_remote_prefill: false, remote_*: null}``,
   to the prefill engine;
2. a non-2xx answer goes back to the client as it is (the sidecar writes the prefill's status);
3. the decode request: the client's body, restored, with the ``kv_transfer_params`` the prefill
   answered with, its address set to the prefill endpoint the router chose and signed
   (handoff_auth.py), to the decode engine, streamed back as any request (``RouterServer._proxy``).

A client's own ``kv_transfer_params`` are dropped from every request (``without_kv_params``).

Unlike the sidecar, serve-router runs on its own host: both calls leave from it (a loopback hop
on local). The decode engine reads the KV from the prefill engine itself (kv_connector.py).
The response names both pods (``x-scalearena-pod``: the decode pod, which streamed the tokens;
``x-scalearena-prefill-pod``: the prefill pod).
"""
from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

import aiohttp
from aiohttp import web

from scalearena.harness.local.handoff_auth import vouch
from scalearena.harness.local.openai_api import ApiError
from scalearena.workloads.load_handoff import PREFILL_POD_HEADER


def pd_headers(route: Any) -> dict[str, str]:
    """The response header naming the prefill pod of a P/D request (none for an aggregated one)."""
    return {PREFILL_POD_HEADER: route.prefill.name} if route.prefill is not None else {}


KV_PARAMS = "kv_transfer_params"


def without_kv_params(body: dict[str, Any]) -> dict[str, Any]:
    """The client's body without its own ``kv_transfer_params``: only the gateway hands KV over."""
    return {k: v for k, v in body.items() if k != KV_PARAMS}


def prefill_body(body: dict[str, Any]) -> dict[str, Any]:
    """The sidecar's prefill request: one output token, unary, asking the engine to keep the KV."""
    out = {k: v for k, v in body.items() if k != "stream_options"}
    out["stream"] = False
    out["max_tokens"] = 1
    if "max_completion_tokens" in body:
        out["max_completion_tokens"] = 1
    out["kv_transfer_params"] = {"do_remote_decode": True, "do_remote_prefill": False, "remote_engine_id": None,
                                 "remote_block_ids": None, "remote_host": None, "remote_port": None}
    return out


async def prefill_then_decode_body(server: Any, path: str, body: dict[str, Any], prefill: Any) -> bytes | web.Response:
    """Step 1 and 2: the prefill call on ``prefill`` (a router Endpoint). The decode request's body, or the
    response to send the client when the prefill did not answer 200."""
    assert server.session is not None
    headers = {PREFILL_POD_HEADER: prefill.pod}
    prefill.inflight += 1
    try:
        async with server.session.post(prefill.url + path, json=prefill_body(body)) as up:
            data = await up.read()
            if up.status != 200:
                return web.Response(status=up.status, body=data, headers={**headers, "Content-Type":
                                    up.headers.get("Content-Type", "application/json")})
        params = json.loads(data).get(KV_PARAMS)
        if not isinstance(params, dict):
            raise ValueError("the prefill answered without kv_transfer_params")
    except (aiohttp.ClientError, TimeoutError, ValueError, AttributeError):
        kind = "killed" if prefill.state != "ready" else "error"
        return ApiError(502, kind, f"prefill engine {prefill.pod} unreachable").response(headers)
    finally:
        prefill.inflight -= 1
    if server.cfg.handoff_key is None:
        return ApiError(503, "service_unavailable", "P/D hand-off needs serve-router --handoff-key-file (the key the "
                        "decode engines check)").response(headers)
    url = urlsplit(prefill.url)  # the address the router chose, not one the prefill's answer names
    vouched = vouch(server.cfg.handoff_key, params, url.hostname or "", url.port or 80)
    return json.dumps({**body, KV_PARAMS: vouched}).encode()
