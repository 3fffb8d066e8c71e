"""Issue 17's HTTP attacks replayed against serve-engine + serve-router on 127.0.0.1.

Prints, per attack, what the servers answered (status counts, /metrics size,
whether the engine's slots came back, tracebacks in the logs), the figures of
docs/reliability.md. Not a test (tests/integration/test_server_probes.py holds
the assertions); run:

    .venv/bin/python benchmarks/server_probes.py
"""
from __future__ import annotations

import collections
import re
import select
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import requests

CLI = [sys.executable, "-m", "scalearena.harness.local.cli"]


def start(argv: list[str], log: Path) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(CLI + argv, stdout=subprocess.PIPE, stderr=open(log, "wb"), text=True)  # noqa: SIM115
    select.select([proc.stdout], [], [], 60.0)
    m = re.search(r"listening on (\S+)", proc.stdout.readline())  # type: ignore[union-attr]
    if not m:
        raise SystemExit(f"no URL printed; see {log}")
    return proc, m.group(1)


def running(engine: str) -> float:
    m = re.search(r"^vllm:num_requests_running\{[^}]*\} (\S+)$", requests.get(engine + "/metrics").text, re.M)
    return float(m.group(1)) if m else -1.0


def statuses(n: int, url: str, body: dict) -> dict[int, int]:
    return dict(collections.Counter(requests.post(url + "/v1/completions", json=body, timeout=30).status_code
                                    for _ in range(n)))


def give_up(url: str, n: int, timeout_s: float) -> None:
    def one() -> None:
        try:
            requests.post(url + "/v1/completions", json={"model": "m", "prompt": "x", "max_tokens": 10000},
                          timeout=timeout_s)
        except requests.ReadTimeout:
            pass
    threads = [threading.Thread(target=one) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def slowloris(url: str, header_timeout_s: float) -> bool:
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port))) as s:
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n")
        r, _, _ = select.select([s], [], [], header_timeout_s + 5.0)
        return bool(r) and s.recv(10) == b""


def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="server-probes-"))
    token = "t" * 32
    (tmp / "token").write_text(token)
    eng, e_url = start(["engine", "--model", "m", "--port", "0", "--max-num-seqs", "8",
                        "--inter-token-latency", "20ms", "--header-timeout", "2s"], tmp / "engine.log")
    rtr, r_url = start(["router", "--port", "0", "--model", "m", "--admin-token-file", str(tmp / "token"),
                        "--header-timeout", "2s"], tmp / "router.log")
    try:
        auth = {"Authorization": f"Bearer {token}"}
        eps = {"endpoints": [{"pod": "p", "variant": "v", "model": "m", "url": e_url}]}
        print("PUT /admin/endpoints without token:", requests.put(r_url + "/admin/endpoints", json=eps).status_code)
        requests.put(r_url + "/admin/endpoints", json=eps, headers=auth)
        time.sleep(1.0)
        before = len(requests.get(r_url + "/metrics").content)
        junk = dict(collections.Counter(requests.post(r_url + "/v1/completions", json={"model": f"junk{i}",
                                        "prompt": "x"}).status_code for i in range(300)))
        after = len(requests.get(r_url + "/metrics").content)
        print(f"300 unknown model names: {junk}; router /metrics {before} -> {after} bytes")
        print("8 x max_tokens 1e9:", statuses(8, r_url, {"model": "m", "prompt": "x", "max_tokens": 10**9}))
        give_up(r_url, 8, 2.0)
        deadline = time.monotonic() + 10.0
        while running(e_url) > 0 and time.monotonic() < deadline:
            time.sleep(0.1)
        print("8 clients give up after 2 s (10 000-token requests): engine running afterwards =", running(e_url))
        print("then 1000 requests:", statuses(1000, r_url, {"model": "m", "prompt": "x", "max_tokens": 1}))
        bad = [{"model": "m", "prompt": "x", "max_tokens": v} for v in (-1, 0, "abc", True)]
        bad += [{"prompt": "x"}, {"model": "m", "prompt": "x", "max_tokens": 1, "n": 0}]
        conflict = [{"model": "m", "prompt": ["a", "b"], "max_tokens": 1, "n": 65},  # 130 sequences > 128
                    {"model": "m", "prompt": ["a", "b"], "max_tokens": 1, "scalearena_prompt_tokens": 4}]
        codes = [requests.post(u + "/v1/completions", json=b).status_code
                 for u in (e_url, r_url) for b in bad + conflict]
        print(f"{len(bad)} invalid + {len(conflict)} conflicting bodies x 2 servers:", dict(collections.Counter(codes)))
        served = [len(requests.post(u + "/v1/completions", json=b).json()["choices"]) for u in (e_url, r_url)
                  for b in ({"model": "m", "prompt": "x", "max_tokens": 1, "n": 2},
                            {"model": "m", "prompt": ["a", "b"], "max_tokens": 1})]
        print("choices for n: 2 / two prompts (engine, router):", served)
        print("slowloris closed (engine, router):", slowloris(e_url, 2.0), slowloris(r_url, 2.0))
    finally:
        for p in (rtr, eng):
            p.terminate()
            p.wait(10)
    logs = [(tmp / n).read_text() for n in ("engine.log", "router.log")]
    print("tracebacks in the logs:", sum(t.count("Traceback") for t in logs),
          "| disconnect lines:", sum(t.count("client disconnected") for t in logs))


if __name__ == "__main__":
    main()
