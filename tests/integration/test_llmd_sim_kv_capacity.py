"""llm-d-inference-sim v0.10.2 with ``--enable-kvcache``: a request whose prompt blocks do not fit the KV cache.

The real simulator does not queue such a request (nor preempt): it answers HTTP 200 and a stream of exactly
two events, an error (code 500) and ``[DONE]``, within milliseconds. Source (module
github.com/llm-d/llm-d-inference-sim@v0.10.2): pkg/kv-cache/block_cache.go:211-213 (``len(usedBlocks) + new
blocks > maxBlocks`` -> capacityError, line 32), pkg/llm-d-inference-sim/request.go:192-195 and 293-302 (as a
500 api.Error), pkg/llm-d-inference-sim/worker.go:64-70 (onto the response channel), pkg/communication/
http.go:284-290 (status 200 and the SSE body are set before the channel is read) and 405-411, 343-347 (the
error frame, then ``[DONE]``). Nothing is logged at the default verbosity. Only whole prompt blocks count
(llm-d-kv-cache v0.9.0 pkg/kvcache/kvblock/token_processor.go:184-197: no partial block); output tokens take
no blocks; a block already held by a running request is shared (its reference count goes up), so identical
prompts fit where distinct ones do not.

This is why CLUSTER=kwok runs of the paper scenarios (kv-cache-size 1024 x block-size 16 = 16,384 prompt
tokens per engine, prompts up to 8,192 words) end with long-prompt requests in status ``error``: scalearena's
engine model (harness/sim/engine/core.py) instead keeps such a request waiting until its blocks are free.

Numbers worked out by hand: every word of the prompts is one token for the dummy tokenizer (``\\w+`` runs);
7,616 words = 476 blocks of 16 exactly; two distinct prompts hold 952 of the 1,024 blocks (KV usage
0.9296875); a third distinct one would need 1,428 > 1,024; one identical to a running prompt needs 0 new blocks.
The simulator runs directly on 127.0.0.1 and, where this process may make network namespaces (root), in a
namespace of its own behind the pod launcher's Relay, as CLUSTER=kwok runs it: the answers are the same.
"""
from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from scalearena.harness.kube import launcher as L, tools
from scalearena.harness.local.supervisor import free_port

pytestmark = pytest.mark.local

SIM = tools.binary("llm-d-inference-sim")
WORDS = 7616  # 476 blocks of 16
CAPACITY_ERROR = {"message": "the kv cache does not have sufficient capacity to store this request",
                  "type": "InternalServerError", "param": None, "code": 500}


def _prompt(head: str) -> str:
    return " ".join([head] + ["w"] * (WORDS - 1))


def _stream(host: str, port: int, prompt: str) -> tuple[int, list[str]]:
    """HTTP status and the ``data:`` payloads of one streamed completion."""
    conn = http.client.HTTPConnection(host, port, timeout=30)
    body = {"model": "m", "prompt": prompt, "max_tokens": 2, "stream": True}
    conn.request("POST", "/v1/completions", json.dumps(body), {"Content-Type": "application/json"})
    resp = conn.getresponse()
    raw = resp.read().decode()
    conn.close()
    return resp.status, [ln[5:].strip() for ln in raw.split("\n") if ln.startswith("data:")]


def _kv_usage(host: str, port: int) -> float:
    conn = http.client.HTTPConnection(host, port, timeout=5)
    conn.request("GET", "/metrics")
    text = conn.getresponse().read().decode()
    conn.close()
    return next((float(ln.rsplit(" ", 1)[1]) for ln in text.splitlines()
                 if ln.startswith("vllm:kv_cache_usage_perc")), 0.0)


def _wait(cond: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if cond():
                return
        except OSError:
            pass
        time.sleep(0.05)
    raise AssertionError("timed out")


@pytest.fixture(params=["direct", "netns-relay"])
def sim(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, int]]:
    if not SIM.exists():
        pytest.skip(f"{SIM} not built (python -m scalearena.harness.kube.tools)")
    relayed = request.param == "netns-relay"
    if relayed and not L.netns_supported():
        pytest.skip("needs CAP_SYS_ADMIN (root) for a network namespace")
    port = 8000 if relayed else free_port()
    argv = [str(SIM), "--model=Qwen/Qwen3-0.6B", "--served-model-name=m", f"--port={port}", "--max-num-seqs=256",
            "--block-size=16", "--kv-cache-size=1024", "--max-model-len=10240", "--enable-kvcache",
            "--force-dummy-tokenizer", "--time-to-first-token=3s", "--inter-token-latency=1ms"]
    if relayed:
        argv = [sys.executable, "-I", "-c", L.NETNS_EXEC, *argv]
    env = {**os.environ, "POD_IP": "127.0.0.1", "POD_NAME": "p", "POD_NAMESPACE": "ns"}  # --enable-kvcache needs POD_IP
    with open(tmp_path / "sim.log", "wb") as log:
        child = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    relay = None
    try:
        if relayed:
            relay = L.Relay()
            _wait(lambda: os.stat(f"/proc/{child.pid}/ns/net").st_ino != os.stat("/proc/self/ns/net").st_ino, 10)
            port = free_port()
            relay.add("sim", "127.0.0.1", {port: 8000}, pid=child.pid)
        _wait(lambda: _kv_usage("127.0.0.1", port) == 0.0, 30)
        yield "127.0.0.1", port
    finally:
        if relay is not None:
            relay.close()
        child.terminate()
        child.wait(timeout=10)


def test_prompt_beyond_free_kv_blocks_is_an_error_event_then_done(sim: tuple[str, int]) -> None:
    host, port = sim
    with ThreadPoolExecutor(4) as pool:
        held = [pool.submit(_stream, host, port, _prompt(h)) for h in ("ra", "rb")]
        # both distinct prompts hold their blocks for the 3 s time to first token
        _wait(lambda: _kv_usage(host, port) == 952 / 1024, 2.5)
        third = pool.submit(_stream, host, port, _prompt("rc"))  # 476 more blocks: 1,428 > 1,024
        same = pool.submit(_stream, host, port, _prompt("ra"))  # the blocks of "ra": shared, 0 new
        status, events = third.result()
        assert status == 200
        assert events == [json.dumps({"error": CAPACITY_ERROR}, separators=(",", ":")), "[DONE]"]
        for fut in (*held, same):
            status, events = fut.result()
            assert status == 200 and events[-1] == "[DONE]"
            assert not any('"error"' in e for e in events)


@pytest.mark.parametrize("sim", ["direct"], indirect=True)
def test_the_gateway_counts_that_error_stream_as_failed(sim: tuple[str, int], tmp_path: Path) -> None:
    """serve-router in front of the sim: the stream it relays ends in [DONE], but after an error event, so the
    request is not one the variant completed (its `completed` count, which the kube and local time series read).
    Before the fix the [DONE] alone counted it: 3 completed of 2 served."""
    from tests.integration.test_server_probes import TOKEN, _start, admin, wait_for

    host, port = sim
    (tmp_path / "token").write_text(TOKEN + "\n")
    # admission off: the router forwards at once (its saturation admission would hold the third request until the
    # first two finished, and then it fits)
    router = _start(tmp_path, "router", ["router", "--port", "0", "--model", "m", "--admin-token-file",
                                         str(tmp_path / "token"), "--header-timeout", "5s",
                                         "--router-spec", json.dumps({"admission": {"kind": "none"}})])
    try:
        eps = {"endpoints": [{"pod": "p0", "variant": "v", "model": "m", "url": f"http://{host}:{port}",
                              "state": "ready"}]}
        assert admin(router, "PUT", "/admin/endpoints", json=eps).status_code == 200
        assert wait_for(lambda: admin(router, "GET", "/admin/state").json()["pods"]["p0"]["scrape_ok"])
        r_host, r_port = router.url.removeprefix("http://").rsplit(":", 1)
        with ThreadPoolExecutor(3) as pool:
            held = [pool.submit(_stream, r_host, int(r_port), _prompt(h)) for h in ("ra", "rb")]
            _wait(lambda: _kv_usage(host, port) == 952 / 1024, 2.5)
            status, events = pool.submit(_stream, r_host, int(r_port), _prompt("rc")).result()
            assert status == 200 and events[0].startswith('{"error"') and events[-1] == "[DONE]"
            assert all(f.result()[1][-1] == "[DONE]" for f in held)
        # 2 served of 3: the error stream is not a completion
        assert wait_for(lambda: admin(router, "GET", "/admin/state").json()["completed"] == {"v": 2})
    finally:
        router.close()
