"""``--backend-option engine=llm-d-inference-sim``: the real llm-d-inference-sim as the engine of a local pod.

By default every local pod runs scalearena's serve-engine, which wraps the simulator's own serving model, so
local and sim agree on latency by construction. With this option each pod runs the llm-d-inference-sim v0.10.2
binary that ``make kwok-tools`` builds from source (kube/tools.py), an independent implementation of the same
constant-latency semantics (benchmarks/engine_fidelity.py compares the two; docs/backends.md has the table).

What it reuses, so it runs what CLUSTER=kwok runs:

* the flags: the variant's container as the Kubernetes path renders it (kube/scenario.py ``variant_objects`` on
  the kind overlay, which calls ``engine_args(..., vllm=False)``; its env POD_NAME / POD_NAMESPACE / POD_IP
  resolved as the kubelet does), then the pod launcher's ``plan_container``; at a time scale other than 1 its
  latency flags are divided by the scale;
* the network: the sim can only listen on ``:<port>``, every IPv4 address of its namespace (it cannot bind
  127.0.0.1 alone). As the pod launcher does (kube/launcher.py, kube/relay.py), where this process is root each
  sim runs in a network namespace of its own and a relay forwards 127.0.0.1:<the pod's slot port> into it, so
  nothing listens beyond loopback; without root (``netns_supported`` false) the sim runs in the host's
  namespace with ``--port`` set to the slot port, and then also listens on that port on every interface;
* the whole-millisecond rule: v0.10.2 sleeps whole milliseconds (``RandomNormDuration``), so a latency that is
  fractional after the division is refused (kube/timescale.py ``sim_latencies``), and so is one already
  fractional in the scenario (the Kubernetes path runs that truncated at time scale 1).

Refused (UserError, exit 2, before anything starts): a binary not built (``make kwok-tools``), a variant whose
``latency.kind`` is not ``constant`` (the sim has no roofline model; the Kubernetes path swaps serve-engine in
for those, which here would be the default engine anyway), and prefill/decode roles (the Kubernetes path renders
no P/D flags for the sim).

Cold start: the sim's readiness is held, not emulated inside it. The pod stays pending until its readiness path
(the rendered probe's, ``/health``) answers 200 and ``startup_s / time_scale`` (the drawn cold start times any
slow_cold_start factor) has passed since the spawn, the rule serve-engine applies to itself (process boot
counts toward the cold start). v0.10.2 has a ``--startup-duration`` flag of its own, left unused so the flags
stay the Kubernetes path's (there the probe's initialDelaySeconds holds the pod).

Termination: SIGTERM makes the sim refuse new requests and wait for those in flight (its own fixed 30 s bound);
the termination grace period is the PodSet's SIGKILL backstop, as for serve-engine.

Metrics: the sim labels its series with ``model_name`` only; serve-engine adds ``pod`` itself, and the local
Prometheus scrapes fixed port slots with ``honor_labels`` (pods.PodSet), so without a pod label the reader's
``by (pod)`` queries would drop every sample. ``MetricsRelay`` (a thread of the harness) serves each slot's page
as ``/slot/<port>/metrics``, fetched from the sim on that port with ``pod="<name>"`` added to every sample; the
router scrapes and calls the sim directly. Not exported by the sim, so absent here: ``gpu_utilization`` and a
``model_name`` label on ``vllm:cache_config_info`` (the reader's KV block count is then unknown).
"""
from __future__ import annotations

import re
import sys
import threading
import urllib.request
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from scalearena.contracts.errors import UserError
from scalearena.contracts.series import NAMESPACE
from scalearena.harness.local.supervisor import LOOPBACK

SIM = "llm-d-inference-sim"
ENGINES = ("serve-engine", SIM)
WHERE = "--backend-option engine"
Obj = dict[str, Any]


def sim_binary() -> Path:
    """The llm-d-inference-sim binary ``make kwok-tools`` builds; a one-line UserError when it is not there."""
    from scalearena.harness.kube import tools

    path = tools.binary(SIM)
    if not path.is_file():
        raise UserError(f"engine={SIM} needs {path}, which is not built", where=WHERE,
                        expected="`make kwok-tools` (builds it from source with Go), or engine=serve-engine")
    return path


def refuse_unsupported(sc: Any) -> None:
    """Variants the sim cannot run: roofline latency, prefill/decode roles."""
    for i, v in enumerate(sc.cluster.variants):
        kind = v.engine.latency.kind
        if kind != "constant":
            raise UserError(f"variant {v.name}: latency.kind {kind} cannot run on {SIM} (constant latencies only)",
                            where=f"cluster.variants[{i}].engine.latency",
                            expected="latency.kind: constant for every variant, or engine=serve-engine")
        if v.role != "both":
            raise UserError(f"variant {v.name}: role {v.role!r}: no P/D flags are rendered for {SIM}",
                            where=f"cluster.variants[{i}].role", expected="role: both, or engine=serve-engine")


def sim_containers(sc: Any) -> dict[str, Obj]:
    """Each variant's engine container as the Kubernetes path renders it (the kind overlay, kube/scenario.py)."""
    from scalearena.harness.kube.render import render
    from scalearena.harness.kube.scenario import variant_objects
    from scalearena.harness.kube.tools import ROOT

    objs = variant_objects(sc, render(ROOT / "manifests" / "overlays" / "kind"))
    return {o["metadata"]["name"]: o["spec"]["template"]["spec"]["containers"][0] for o in objs
            if o["kind"] == "Deployment"
            and o["metadata"].get("labels", {}).get("scalearena.io/component") == "variant"}


def refuse_fractional_ms(c: Obj, variant: str, time_scale: float) -> None:
    """The whole-millisecond rule (module docstring) after the time scale; the scenario's own latencies were
    checked when the container was rendered (kube/scenario.py ``engine_args``)."""
    from scalearena.harness.kube.timescale import TimeScale

    TimeScale(time_scale).sim_latencies(c, f"variant {variant} ({SIM})")


class SimEngine:
    """How a local pod runs llm-d-inference-sim: checks at construction (UserError), argv per pod."""

    def __init__(self, sc: Any, time_scale: float, binary: Path | None = None, network: str = "auto") -> None:
        from scalearena.harness.kube.relay import netns_supported

        refuse_unsupported(sc)
        self.binary = binary or sim_binary()
        self.time_scale = float(time_scale)
        self.containers = sim_containers(sc)
        for name, c in self.containers.items():
            refuse_fractional_ms(c, name, self.time_scale)
        self.netns = network == "netns" or (network == "auto" and netns_supported())
        self._relay: Any = None  # kube/relay.Relay, made at the first pod (a thread; Backend.preflight makes none)
        self._forwards: dict[str, dict[int, int]] = {}

    def ready_path(self, variant: str) -> str:
        """The path the rendered readinessProbe asks (``/health``)."""
        probe = self.containers[variant].get("readinessProbe") or {}
        return str((probe.get("httpGet") or {}).get("path") or "/health")

    def command(self, variant: str, pod: str, port: int) -> tuple[list[str], dict[str, str]]:
        """(argv, env) of pod ``pod`` of ``variant`` listening on ``port``: the pod launcher's plan."""
        from scalearena.harness.kube.launcher import container_env, plan_container, sim_program

        pod_obj = {"metadata": {"name": pod, "namespace": NAMESPACE}, "status": {"podIP": LOOPBACK}}
        c = self.containers[variant]
        env = container_env(pod_obj, c, lambda ns, name: None)
        plan = plan_container(pod_obj, c, sim_program(lambda: str(self.binary)), env,
                              network="netns" if self.netns else "port", time_scale=self.time_scale, port=lambda: port)
        if not self.netns:  # the host's namespace: it listens on `port` on every interface (module docstring)
            return plan.argv, plan.env
        from scalearena.harness.kube.relay import NETNS_EXEC

        # its own network namespace, its port unchanged inside; `started` relays 127.0.0.1:port into it
        self._forwards[pod] = {port: next(iter(plan.forwards.values()))}
        return [sys.executable, "-I", "-c", NETNS_EXEC, *plan.argv], plan.env

    def started(self, pod: str, pid: int) -> None:
        """The pod's process is running: in netns mode, relay 127.0.0.1:<its slot port> into its namespace."""
        forwards = self._forwards.pop(pod, None)
        if forwards is None:
            return
        if self._relay is None:
            from scalearena.harness.kube.relay import Relay

            self._relay = Relay()
        self._relay.add(pod, LOOPBACK, forwards, pid)

    def gone(self, pod: str) -> None:
        if self._relay is not None:
            self._relay.remove(pod)

    def close(self) -> None:
        if self._relay is not None:
            self._relay.close()
            self._relay = None


# -- the pod label -----------------------------------------------------------------------------------------------------
def add_pod_label(text: bytes, pod: str) -> bytes:
    """A text-format /metrics page with ``pod="<pod>"`` added to every sample (comments unchanged)."""
    label = b'pod="' + pod.replace("\\", "\\\\").replace('"', '\\"').encode() + b'"'
    out = []
    for line in text.split(b"\n"):
        if line and not line.startswith(b"#"):
            brace, space = line.find(b"{"), line.find(b" ")
            if 0 <= brace < space:
                sep = b"" if line[brace + 1:brace + 2] == b"}" else b","
                line = line[:brace + 1] + label + sep + line[brace + 1:]
            elif space > 0:
                line = line[:space] + b"{" + label + b"}" + line[space:]
        out.append(line)
    return b"\n".join(out)


_SLOT = re.compile(r"^/slot/(\d+)/metrics$")


class MetricsRelay:
    """Prometheus' target for llm-d-inference-sim slots: ``GET /slot/<port>/metrics`` is the page of the pod on
    that port (``owner(port)`` names it; 503 when none does or it does not answer) with its pod label."""

    def __init__(self, owner: Callable[[int], str | None], timeout_s: float = 2.0) -> None:
        self.owner, self.timeout_s = owner, timeout_s
        self._server: ThreadingHTTPServer | None = None

    @staticmethod
    def path(port: int) -> str:
        return f"/slot/{port}/metrics"

    def start(self) -> str:
        relay = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
                status, body = relay.page(self.path)
                self.send_response(status)
                self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer((LOOPBACK, 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, name="sim-metrics-relay", daemon=True).start()
        return self.address

    @property
    def address(self) -> str:
        assert self._server is not None, "start() first"
        return f"{LOOPBACK}:{self._server.server_address[1]}"

    def page(self, path: str) -> tuple[int, bytes]:
        m = _SLOT.match(path)
        pod = self.owner(int(m.group(1))) if m else None
        if m is None or pod is None:
            return 503, b"no pod on this slot\n"
        try:
            with urllib.request.urlopen(f"http://{LOOPBACK}:{m.group(1)}/metrics", timeout=self.timeout_s) as r:
                return 200, add_pod_label(r.read(), pod)
        except OSError as e:  # not listening yet, gone, or too slow: the scrape fails, as a direct one would
            return 503, f"{pod}: {e}\n".encode()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
