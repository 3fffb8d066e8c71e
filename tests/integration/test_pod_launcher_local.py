"""The pod launcher of CLUSTER=kwok over real sockets on 127.0.0.0/8 (harness/kube/launcher.py).

The unit tests (tests/unit/harness/kube/test_pod_launcher.py) drive the launcher without a socket; here the probes, the
relay from a pod IP to the process, serve-engine bound to its pod IP and, where this process may make
network namespaces (root), a program that can only listen on every address, two pods of it on port 8000.
The API server is the unit tests' fake. Waits are bounded polls; no assertion is on elapsed time.
"""
from __future__ import annotations

import http.client
import http.server
import os
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from scalearena.harness.kube import launcher as L
from scalearena.harness.local.supervisor import free_port
from tests.unit.harness.kube.test_pod_launcher import (
    FakeAPI,
    add,
    condition,
    last_status,
    launcher,
    make_pod,
    python_container,
    variant_pod,
    wait_for,
)

pytestmark = pytest.mark.local


class _Handler(http.server.BaseHTTPRequestHandler):
    payload = b"x" * (4 << 20)

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        body = {"/ok": b"ok", "/big": self.payload}.get(self.path)
        self.send_response(200 if body is not None else 503)
        self.send_header("Content-Length", str(len(body or b"")))
        self.end_headers()
        self.wfile.write(body or b"")

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture()
def http_server() -> Iterator[int]:
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield srv.server_address[1]
    srv.shutdown()
    srv.server_close()


def test_run_probe_http_statuses_and_refused(http_server: int) -> None:
    assert L.run_probe(L.ProbeSpec("http", "127.0.0.1", http_server, path="/ok"))
    assert not L.run_probe(L.ProbeSpec("http", "127.0.0.1", http_server, path="/starting"))  # 503
    assert L.run_probe(L.ProbeSpec("tcp", "127.0.0.1", http_server))
    assert not L.run_probe(L.ProbeSpec("http", "127.0.0.1", free_port(), path="/ok"))


def test_relay_carries_a_large_body_and_stops_on_remove(http_server: int) -> None:
    relay = L.Relay()
    port = free_port()
    try:
        relay.add("k", "127.0.0.1", {port: http_server})
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", "/big")
        resp = conn.getresponse()
        assert resp.status == 200 and resp.read() == _Handler.payload
        conn.close()
        relay.remove("k")
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", port), timeout=2).close()
    finally:
        relay.close()



def test_serve_engine_goes_ready_on_its_pod_ip(tmp_path: Path) -> None:
    """The rendered roofline pod, run for real: the engine binds the pod IP, the real probe passes."""
    obj = variant_pod("hetero-roofline.yaml", name="va-real")
    obj["status"]["podIP"] = ip = "127.61.0.3"
    c = obj["spec"]["containers"][0]
    c["args"] = [a if not a.startswith("--startup-duration=") else "--startup-duration=0s" for a in c["args"]]
    c["readinessProbe"]["periodSeconds"] = 1
    pl, api = launcher(tmp_path, programs=L.default_programs(sim_binary=lambda: "unused"))
    add(pl, obj)
    wait_for(lambda: (pl.step(), bool(api.patches) and condition(last_status(api), "Ready") == "True")[1], 60)
    conn = http.client.HTTPConnection(ip, 8000, timeout=5)
    conn.request("GET", "/health/ready")
    assert conn.getresponse().status == 200
    conn.close()
    pl.stop()
    pl.check()


@pytest.mark.skipif(not L.netns_supported(), reason="needs CAP_SYS_ADMIN (root) for a network namespace per pod")
def test_all_interfaces_program_in_its_own_network_namespace(tmp_path: Path) -> None:
    """A program that can only listen on every address (as llm-d-inference-sim): two pods on port 8000."""
    server = ("import sys, http.server\n"
              "port = int(next(a.split('=')[1] for a in sys.argv if a.startswith('--port=')))\n"
              "class H(http.server.BaseHTTPRequestHandler):\n"
              "    def do_GET(self):\n"
              "        self.send_response(200); self.end_headers(); self.wfile.write(str(port).encode())\n"
              "http.server.HTTPServer(('0.0.0.0', port), H).serve_forever()\n")
    program = L.Program((), (), lambda name: sys.executable if name == "python" else None, port_flag="--port",
                        default_port=8000)
    api = FakeAPI()
    pl = L.PodLauncher(None, "ns", tmp_path / "logs", api=api, network="netns", programs={"test/proc": program})
    probe = {"httpGet": {"path": "/", "port": 8000}, "periodSeconds": 1}
    for name, ip in (("a", "127.62.0.1"), ("b", "127.62.0.2")):
        add(pl, make_pod(name, [python_container(server, args=["--port=8000"], readinessProbe=probe,
                                                 ports=[{"containerPort": 8000}])], ip=ip))

    def both_ready() -> bool:
        pl.step()
        return {n for n, b in api.patches if condition(b["status"], "Ready") == "True"} == {"a", "b"}

    wait_for(both_ready, 60)
    assert pl.failures == []
    for pod in pl.pods.values():
        (ct,) = pod.containers
        assert ct.child is not None and ct.plan.argv[-1] == "--port=8000"  # args unchanged
        assert os.stat(f"/proc/{ct.child.pid}/ns/net").st_ino != os.stat("/proc/self/ns/net").st_ino
        conn = http.client.HTTPConnection(pod.obj["status"]["podIP"], 8000, timeout=5)
        conn.request("GET", "/")
        assert conn.getresponse().read() == b"8000"
        conn.close()
    pl.stop()


