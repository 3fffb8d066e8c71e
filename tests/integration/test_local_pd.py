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

from .test_server_probes import TOKEN, Server, _start, metric, post, wait_for

pytestmark = pytest.mark.local

KV = json.dumps({"bandwidth_gbps": 0.08, "latency_ms": 5, "kv_bytes_per_token": 1000, "abort_timeout_s": 480})
COMMON = ["--model", "m", "--port", "0", "--time-to-first-token", "10ms", "--inter-token-latency", "5ms",
          "--max-num-seqs", "8", "--kv-transfer", KV]


@pytest.fixture(scope="module")
def pd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Server, Server]]:
    tmp: Path = tmp_path_factory.mktemp("pd")
    (tmp / "token").write_text(TOKEN + "\n")
    p = _start(tmp, "prefill", ["engine", *COMMON, "--role", "prefill", "--pod", "m-prefill-0"])
    d = _start(tmp, "decode", ["engine", *COMMON, "--role", "decode", "--pod", "m-decode-0"])
    r = _start(tmp, "router", ["router", "--port", "0", "--model", "m", "--admin-token-file", str(tmp / "token")])
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
    rid = params["remote_request_id"]
    assert requests.post(read, json={"remote_request_id": rid, "release": True}, timeout=5).status_code == 200
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
    body = {"model": "m", "prompt": "x", "max_tokens": 3, "stream": True, "scalearena_prompt_tokens": 32,
            "kv_transfer_params": {"do_remote_prefill": True, "remote_request_id": "999999",
                                   "remote_host": host.removeprefix("http://"), "remote_port": int(port)}}
    r = requests.post(decode.url + "/v1/completions", json=body, timeout=30, stream=True)
    assert r.status_code == 200
    text = b"".join(r.iter_lines()).decode()
    assert '"type": "error"' in text and "[DONE]" not in text  # vLLM kv_load_failure_policy fail
    missing = {**body, "kv_transfer_params": {"do_remote_prefill": True}}
    assert post(decode.url, missing).status_code == 400
