"""HTTP probes against serve-engine and serve-router on 127.0.0.1 (issue 17 items 2, 3, 8, 11; issue 16).

Each server is a real process started with ``--port 0``; the test reads the URL the
server prints on start. Every wait is bounded (a few seconds); no assertion is on
elapsed time, only on what the servers answer and report on /metrics.

Engine under test: one batch slot (--max-num-seqs 1), --max-model-len 64, 200 ms per
output token, so a request of 4 prompt + 60 output tokens runs 60 x 0.2 = 12 s: long
enough that "running went back to 0" can only come from an abort, not from completion.
"""
from __future__ import annotations

import json
import os
import re
import select
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

pytestmark = pytest.mark.local

CLI = [sys.executable, "-m", "scalearena.harness.local.cli"]
TOKEN = "probe-token-0123456789abcdef"


class Server:
    def __init__(self, argv: list[str], log: Path, env: dict[str, str] | None = None) -> None:
        self.log = log
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=open(log, "wb"), text=True,  # noqa: SIM115
                                     env={**os.environ, **(env or {})})
        ready, _, _ = select.select([self.proc.stdout], [], [], 30.0)
        line = self.proc.stdout.readline() if ready else ""  # type: ignore[union-attr]
        m = re.search(r"listening on (http://127\.0\.0\.1:\d+)", line)
        if not m:
            self.close()
            raise AssertionError(f"no URL printed: {line!r}\n{log.read_text()}")
        self.url = m.group(1)

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()

    def stderr(self) -> str:
        return self.log.read_text()


def _start(tmp: Path, name: str, argv: list[str], env: dict[str, str] | None = None) -> Server:
    return Server(CLI + argv, tmp / f"{name}.log", env)


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("engine")
    s = _start(tmp, "engine", ["engine", "--model", "m", "--served-model-name", "b", "--port", "0",
                               "--max-num-seqs", "1", "--max-model-len", "64", "--time-to-first-token", "10ms",
                               "--inter-token-latency", "200ms", "--header-timeout", "1s", "--body-timeout", "1s",
                               "--mode", "echo"])
    yield s
    s.close()


@pytest.fixture(scope="module")
def router(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("router")
    (tmp / "token").write_text(TOKEN + "\n")
    s = _start(tmp, "router", ["router", "--port", "0", "--model", "a", "--model", "b", "--admin-token-file",
                               str(tmp / "token"), "--router-spec", json.dumps({"admission": {"queue_limit": 2}}),
                               "--queue-timeout", "60s", "--header-timeout", "1s"])
    yield s
    s.close()


def post(url: str, body: Any, path: str = "/v1/completions", **kw: Any) -> requests.Response:
    return requests.post(url + path, json=body, timeout=kw.pop("timeout", 10), **kw)


def metric(server: Server, name: str) -> float:
    text = requests.get(server.url + "/metrics", timeout=5).text
    m = re.search(rf"^{re.escape(name)}{{[^}}]*}} (\S+)$", text, re.M)
    return float(m.group(1)) if m else 0.0


def wait_for(cond: Callable[[], bool], timeout_s: float = 8.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.05)
    return cond()


def assert_openai_error(r: requests.Response, status: int, param: str | None = None) -> dict[str, Any]:
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert set(err) == {"message", "type", "param", "code"} and err["code"] == status
    if param is not None:
        assert err["param"] == param, err
    return err


# -- engine ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("bad", [-1, 0, "abc", True, 2.5])
def test_engine_rejects_bad_max_tokens(engine: Server, bad: Any) -> None:
    assert_openai_error(post(engine.url, {"model": "m", "prompt": "x", "max_tokens": bad}), 400, "max_tokens")


def test_engine_model_errors_and_unsupported_shapes(engine: Server) -> None:
    assert "model parameter" in assert_openai_error(post(engine.url, {"prompt": "x"}), 400, "model")["message"]
    assert "`nope`" in assert_openai_error(post(engine.url, {"model": "nope", "prompt": "x"}), 404)["message"]
    assert_openai_error(post(engine.url, {"model": "m", "prompt": "x", "n": 0}), 400, "n")
    assert_openai_error(post(engine.url, {"model": "m", "prompt": []}), 400, "prompt")
    # each field valid, the combination not servable: 422 (3 prompts x n 43 = 129 sequences > 128)
    assert_openai_error(post(engine.url, {"model": "m", "prompt": ["x"] * 3, "n": 43}), 422, "n")
    assert_openai_error(post(engine.url, {"model": "m", "prompt": ["x", "y"], "scalearena_prompt_tokens": 3}),
                        422, "scalearena_prompt_tokens")
    assert_openai_error(requests.post(engine.url + "/v1/completions", data=b"{nope", timeout=5), 400)
    assert_openai_error(requests.get(engine.url + "/v1/nothing", timeout=5), 404)
    assert_openai_error(requests.post(engine.url + "/v1/completions", data=b"x" * (9 << 20), timeout=30), 413)


def test_engine_caps_and_defaults_max_tokens(engine: Server) -> None:
    # one prompt in a list is one prompt: "alpha beta" = 2 tokens (two letter runs) -> default 16 output tokens
    r = post(engine.url, {"model": "m", "prompt": ["alpha beta"]})
    assert r.status_code == 200 and len(r.json()["choices"]) == 1
    assert r.json()["usage"] == {"prompt_tokens": 2, "completion_tokens": 16, "total_tokens": 18}
    assert r.json()["choices"][0]["text"].startswith("alpha beta alpha")  # echo mode repeats the prompt
    # 60 one-letter words and no max_tokens against max_model_len 64: the default 16 is capped to 64 - 60 = 4
    r = post(engine.url, {"model": "m", "prompt": "w " * 60})
    assert r.json()["usage"] == {"prompt_tokens": 60, "completion_tokens": 4, "total_tokens": 64}
    # an explicit max_tokens that cannot fit (1 + 10^9 > 64), or a 70-word prompt: the engine's admission, 400
    err = assert_openai_error(post(engine.url, {"model": "m", "prompt": "x", "max_tokens": 10**9}), 400)
    assert "maximum context length is 64 tokens" in err["message"]
    assert_openai_error(post(engine.url, {"model": "m", "prompt": "w " * 70}), 400)


def test_engine_abort_frees_the_slot_streaming_or_not_running_or_queued(engine: Server) -> None:
    holder = requests.post(engine.url + "/v1/completions", stream=True, timeout=10,
                           json={"model": "m", "prompt": "a b c d", "max_tokens": 60, "stream": True})
    lines = holder.iter_lines()  # kept: a dropped generator closes the connection (urllib3)
    first = next(lines)  # running: 64 - 4 = 60 tokens at 0.2 s, 12 s to go
    assert json.loads(first.removeprefix(b"data: "))["choices"][0]["text"]
    assert wait_for(lambda: metric(engine, "vllm:num_requests_running") == 1)
    waiter_done = threading.Event()

    def queued_unary() -> None:  # waits behind the holder, then its client gives up
        with pytest.raises(requests.ReadTimeout):
            post(engine.url, {"model": "m", "prompt": "q", "max_tokens": 5}, timeout=1.5)
        waiter_done.set()

    t = threading.Thread(target=queued_unary)
    t.start()
    assert wait_for(lambda: metric(engine, "vllm:num_requests_waiting") == 1)
    t.join(10)
    assert waiter_done.is_set()
    assert wait_for(lambda: metric(engine, "vllm:num_requests_waiting") == 0)  # queued, unary: aborted
    holder.close()
    assert wait_for(lambda: metric(engine, "vllm:num_requests_running") == 0)  # running, streaming: aborted
    assert wait_for(lambda: metric(engine, "vllm:kv_cache_usage_perc") == 0.0)
    # running, unary: the client gives up after 1 s of a 63 x 0.2 = 12.6 s request
    with pytest.raises(requests.ReadTimeout):
        post(engine.url, {"model": "m", "prompt": "u", "max_tokens": 63}, timeout=1.0)
    assert wait_for(lambda: metric(engine, "vllm:num_requests_running") == 0)
    assert wait_for(lambda: engine.stderr().count("client disconnected") >= 3)
    assert "Traceback" not in engine.stderr()


def test_engine_closes_half_sent_requests(engine: Server) -> None:
    with socket.create_connection(("127.0.0.1", int(engine.url.rsplit(":", 1)[1])), timeout=5) as s:
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n")
        closed = False
        for _ in range(60):  # slowloris: one header byte every 0.1 s, never the blank line
            try:
                s.sendall(b"X")
            except OSError:
                closed = True
                break
            r, _, _ = select.select([s], [], [], 0.1)
            if r and s.recv(100) == b"":
                closed = True
                break
        assert closed, "a half-sent request head kept its connection open for 6 s (header timeout 1 s)"
    with socket.create_connection(("127.0.0.1", int(engine.url.rsplit(":", 1)[1])), timeout=5) as s:
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: 100\r\n\r\n{\"model\"")  # 8 of the 100 body bytes, then nothing
        reply = s.recv(4096)
        assert reply.startswith(b"HTTP/1.1 408"), reply


def test_malformed_http_is_400_and_one_log_line(engine: Server) -> None:
    for raw in (b"GARBAGE \x00 nonsense\r\n\r\n", b"POST /v1/completions HTTP/1.1\r\nContent-Length: abc\r\n\r\n",
                b"POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"):
        with socket.create_connection(("127.0.0.1", int(engine.url.rsplit(":", 1)[1])), timeout=5) as s:
            s.sendall(raw)
            assert s.recv(100).split(b"\r\n")[0].endswith(b"400 Bad Request")
    # aiohttp answers a bad request line silently; the two bad heads are logged, one line each
    assert wait_for(lambda: engine.stderr().count("malformed HTTP") >= 2)
    assert "Traceback" not in engine.stderr()


def test_chat_stream_usage_chunk_has_the_stream_id(engine: Server) -> None:
    r = post(engine.url, {"model": "m", "messages": [{"role": "user", "content": "hi there"}], "max_tokens": 2,
                          "stream": True, "stream_options": {"include_usage": True}}, path="/v1/chat/completions")
    chunks = [json.loads(line[6:]) for line in r.text.splitlines() if line.startswith("data: {")]
    assert len({c["id"] for c in chunks}) == 1 and chunks[0]["id"].startswith("chatcmpl-")
    assert chunks[-1]["usage"] == {"prompt_tokens": 2, "completion_tokens": 2, "total_tokens": 4}
    assert "".join(c["choices"][0]["delta"]["content"] for c in chunks[:-1]) == "hi there"  # echo


def test_config_file_and_tokenizer(tmp_path: Path) -> None:
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import WhitespaceSplit

    tok = Tokenizer(WordLevel({"[UNK]": 0, "hello,": 1, "world!": 2}, unk_token="[UNK]"))
    tok.pre_tokenizer = WhitespaceSplit()  # "hello, world!" is 2 tokens here, 4 by the approximation
    tok.save(str(tmp_path / "tokenizer.json"))
    (tmp_path / "sim.yaml").write_text("model: cfg-model\nmode: echo\nmax-num-seqs: 2\ntime-to-first-token: 1\n")
    s = _start(tmp_path, "cfg", ["engine", "--config", str(tmp_path / "sim.yaml"), "--port", "0",
                                 "--tokenizer", str(tmp_path / "tokenizer.json")])
    try:
        assert [m["id"] for m in requests.get(s.url + "/v1/models", timeout=5).json()["data"]] == ["cfg-model"]
        r = post(s.url, {"model": "cfg-model", "prompt": "hello, world!", "max_tokens": 2}).json()
        # echo: the first 2 approximation pieces of the prompt, "hello" and ","
        assert r["usage"]["prompt_tokens"] == 2 and r["choices"][0]["text"] == "hello,"
    finally:
        s.close()
    (tmp_path / "bad.yaml").write_text("lora-modules: [x]\n")
    bad = subprocess.run(CLI + ["engine", "--config", str(tmp_path / "bad.yaml")], capture_output=True, text=True,
                         timeout=60)
    assert bad.returncode == 2 and "unknown key 'lora-modules'" in bad.stderr and "Traceback" not in bad.stderr


# -- router ------------------------------------------------------------------------------------------
def admin(router: Server, method: str, path: str, token: str | None = TOKEN, **kw: Any) -> requests.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return requests.request(method, router.url + path, headers=headers, timeout=5, **kw)


def test_router_admin_api_needs_the_token(router: Server, engine: Server) -> None:
    eps = {"endpoints": [{"pod": "p0", "variant": "v", "model": "b", "url": engine.url, "state": "ready"}]}
    assert_openai_error(admin(router, "PUT", "/admin/endpoints", None, json=eps), 401)
    assert_openai_error(admin(router, "PUT", "/admin/endpoints", "wrong-token-0123456789", json=eps), 401)
    assert_openai_error(admin(router, "GET", "/admin/state", None), 401)
    assert_openai_error(admin(router, "PUT", "/admin/endpoints", json={"endpoints": [{"pod": 1}]}), 400)
    assert admin(router, "GET", "/admin/state").json()["pods"] == {}  # nothing registered by the bad calls


def test_router_without_token_has_no_admin_api(tmp_path: Path) -> None:
    # models from the environment, as the kube backend's gateway-config ConfigMap gives them
    s = _start(tmp_path, "open", ["router", "--port", "0"], env={"SCALEARENA_ROUTER_MODELS": "m2 m1"})
    try:
        assert [m["id"] for m in requests.get(s.url + "/v1/models", timeout=5).json()["data"]] == ["m1", "m2"]
        assert_openai_error(requests.put(s.url + "/admin/endpoints", json={"endpoints": []}, timeout=5), 404)
        assert_openai_error(requests.get(s.url + "/admin/state", timeout=5), 404)
    finally:
        s.close()


def test_router_admin_port_of_its_own(tmp_path: Path) -> None:
    (tmp_path / "token").write_text(TOKEN)
    s = _start(tmp_path, "split", ["router", "--port", "0", "--model", "a", "--admin-token-file",
                                   str(tmp_path / "token"), "--admin-port", "0"])
    try:
        select.select([s.proc.stdout], [], [], 30.0)
        line = s.proc.stdout.readline()  # type: ignore[union-attr]
        m = re.search(r"serve-router admin: listening on (http://127\.0\.0\.1:\d+)", line)
        assert m, line
        assert_openai_error(requests.get(s.url + "/admin/state", headers={"Authorization": f"Bearer {TOKEN}"},
                                         timeout=5), 404)  # not on the API port
        state = requests.get(m.group(1) + "/admin/state", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=5)
        assert state.status_code == 200 and state.json()["pods"] == {}
        assert_openai_error(requests.get(m.group(1) + "/admin/state", timeout=5), 401)
    finally:
        s.close()


def test_router_unknown_models_404_at_once_with_bounded_metrics(router: Server) -> None:
    assert [m["id"] for m in requests.get(router.url + "/v1/models", timeout=5).json()["data"]] == ["a", "b"]
    for i in range(30):
        assert_openai_error(post(router.url, {"model": f"junk-{i}", "prompt": "x"}, timeout=5), 404)
    text = requests.get(router.url + "/metrics", timeout=5).text
    labels = set(re.findall(r'model_name="([^"]*)"', text))
    # 30 junk names, one label value; the served models a and b have their EPP series from the start
    assert labels == {"__other__", "a", "b"}, labels
    assert_openai_error(post(router.url, {"model": "a", "prompt": "x", "max_tokens": "abc"}), 400, "max_tokens")


def test_router_queue_junk_does_not_starve_another_model(router: Server, engine: Server) -> None:
    admin(router, "PUT", "/admin/endpoints", json={"endpoints": []})
    results: list[Any] = []

    def held() -> None:  # model a has no engine: held in a's gateway queue until the client gives up
        try:
            results.append(post(router.url, {"model": "a", "prompt": "x"}, timeout=3).status_code)
        except requests.ReadTimeout:
            results.append("gave up")

    threads = [threading.Thread(target=held) for _ in range(2)]
    for t in threads:
        t.start()
    assert wait_for(lambda: admin(router, "GET", "/admin/state").json()["queue"].get("a") == 2)
    assert_openai_error(post(router.url, {"model": "a", "prompt": "x"}), 429)  # a's queue (limit 2) is full
    got: list[requests.Response] = []
    b = threading.Thread(target=lambda: got.append(post(router.url, {"model": "b", "prompt": "y z",
                                                                     "max_tokens": 2}, timeout=20)))
    b.start()  # b is queued too (no engine yet), not refused because of a's queue
    assert wait_for(lambda: admin(router, "GET", "/admin/state").json()["queue"].get("b") == 1)
    eps = {"endpoints": [{"pod": "p0", "variant": "v", "model": "b", "url": engine.url, "state": "ready"}]}
    assert admin(router, "PUT", "/admin/endpoints", json=eps).status_code == 200
    b.join(20)
    assert got and got[0].status_code == 200 and got[0].headers["x-scalearena-pod"] == "p0"
    assert got[0].json()["usage"]["completion_tokens"] == 2
    for t in threads:
        t.join(10)
    assert results == ["gave up", "gave up"]
    assert wait_for(lambda: admin(router, "GET", "/admin/state").json()["queue"].get("a") == 0)  # freed
    assert "Traceback" not in router.stderr()


def test_router_closes_half_sent_requests(router: Server) -> None:
    with socket.create_connection(("127.0.0.1", int(router.url.rsplit(":", 1)[1])), timeout=5) as s:
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
        r, _, _ = select.select([s], [], [], 6.0)  # header timeout 1 s
        assert r and s.recv(100) == b""


def _register_b(router: Server, engine: Server) -> None:
    eps = {"endpoints": [{"pod": "p0", "variant": "v", "model": "b", "url": engine.url, "state": "ready"}]}
    assert admin(router, "PUT", "/admin/endpoints", json=eps).status_code == 200
    assert wait_for(lambda: admin(router, "GET", "/admin/state").json()["pods"]["p0"]["scrape_ok"])


def test_router_disconnect_aborts_the_engine_request(router: Server, engine: Server) -> None:
    _register_b(router, engine)
    r = requests.post(router.url + "/v1/completions", stream=True, timeout=10,
                      json={"model": "b", "prompt": "a b c d", "max_tokens": 60, "stream": True})
    lines = r.iter_lines()
    assert next(lines).startswith(b"data: ")  # 60 x 0.2 s = 12 s of stream ahead
    assert wait_for(lambda: metric(engine, "vllm:num_requests_running") == 1)
    r.close()  # the client leaves the router; the router must leave the engine
    assert wait_for(lambda: metric(engine, "vllm:num_requests_running") == 0)
    assert "Traceback" not in router.stderr()
    assert 'pod="p0"' in requests.get(router.url + "/metrics", timeout=5).text
    admin(router, "PUT", "/admin/endpoints", json={"endpoints": []})  # p0 gone: its series goes too
    assert 'pod="p0"' not in requests.get(router.url + "/metrics", timeout=5).text


@pytest.mark.parametrize("via", ["engine", "router"])
def test_openai_client(via: str, router: Server, engine: Server) -> None:
    openai = pytest.importorskip("openai")
    _register_b(router, engine)
    base = (engine if via == "engine" else router).url
    client = openai.OpenAI(base_url=base + "/v1", api_key="unused", max_retries=0, timeout=20)
    # echo mode: the pieces of "one two" repeat: "one", " two", " one"
    c = client.completions.create(model="b", prompt="one two", max_tokens=3)
    assert (c.choices[0].text, c.usage.prompt_tokens, c.usage.completion_tokens) == ("one two one", 2, 3)
    chunks = list(client.completions.create(model="b", prompt="one two", max_tokens=3, stream=True))
    assert "".join(ch.choices[0].text for ch in chunks) == "one two one"
    chat = client.chat.completions.create(model="b", messages=[{"role": "user", "content": "hi you"}], max_tokens=2)
    assert chat.choices[0].message.content == "hi you" and chat.usage.total_tokens == 4
    stream = list(client.chat.completions.create(model="b", messages=[{"role": "user", "content": "hi you"}],
                                                 max_tokens=2, stream=True, stream_options={"include_usage": True}))
    assert "".join(ch.choices[0].delta.content for ch in stream if ch.choices) == "hi you"
    assert stream[-1].usage.completion_tokens == 2 and len({ch.id for ch in stream}) == 1
    with pytest.raises(openai.NotFoundError):
        client.completions.create(model="nope", prompt="x", max_tokens=1)
    with pytest.raises(openai.BadRequestError, match="max_tokens"):
        client.completions.create(model="b", prompt="x", max_tokens=-1)
    batch = client.completions.create(model="b", prompt=["one two", "three"], n=2, max_tokens=2)
    assert [ch.text for ch in batch.choices] == ["one two", "one two", "three three", "three three"]
    with pytest.raises(openai.UnprocessableEntityError):  # 3 x 43 = 129 sequences > 128
        client.completions.create(model="b", prompt=["x"] * 3, n=43, max_tokens=1)


def _sse(r: requests.Response) -> list[dict[str, Any]]:
    assert r.status_code == 200, r.text
    return [json.loads(line[6:]) for line in r.text.splitlines() if line.startswith("data: {")]


@pytest.mark.parametrize("via", ["engine", "router"])
def test_batches_and_n_choices_as_vllm(via: str, router: Server, engine: Server) -> None:
    # issue 17 item 11: n was refused and a list of prompts merged; now as vLLM's OpenAI server:
    # choice index = prompt_index x n + sample, usage = each prompt once + every choice's tokens
    _register_b(router, engine)
    url = (engine if via == "engine" else router).url
    body = {"model": "b", "prompt": ["one two", "three"], "n": 2, "max_tokens": 2}
    r = post(url, body, timeout=30)
    assert r.status_code == 200, r.text
    texts = {c["index"]: c["text"] for c in r.json()["choices"]}
    # echo mode, 2 tokens: "one two" -> "one two"; "three" -> "three" + " three" (a repeat starts a new word)
    assert texts == {0: "one two", 1: "one two", 2: "three three", 3: "three three"}
    assert r.json()["usage"] == {"prompt_tokens": 3, "completion_tokens": 8, "total_tokens": 11}  # 2 + 1; 4 x 2
    chunks = _sse(post(url, {**body, "stream": True, "stream_options": {"include_usage": True}}, timeout=30))
    assert len({c["id"] for c in chunks}) == 1
    streamed: dict[int, str] = {}
    for c in chunks[:-1]:
        (choice,) = c["choices"]
        streamed[choice["index"]] = streamed.get(choice["index"], "") + choice["text"]
    assert streamed == texts
    assert sorted(c["choices"][0]["index"] for c in chunks[:-1] if c["choices"][0]["finish_reason"]) == [0, 1, 2, 3]
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["total_tokens"] == 11
    chat = {"model": "b", "messages": [{"role": "user", "content": "hi you"}], "n": 3, "max_tokens": 2}
    r = post(url, chat, path="/v1/chat/completions", timeout=30)
    assert [(c["index"], c["message"]["content"]) for c in r.json()["choices"]] == [(i, "hi you") for i in range(3)]
    assert r.json()["usage"] == {"prompt_tokens": 2, "completion_tokens": 6, "total_tokens": 8}
    chunks = _sse(post(url, {**chat, "stream": True}, path="/v1/chat/completions", timeout=30))
    firsts = [c["choices"][0]["index"] for c in chunks if c["choices"][0]["delta"].get("role") == "assistant"]
    assert sorted(firsts) == [0, 1, 2]  # each choice's first chunk carries the role
    assert wait_for(lambda: metric(engine, "vllm:num_requests_running") == 0)


def test_engine_prefix_caching_hits_on_the_prompt_text(tmp_path: Path) -> None:
    """serve-engine hashes the prompt's 16-token blocks: a second prompt sharing the first 40 words hits
    the 2 full blocks it has in common (32 tokens), counted in vLLM's prefix-cache counters."""
    s = _start(tmp_path, "engine", ["engine", "--model", "m", "--port", "0", "--enable-prefix-caching",
                                    "--time-to-first-token", "1ms", "--inter-token-latency", "1ms"])
    try:
        words = [f"x{i}" for i in range(40)]
        for tail in ("a", "b"):  # 40 shared words + 10 own = 50 tokens each
            r = post(s.url, {"model": "m", "prompt": " ".join(words + [tail] * 10), "max_tokens": 2})
            assert r.status_code == 200, r.text
        assert metric(s, "vllm:prefix_cache_queries_total") == 100  # 2 x 50 prompt tokens looked up
        assert metric(s, "vllm:prefix_cache_hits_total") == 32  # 40 // 16 = 2 full blocks of the second
    finally:
        s.close()


def _one_runs_one_waits_one_held(eng: Server, rtr: Server, send: Callable[[int], None]) -> None:
    """Three requests through a one-slot engine behind flow control (queue_threshold 1), each seen before the next
    is sent: 0 runs, 1 waits in the engine, 2 is held at the gateway; returns when all three have ended."""
    arrived = (lambda: metric(eng, "vllm:num_requests_running") == 1,
               lambda: metric(eng, "vllm:num_requests_waiting") == 1,
               lambda: metric(rtr, "llm_d_epp_flow_control_queue_size") == 1)
    threads = []
    for i in range(3):
        threads.append(threading.Thread(target=send, args=(i,)))
        threads[-1].start()
        assert wait_for(arrived[i], 3.0), i
    for t in threads:
        t.join(20)


def test_router_flow_control_holds_then_evicts_at_the_ttl(tmp_path: Path) -> None:
    """admission flow_control (queue_threshold 1, ttl_s 1): with the one-slot engine busy and one
    request waiting in it, a third is held at the gateway (llm_d_epp_flow_control_queue_size 1) instead
    of rejected, and evicted with 503 after 1 s; a priority header that is no integer is a 400."""
    eng = _start(tmp_path, "fc-engine", ["engine", "--model", "m", "--port", "0", "--max-num-seqs", "1",
                                         "--time-to-first-token", "10ms", "--inter-token-latency", "200ms"])
    (tmp_path / "token").write_text(TOKEN)
    spec = {"admission": {"kind": "flow_control", "queue_threshold": 1, "ttl_s": 1.0}}
    rtr = _start(tmp_path, "fc-router", ["router", "--port", "0", "--model", "m", "--admin-token-file",
                                         str(tmp_path / "token"), "--router-spec", json.dumps(spec)])
    try:
        eps = {"endpoints": [{"pod": "p0", "variant": "v", "model": "m", "url": eng.url, "state": "ready"}]}
        assert admin(rtr, "PUT", "/admin/endpoints", json=eps).status_code == 200
        got: dict[int, int] = {}

        def send(i: int) -> None:  # 20 output tokens x 200 ms = 4 s of decode each
            r = post(rtr.url, {"model": "m", "prompt": "a b", "max_tokens": 20}, timeout=30,
                     headers={"x-gateway-inference-fairness-id": "t1"})
            got[i] = r.status_code

        _one_runs_one_waits_one_held(eng, rtr, send)
        assert got == {0: 200, 1: 200, 2: 503}
        bad = post(rtr.url, {"model": "m", "prompt": "x"}, headers={"x-scalearena-priority": "high"})
        assert_openai_error(bad, 400)
        assert "Traceback" not in rtr.stderr()
    finally:
        rtr.close()
        eng.close()


def test_router_trace_file_records_each_routing_decision_and_what_the_picker_saw(tmp_path: Path) -> None:
    """--trace-file: one JSON line per change of the engines and per routed request. queue_threshold 1, a one-slot
    engine: request 0 runs, 1 waits in the engine (both routed at once, ``direct``), 2 is held at the gateway and
    dispatched (``flow``) only once the picker's snapshot of p0 reads 0 waiting, below the threshold: the line
    shows that snapshot (0 waiting) and the one request sent in its refresh slot (this one)."""
    eng = _start(tmp_path, "tr-engine", ["engine", "--model", "m", "--port", "0", "--max-num-seqs", "1",
                                         "--time-to-first-token", "10ms", "--inter-token-latency", "50ms"])
    (tmp_path / "token").write_text(TOKEN)
    spec = {"admission": {"kind": "flow_control", "queue_threshold": 1}}
    trace = tmp_path / "trace.jsonl"
    rtr = _start(tmp_path, "tr-router", ["router", "--port", "0", "--model", "m", "--admin-token-file",
                                         str(tmp_path / "token"), "--router-spec", json.dumps(spec),
                                         "--trace-file", str(trace)])
    try:
        eps = {"endpoints": [{"pod": "p0", "variant": "v", "model": "m", "url": eng.url, "state": "ready"}]}
        assert admin(rtr, "PUT", "/admin/endpoints", json=eps).status_code == 200
        got: dict[int, int] = {}

        def send(i: int) -> None:  # 6 output tokens: 10 ms + 5 x 50 ms each
            got[i] = post(rtr.url, {"model": "m", "prompt": "a b", "max_tokens": 6}, timeout=30).status_code

        _one_runs_one_waits_one_held(eng, rtr, send)
        assert got == {0: 200, 1: 200, 2: 200}
        lines = [json.loads(x) for x in trace.read_text().splitlines()]
        assert lines[0]["ev"] == "endpoints" and lines[0]["pods"] == {"p0": "ready"}
        routes = [x for x in lines if x["ev"] == "route"]
        assert [(x["via"], x["pod"]) for x in routes] == [("direct", "p0"), ("direct", "p0"), ("flow", "p0")]
        (pod, snap_waiting, sent, *_scrape), = routes[2]["pods"]  # [pod, snapshot waiting, sent, scraped ...]
        assert (pod, snap_waiting, sent) == ("p0", 0.0, 1) and routes[2]["held"] == 0
        assert routes[0]["t"] <= routes[1]["t"] <= routes[2]["t"]
    finally:
        rtr.close()
        eng.close()
    bad = subprocess.run(CLI + ["router", "--port", "0", "--trace-file", str(tmp_path / "none" / "t.jsonl")],
                         capture_output=True, text=True, timeout=30)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert bad.stderr.startswith(f"error: --trace-file {tmp_path / 'none' / 't.jsonl'}: cannot write the trace file")


def test_hostile_json_is_400_on_every_json_endpoint(tmp_path: Path, router: Server, engine: Server) -> None:
    """A body nested 100,000 deep (200 KB, under the size cap) and numbers beyond a float (1e400) were a
    500 with a traceback on each JSON endpoint: the OpenAI ones of both servers, the router's admin PUT,
    and a prefill engine's /kv/read (int(1e400) raised OverflowError there)."""
    deep = b'{"model": "m", "prompt": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    prefill = _start(tmp_path, "prefill", ["engine", "--model", "m", "--port", "0", "--role", "prefill"])
    try:
        for url in (engine.url, router.url):
            assert assert_openai_error(post(url, None, data=deep), 400)["message"] == "the body is nested too deeply"
        assert_openai_error(admin(router, "PUT", "/admin/endpoints", data=deep), 400)
        for body in (deep, b'{"remote_request_id": 1e400}', b'{"remote_request_id": 1, "tokens": 1e400}', b"[1]"):
            assert_openai_error(requests.post(prefill.url + "/kv/read", data=body, timeout=10), 400)
    finally:
        prefill.close()
    assert "Traceback" not in engine.stderr() + router.stderr() + prefill.stderr()


def test_router_endpoints_file_survives_bad_documents(tmp_path: Path) -> None:
    """The --endpoints-file watcher died on the first document whose entry lacked a field (a KeyError in
    its task, nothing logged), and the router then never saw another engine: now a bad document is one
    log line and the next good one is applied."""
    eps = tmp_path / "endpoints.json"
    eps.write_text('{"endpoints": [{"pod": 1}]}')
    s = _start(tmp_path, "watched", ["router", "--port", "0", "--endpoints-file", str(eps)])
    try:
        assert wait_for(lambda: "ignored" in s.stderr())
        eps.write_text("[[[[")  # not JSON: taken for a half-written file, read again at the next change
        for bad in ("[" * 100_000, '{"endpoints": [{"pod": "p", "variant": "v", "model": "m", "url": "u", '
                    '"role": "both-ish"}]}'):
            seen = s.stderr().count("ignored")
            eps.write_text(bad)
            assert wait_for(lambda seen=seen: s.stderr().count("ignored") > seen)  # this document read and refused
        eps.write_text('{"endpoints": [{"pod": "p0", "variant": "v", "model": "m7", "url": "http://127.0.0.1:9"}]}')
        assert wait_for(lambda: requests.get(s.url + "/v1/models", timeout=5).json()["data"] != [])
        assert [m["id"] for m in requests.get(s.url + "/v1/models", timeout=5).json()["data"]] == ["m7"]
    finally:
        s.close()
    assert "Traceback" not in s.stderr()


def test_router_keeps_scraping_when_an_engine_reports_infinity(tmp_path: Path, engine: Server) -> None:
    """An engine whose /metrics says `num_requests_waiting +Inf` made int(inf) raise inside the router's
    refresh loop, which then stopped for every engine: the good engine's running count froze at 0."""
    import http.server

    class InfMetrics(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            body = b'vllm:num_requests_waiting{model_name="m"} +Inf\n'
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    bad = http.server.ThreadingHTTPServer(("127.0.0.1", 0), InfMetrics)
    threading.Thread(target=bad.serve_forever, daemon=True).start()
    (tmp_path / "token").write_text(TOKEN)
    s = _start(tmp_path, "scraper", ["router", "--port", "0", "--admin-token-file", str(tmp_path / "token")])
    try:
        eps = {"endpoints": [{"pod": "inf", "variant": "v", "model": "m", "url": f"http://127.0.0.1:{bad.server_port}"},
                             {"pod": "good", "variant": "v", "model": "m", "url": engine.url}]}
        assert admin(s, "PUT", "/admin/endpoints", json=eps).status_code == 200
        pods = lambda: admin(s, "GET", "/admin/state").json()["pods"]  # noqa: E731
        assert wait_for(lambda: pods()["inf"]["scrape_ok"] is False and pods()["good"]["scrape_ok"] is True)
        # 25 tokens x 200 ms: the engine runs it for ~5 s; a live refresh loop (every 50 ms) sees running = 1
        slow = threading.Thread(target=post, args=(engine.url, {"model": "m", "prompt": "x", "max_tokens": 25}))
        slow.start()
        assert wait_for(lambda: pods()["good"]["running"] == 1, timeout_s=4.0)
        slow.join()
    finally:
        s.close()
        bad.shutdown()
    assert "Traceback" not in s.stderr()


def test_router_leaves_the_harness_probe_out_of_the_request_metrics(router: Server, engine: Server) -> None:
    """kube/honesty.py's readiness request carries x-scalearena-probe: 1; served, but not in the EPP histograms
    or objective counters the workload's autoscalers read (its 1-token NTPOT put llm-d-slo's P90 at 19x the SLO)."""
    from scalearena.workloads.load_handoff import PROBE_HEADER

    def of_b(name: str) -> float:  # model b's series (the router serves a and b)
        text = requests.get(router.url + "/metrics", timeout=5).text
        m = re.search(rf'^{re.escape(name)}{{[^}}]*model_name="b"[^}}]*}} (\S+)$', text, re.M)
        return float(m.group(1)) if m else 0.0

    _register_b(router, engine)
    count, received = "llm_d_epp_request_ttft_seconds_count", "inference_objective_request_total"
    before, arrived = of_b(count), of_b(received)
    r = post(router.url, {"model": "b", "prompt": "a", "max_tokens": 1}, headers={PROBE_HEADER: "1"})
    assert r.status_code == 200
    assert (of_b(count), of_b(received)) == (before, arrived)
    assert post(router.url, {"model": "b", "prompt": "a", "max_tokens": 1}).status_code == 200
    assert wait_for(lambda: (of_b(count), of_b(received)) == (before + 1, arrived + 1))  # an ordinary one counts


def _hostile(url: str, path: str, method: str, token: str | None = None) -> list[tuple[str, int]]:
    """Issue 31 item 8: requests that got HTTP 500 with a traceback: a JSON integer of 5,000 digits, a body
    marked gzip that is not, a non-UTF-8 Authorization header; and Expect: 100-continue, which must still work."""
    auth = {"Authorization": f"Bearer {token}"} if token else {}
    js = {"Content-Type": "application/json", **auth}
    big = b'{"model": "b", "prompt": "x", "max_tokens": ' + b"9" * 5000 + b"}"
    cases = [("5,000-digit integer", {"data": big, "headers": js}),
             ("gzip that is not", {"data": b"not gzip at all", "headers": {"Content-Encoding": "gzip", **js}}),
             ("Expect: 100-continue", {"data": b'{"model": "b", "prompt": "x", "max_tokens": 1}' if not token
                                       else b'{"endpoints": []}', "headers": {"Expect": "100-continue", **js}})]
    out = [(name, requests.request(method, url + path, timeout=10, **kw).status_code) for name, kw in cases]
    r = requests.get(url + "/admin/state", headers={"Authorization": b"Bearer \xff\xfe"}, timeout=10)
    return [*out, ("non-UTF-8 Authorization", r.status_code)]


def test_hostile_bodies_and_headers_get_a_client_error_never_a_500(engine: Server, router: Server) -> None:
    # engine: 400, 400, 200 (1 token), 404 (no admin API); router: 400, 400, 200 (no endpoints), 401
    assert [s for _, s in _hostile(engine.url, "/v1/completions", "POST")] == [400, 400, 200, 404]
    assert [s for _, s in _hostile(router.url, "/admin/endpoints", "PUT", TOKEN)] == [400, 400, 200, 401]
    for server in (engine, router):
        assert "Traceback" not in server.stderr(), server.stderr()[-2000:]


def test_a_silent_connection_is_closed_and_a_flood_over_the_cap_is_refused(tmp_path: Path) -> None:
    """A connection that never sends a byte was held for ever (the head deadline started at the first byte);
    now it closes one header timeout after the accept. Past --max-connections a new connection gets one
    503 and is closed, and the engine keeps serving once the flood is gone."""
    eng = _start(tmp_path, "capped", ["engine", "--model", "m", "--port", "0", "--header-timeout", "1s",
                                      "--max-connections", "8", "--time-to-first-token", "1ms",
                                      "--inter-token-latency", "1ms"])
    port = int(eng.url.rsplit(":", 1)[1])
    try:
        silent = socket.create_connection(("127.0.0.1", port), timeout=5)
        r, _, _ = select.select([silent], [], [], 6.0)  # header timeout 1 s
        assert r and silent.recv(100) == b"", "a silent connection was still open 6 s after the accept"
        silent.close()
        flood = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(8)]  # the cap: 8 open
        extra = socket.create_connection(("127.0.0.1", port), timeout=5)
        reply = extra.recv(4096)
        assert reply.startswith(b"HTTP/1.1 503") and b"too many open connections" in reply, reply
        extra.close()
        for s in flood:
            s.close()
        assert wait_for(lambda: post(eng.url, {"model": "m", "prompt": "x", "max_tokens": 2}).status_code == 200)
    finally:
        eng.close()
    assert "Traceback" not in eng.stderr()



def test_router_metrics_shrink_when_registered_models_are_withdrawn(tmp_path: Path) -> None:
    """Models registered through the admin API and withdrawn again left their series for ever (10,000 made
    /metrics 110 MB); now a withdrawn model's series go and it is 404. A document of 257 models or 4,097
    endpoints is refused (400) before it changes anything."""
    (tmp_path / "token").write_text(TOKEN + "\n")
    rtr = _start(tmp_path, "router", ["router", "--port", "0", "--model", "a", "--admin-token-file",
                                      str(tmp_path / "token")])
    try:
        def size() -> int:
            return len(requests.get(rtr.url + "/metrics", timeout=5).content)

        base = size()
        for k in range(3):  # 3 documents of 100 models each, every one replacing the last
            eps = [{"pod": f"p{k}-{i}", "variant": "v", "model": f"m{k}-{i}", "url": "http://127.0.0.1:9",
                    "state": "pending"} for i in range(100)]
            assert admin(rtr, "PUT", "/admin/endpoints", json={"endpoints": eps}).status_code == 200
            assert size() > base  # 100 models' series while they are registered
            assert f'"m{k}-0"' in requests.get(rtr.url + "/v1/models", timeout=5).text
        assert admin(rtr, "PUT", "/admin/endpoints", json={"endpoints": []}).status_code == 200
        assert size() == base  # every withdrawn model's series gone: back to the --model a page, byte for byte
        assert post(rtr.url, {"model": "m2-0", "prompt": "x", "max_tokens": 1}).status_code == 404
        base = size()  # the 404 is counted under the one `__other__` model label
        many = [{"pod": f"q{i}", "variant": "v", "model": f"n{i}", "url": "http://127.0.0.1:9"} for i in range(257)]
        assert_openai_error(admin(rtr, "PUT", "/admin/endpoints", json={"endpoints": many}), 400)
        flood = [{"pod": f"q{i}", "variant": "v", "model": "a", "url": "http://127.0.0.1:9"} for i in range(4097)]
        assert_openai_error(admin(rtr, "PUT", "/admin/endpoints", json={"endpoints": flood}), 400)
        assert size() == base  # refused documents changed nothing
    finally:
        rtr.close()
    assert "Traceback" not in rtr.stderr()


def test_the_connection_cap_stays_under_the_descriptor_limit() -> None:
    """An engine limited to 1,024 descriptors accepts at most 1,024 - 64 = 960 connections (FD_RESERVE kept
    for its own files and client sessions), whatever --max-connections says."""
    import resource

    from scalearena.harness.local.http_guard import ConnectionLimits, connection_cap

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, hard))
    try:
        assert connection_cap(ConnectionLimits(max_connections=4096)).max_connections == 960
        assert connection_cap(ConnectionLimits(max_connections=100)).max_connections == 100
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
