"""Prefill/decode disaggregation on real processes: serve-engine --role prefill|decode and serve-router.

Two engines (constant latency: TTFT 10 ms, ITL 5 ms, 1024 blocks of 16) and a router on 127.0.0.1,
ports read back from what each prints. No assertion is on elapsed time: only on what the servers
answer and on their /metrics (scenario units).
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from scalearena.harness.local.handoff_auth import vouch

from .test_server_probes import TOKEN, Server, _start, metric, post, wait_for

pytestmark = pytest.mark.local

HANDOFF_KEY = "k" * 32  # the key the router signs hand-offs with; the decode engine has the same file
KV = json.dumps({"bandwidth_gbps": 0.08, "latency_ms": 5, "kv_bytes_per_token": 1000, "abort_timeout_s": 480})
COMMON = ["--model", "m", "--port", "0", "--time-to-first-token", "10ms", "--inter-token-latency", "5ms",
          "--max-num-seqs", "8", "--kv-transfer", KV]


@pytest.fixture(scope="module")
def pd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Server, Server]]:
    tmp: Path = tmp_path_factory.mktemp("pd")
    (tmp / "token").write_text(TOKEN + "\n")
    (tmp / "handoff.key").write_text(HANDOFF_KEY)
    key = ["--handoff-key-file", str(tmp / "handoff.key")]
    p = _start(tmp, "prefill", ["engine", *COMMON, "--role", "prefill", "--pod", "m-prefill-0"])
    d = _start(tmp, "decode", ["engine", *COMMON, "--role", "decode", "--pod", "m-decode-0", *key])
    r = _start(tmp, "router", ["router", "--port", "0", "--model", "m", "--admin-token-file", str(tmp / "token"), *key])
    eps = [{"pod": "m-prefill-0", "variant": "m-prefill", "model": "m", "url": p.url, "role": "prefill"},
           {"pod": "m-decode-0", "variant": "m-decode", "model": "m", "url": d.url, "role": "decode"}]
    put = requests.put(r.url + "/admin/endpoints", json={"endpoints": eps}, timeout=5,
                       headers={"Authorization": f"Bearer {TOKEN}"})
    assert put.status_code == 200, put.text
    yield p, d, r
    for s in (r, d, p):
        s.close()


def prefill_request(prompt_tokens: int) -> dict:
    return {"model": "m", "prompt": "x", "max_tokens": 1, "stream": False, "scalearena_prompt_tokens": prompt_tokens,
            "kv_transfer_params": {"do_remote_decode": True, "do_remote_prefill": False}}


def test_prefill_engine_keeps_the_kv_and_frees_it_on_release(pd: tuple[Server, Server, Server]) -> None:
    prefill, _, _ = pd
    # 160 prompt tokens = 10 blocks of 16 kept after the 1-token prefill: KV 10 / 1024
    r = post(prefill.url, prefill_request(160))
    assert r.status_code == 200, r.text
    params = r.json()["kv_transfer_params"]
    assert params["do_remote_prefill"] is True and params["remote_engine_id"] == "m-prefill-0"
    assert params["remote_block_ids"] == list(range(10)) and params["remote_host"] == "127.0.0.1"
    assert metric(prefill, "vllm:kv_cache_usage_perc") == pytest.approx(10 / 1024)
    assert metric(prefill, "vllm:num_requests_running") == 0.0
    read = prefill.url + "/kv/read"
    rid, secret = params["remote_request_id"], params["remote_secret"]
    # a stranger who knows the request id but not the hand-off's secret reads and releases nothing
    for stranger in ({"remote_request_id": rid, "release": True}, {"remote_request_id": rid, "tokens": 160,
                                                                     "secret": "guess"}):
        assert requests.post(read, json=stranger, timeout=5).status_code == 403
    assert metric(prefill, "vllm:kv_cache_usage_perc") == pytest.approx(10 / 1024)  # still kept
    assert requests.post(read, json={"remote_request_id": rid, "release": True, "secret": secret},
                         timeout=5).status_code == 200
    assert metric(prefill, "vllm:kv_cache_usage_perc") == 0.0
    assert requests.post(read, json={"remote_request_id": rid, "tokens": 160}, timeout=5).status_code == 404
    # a streamed prefill could not return its kv_transfer_params: 400
    bad = {**prefill_request(16), "stream": True}
    assert post(prefill.url, bad).status_code == 400


def test_router_hands_a_request_from_prefill_to_decode(pd: tuple[Server, Server, Server]) -> None:
    prefill, decode, router = pd
    ok_p, ok_d = metric(prefill, "vllm:request_success_total"), metric(decode, "vllm:request_success_total")
    assert wait_for(lambda: requests.get(router.url + "/v1/models", timeout=5).ok)
    body = {"model": "m", "prompt": "x", "max_tokens": 5, "stream": True, "scalearena_prompt_tokens": 160}
    r = requests.post(router.url + "/v1/completions", json=body, timeout=30, stream=True)
    assert r.status_code == 200
    assert (r.headers["x-scalearena-pod"], r.headers["x-scalearena-prefill-pod"]) == ("m-decode-0", "m-prefill-0")
    chunks = [line for line in r.iter_lines() if line.startswith(b"data: {")]
    assert len(chunks) == 5  # every token streamed comes from the decode engine; the prefill's one is not sent
    # the prefill half finished once (1 token), the decode half once (5 tokens); the KV left the prefill engine
    assert metric(prefill, "vllm:request_success_total") == ok_p + 1
    assert metric(decode, "vllm:request_success_total") == ok_d + 1
    assert wait_for(lambda: metric(prefill, "vllm:kv_cache_usage_perc") == 0.0)
    assert wait_for(lambda: metric(decode, "vllm:kv_cache_usage_perc") == 0.0)


def test_decode_engine_fails_a_request_whose_kv_is_gone(pd: tuple[Server, Server, Server]) -> None:
    prefill, decode, _ = pd
    host, port = prefill.url.rsplit(":", 1)
    params = vouch(HANDOFF_KEY.encode(), {"do_remote_prefill": True, "remote_request_id": "999999",
                                          "remote_secret": "s"}, host.removeprefix("http://"), int(port))
    body = {"model": "m", "prompt": "x", "max_tokens": 3, "stream": True, "scalearena_prompt_tokens": 32,
            "kv_transfer_params": params}  # signed as the router signs (the test plays the router)
    r = requests.post(decode.url + "/v1/completions", json=body, timeout=30, stream=True)
    assert r.status_code == 200
    text = b"".join(r.iter_lines()).decode()
    assert '"type": "error"' in text and "[DONE]" not in text  # vLLM kv_load_failure_policy fail
    missing = {**body, "kv_transfer_params": {"do_remote_prefill": True}}
    assert post(decode.url, missing).status_code == 400


def test_a_strangers_hand_off_is_refused_and_disturbs_no_request(pd: tuple[Server, Server, Server]) -> None:
    """A client's own kv_transfer_params naming an address of its choosing (here a listening socket that
    records any connection): sent to the decode engine it is 403 (not signed by the router), through the
    router it is dropped and the request served by the P/D path; the listener never sees a connection."""
    import socket
    import threading

    prefill, decode, router = pd
    trap = socket.socket()
    trap.bind(("127.0.0.1", 0))
    trap.listen(8)
    trap.settimeout(0.2)
    hits: list[object] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                hits.append(trap.accept()[1])
            except OSError:
                continue
    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    forged = {"do_remote_prefill": True, "remote_request_id": "1", "remote_host": "127.0.0.1",
              "remote_port": trap.getsockname()[1], "remote_secret": "x", "handoff_signature": "0" * 64}
    body = {"model": "m", "prompt": "x", "max_tokens": 3, "stream": False, "scalearena_prompt_tokens": 32,
            "kv_transfer_params": forged}
    ok_d = metric(decode, "vllm:request_success_total")
    try:
        direct = post(decode.url, body)
        assert direct.status_code == 403 and direct.json()["error"]["param"] == "kv_transfer_params", direct.text
        routed = post(router.url, body)  # the router drops the client's params and hands off itself
        assert routed.status_code == 200, routed.text
        assert routed.headers["x-scalearena-prefill-pod"] == "m-prefill-0"
        assert metric(decode, "vllm:request_success_total") == ok_d + 1  # the routed one, nothing else
    finally:
        stop.set()
        thread.join()
        trap.close()
    assert hits == []
