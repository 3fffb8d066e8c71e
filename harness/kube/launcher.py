# size: the kubelet's part for a pod in one place: environment, programs, readiness probes, process lifecycle, the pod watch and its status writes share one pod model
"""CLUSTER=kwok: the kubelet's part for the engine containers (the pod launcher).

KWOK plays the kubelet for every pod on its fake nodes, but it runs nothing. For the engine pods (label
``scalearena.io/component=variant``) the launcher runs the container for real, so a rendered manifest is
executed, not only applied: an unknown flag is a crash. Division of labour (manifests/kwok/stages.yaml):

* the scheduler binds the pod; KWOK's ``scalearena-engine-running`` Stage gives it a pod IP from its node's
  podCIDR (127.i.0.0/16, kube/kwok.py), phase Running, containers running but not ready;
* the launcher (list + watch of the namespace's engine pods, re-list on 410 Gone) then starts each
  container's command and args, with ``$(VAR)`` expanded from the container's env as the kubelet does
  (``expand``), on this host: the image ``ghcr.io/llm-d/llm-d-inference-sim:<tag>`` runs the simulator
  binary built from source (kube/tools.py), ``scalearena/serve-engine:<tag>`` runs its command with
  ``python`` replaced by this interpreter;
* it probes the container's readinessProbe as the kubelet's prober worker does (``Readiness``:
  initialDelaySeconds, periodSeconds, success/failure thresholds, on the probe's tick) and writes
  Ready / ContainersReady and ``containerStatuses[].ready`` to the pod status; it keeps probing, so a
  probe that fails later takes the pod out of Ready again;
* a pod given a deletionTimestamp: SIGTERM, wait up to its deletionGracePeriodSeconds, SIGKILL, then
  delete the pod with grace 0 (UID precondition), as the kubelet's status manager does;
* a container that exits while nobody stopped it is recorded (pod, container, exit code, command, log
  tail), its status set to terminated, and ``check()`` fails the run. There is no restart: a crash in
  a benchmark is a finding, not something to back off and retry.

Listen address. A pod has a network namespace of its own; here every pod shares the host's, and gets an
IP of its own in 127.0.0.0/8 (all of it is local on Linux, so anything can bind any 127.x.y.z).

* ``scalearena serve-engine`` takes ``--host``: the ``0.0.0.0`` the manifest gives it (all of the pod's
  addresses) becomes the pod IP, and it binds exactly podIP:8000.
* llm-d-inference-sim v0.10.2 has no address flag: it listens on ``net.Listen("tcp4", ":<port>")``, every
  IPv4 address of its network namespace (pkg/communication/http.go, newListener). Two pods on port 8000
  cannot share one namespace. So each sim runs in a network namespace of its own (``network="netns"``:
  the process unshares CLONE_NEWNET and brings its loopback up before it execs, so it sees what it sees
  in a pod, port 8000 free, its args unchanged), and the launcher forwards podIP:<containerPort> into it
  (a TCP relay whose upstream sockets are created inside the pod's namespace with setns(2)). That needs
  CAP_SYS_ADMIN (root). Without it (``network="port"``) the sim stays in the host's namespace with
  ``--port`` rewritten to a free port, and the relay forwards podIP:<containerPort> to
  127.0.0.1:<that port>; the sim then also listens on that port on every interface of the host, and
  reports it in its ``x-inference-port`` header. ``network="auto"`` (default) takes netns where it works.
  Either way the relay is one extra loopback hop (sub-millisecond) between the caller and the simulator.

Time scale (kube/timescale.py): probe delays and periods and the grace period are divided by ``time_scale``;
serve-engine gets ``--time-scale`` (its cold start, latencies and drain scale with it); llm-d-inference-sim's
latency flags (``SIM_DURATION_FLAGS``) are divided by it. The sim's cold start is its readiness probe's
initialDelaySeconds (kube/scenario.py), so it scales with the probe.

Logs: one file per container, ``<namespace>_<pod>_<container>.log`` under ``logs`` (the container's stdout
and stderr). Children are started in their own process group and registered with a Supervisor
(local/supervisor.py): ``stop()`` SIGTERMs them all, SIGKILLs what outlives the bound, and so does the
interpreter's exit.
"""
from __future__ import annotations

import http.client
import importlib
import json
import math
import os
import queue
import re
import shlex
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

from scalearena.contracts.errors import RunFailed
from scalearena.harness.kube.relay import NETNS_EXEC, Relay, netns_supported
from scalearena.harness.kube.scenario import ENGINE_IMAGE
from scalearena.harness.local.supervisor import Child, Supervisor, free_port

Obj = dict[str, Any]
VARIANT_SELECTOR = "scalearena.io/component=variant"  # = harness/kube/wva/endpoints.py; the Stage selects the same
SIM_REPOSITORY = "ghcr.io/llm-d/llm-d-inference-sim"
ENGINE_REPOSITORY = ENGINE_IMAGE.rsplit(":", 1)[0]
TAIL_LINES = 20
ERRORS_TO_FAIL = 20  # consecutive passes whose API calls for one pod failed (about a second): the run fails


# -- $(VAR) expansion, as the kubelet does it ---------------------------------------------------------------------
def expand(text: str, env: Mapping[str, str]) -> str:
    """Kubernetes' ``$(VAR)`` expansion (k8s.io/kubernetes third_party/forked/golang/expansion, Expand).

    ``$(NAME)`` is the variable's value, or left as written when NAME is not defined; ``$$`` is one ``$``
    (so ``$$(NAME)`` is the literal ``$(NAME)``); any other ``$`` stays as it is, and so does an unclosed
    ``$(``.
    """
    out: list[str] = []
    checkpoint, cursor, n = 0, 0, len(text)
    while cursor < n:
        if text[cursor] == "$" and cursor + 1 < n:
            out.append(text[checkpoint:cursor])
            nxt = text[cursor + 1]
            advance = 1
            if nxt == "$":
                out.append("$")
            elif nxt == "(":
                close = text.find(")", cursor + 2)
                if close < 0:
                    out.append("$(")
                else:
                    name = text[cursor + 2:close]
                    out.append(env[name] if name in env else f"$({name})")
                    advance = close - cursor
            else:
                out.append("$" + nxt)
            cursor += advance
            checkpoint = cursor + 1
        cursor += 1
    return "".join(out) + text[checkpoint:]


_FIELD = re.compile(r"^metadata\.(labels|annotations)\['(.+)'\]$")


def field_value(pod: Obj, path: str) -> str:
    """A downward-API fieldRef of the pod, as the kubelet resolves it (pkg/kubelet podFieldSelectorRuntimeValue)."""
    md, spec, status = pod.get("metadata", {}), pod.get("spec", {}), pod.get("status", {})
    simple = {
        "metadata.name": md.get("name", ""), "metadata.namespace": md.get("namespace", ""),
        "metadata.uid": md.get("uid", ""), "spec.nodeName": spec.get("nodeName", ""),
        "spec.serviceAccountName": spec.get("serviceAccountName", ""), "status.hostIP": status.get("hostIP", ""),
        "status.podIP": status.get("podIP", ""),
        "status.podIPs": ",".join(p.get("ip", "") for p in status.get("podIPs") or []) or status.get("podIP", ""),
        "status.hostIPs": ",".join(p.get("ip", "") for p in status.get("hostIPs") or []) or status.get("hostIP", ""),
    }
    if path in simple:
        return str(simple[path])
    m = _FIELD.match(path)
    if m:
        return str((md.get(m.group(1)) or {}).get(m.group(2), ""))
    raise LaunchError(f"fieldRef {path!r} is not supported by the pod launcher")


class LaunchError(Exception):
    """The pod asks for something the launcher cannot run (unknown image, unsupported env source, ...)."""


def container_env(pod: Obj, container: Obj, config_map: Callable[[str, str], Mapping[str, str] | None]) -> dict[str, str]:
    """The container's environment as the kubelet builds it (pkg/kubelet/kubelet_pods.go makeEnvironmentVariables):
    envFrom first, then env in order, each literal value ``$(VAR)``-expanded against what came before.
    ``config_map(namespace, name)`` gives a ConfigMap's data, None when it does not exist. Service links
    (FOO_SERVICE_HOST) are not injected: no service has an address here."""
    ns = pod.get("metadata", {}).get("namespace", "")
    env: dict[str, str] = {}
    for src in container.get("envFrom") or []:
        ref = src.get("configMapRef")
        if ref is None:
            raise LaunchError(f"envFrom {sorted(src)} is not supported by the pod launcher (configMapRef only)")
        data = config_map(ns, ref["name"])
        if data is None:
            if ref.get("optional"):
                continue
            raise LaunchError(f"configmap {ns}/{ref['name']} not found (envFrom)")
        prefix = src.get("prefix", "")
        env.update({prefix + k: str(v) for k, v in data.items()})
    for var in container.get("env") or []:
        name = var["name"]
        if "valueFrom" not in var:
            env[name] = expand(str(var.get("value", "")), env)
            continue
        vf = var["valueFrom"]
        if "fieldRef" in vf:
            env[name] = field_value(pod, vf["fieldRef"]["fieldPath"])
        elif "configMapKeyRef" in vf:
            ref = vf["configMapKeyRef"]
            data = config_map(ns, ref["name"])
            if data is None or ref["key"] not in data:
                if ref.get("optional"):
                    continue
                raise LaunchError(f"env {name}: configmap {ns}/{ref['name']} has no key {ref['key']!r}")
            env[name] = str(data[ref["key"]])
        else:
            raise LaunchError(f"env {name}: valueFrom {sorted(vf)} is not supported by the pod launcher")
    return env


# -- images -> programs on this host ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Program:
    """How one image's container runs on this host.

    ``entrypoint`` / ``cmd``: the image's ENTRYPOINT and CMD (the kubelet's rule: ``command`` replaces the
    entrypoint, ``args`` replace the cmd, and a ``command`` without ``args`` drops the cmd).
    ``executable(name)``: the host path for the argv[0] the container names, or None when this image
    has no such program. ``host_flag``: the flag that names the listen address (``0.0.0.0`` there, or no
    such flag, becomes the pod IP). ``port_flag``: for a program that listens on every address of its
    network namespace, the flag of its port (module docstring). Neither: argv is run as it is.
    """

    entrypoint: tuple[str, ...]
    cmd: tuple[str, ...]
    executable: Callable[[str], str | None]
    host_flag: str | None = None
    port_flag: str | None = None
    default_port: int | None = None  # the port it listens on without port_flag
    time_scale_flag: str | None = None
    duration_flags: tuple[str, ...] = ()  # durations the program takes as flags: divided by the time scale


SIM_DURATION_FLAGS = (  # llm-d-inference-sim v0.10.2 latency flags (pkg/common/config.go: time.Duration fields)
    "--time-to-first-token", "--time-to-first-token-std-dev", "--inter-token-latency", "--inter-token-latency-std-dev",
    "--prefill-overhead", "--prefill-time-per-token", "--prefill-time-std-dev", "--kv-cache-transfer-latency",
    "--kv-cache-transfer-latency-std-dev", "--kv-cache-transfer-time-per-token", "--kv-cache-transfer-time-std-dev")


# the latencies llm-d-inference-sim resolves to whole milliseconds before it sleeps (v0.10.2
# pkg/common/utils.go RandomNormDuration: mean.Milliseconds()): divided by a time scale, each must stay whole
# (kube/timescale.py refuses a scale that would make 2 ms into 0.4 ms, which the sim runs as 0 ms); the per-token
# prefill flags are summed before that truncation and need not be whole
SIM_WHOLE_MS_FLAGS = ("--time-to-first-token", "--time-to-first-token-std-dev", "--inter-token-latency",
                      "--inter-token-latency-std-dev", "--kv-cache-transfer-latency",
                      "--kv-cache-transfer-latency-std-dev")


def duration_ms(value: str) -> float:
    """A Go duration flag's value in milliseconds ('2ms' -> 2.0, '1s' -> 1000.0; a bare number is ms)."""
    from scalearena.harness.local.cli import parse_duration_s

    return parse_duration_s(value, bare_unit="ms") * 1000.0


def scaled_duration(value: str, time_scale: float) -> str:
    """A Go duration flag's value divided by the time scale ('100ms' at 4 -> '25ms'; a bare number is ms)."""
    return f"{duration_ms(value) / time_scale:.6g}ms"


def _sim_binary() -> str:
    """The simulator built from source (kube/tools.py; imported when first needed, not at module load)."""
    tools = importlib.import_module(f"{__package__}.tools")
    return str(tools.binary("llm-d-inference-sim"))


def sim_program(binary: Callable[[], str] = _sim_binary) -> Program:
    """ghcr.io/llm-d/llm-d-inference-sim: ENTRYPOINT ["/app/llm-d-inference-sim"] (its Dockerfile), no CMD;
    listens on every IPv4 address, port ``--port`` (default 8000: pkg/common/config.go vLLMDefaultPort)."""
    found: list[str] = []

    def executable(name: str) -> str | None:
        if os.path.basename(name) != "llm-d-inference-sim":
            return None
        if not found:
            found.append(binary())
        return found[0]
    return Program(("/app/llm-d-inference-sim",), (), executable, port_flag="--port", default_port=8000,
                   duration_flags=SIM_DURATION_FLAGS)


def engine_program() -> Program:
    """scalearena/serve-engine (Dockerfile.engine): its ENTRYPOINT and CMD; ``python`` is this interpreter."""
    def executable(name: str) -> str | None:
        return sys.executable if re.fullmatch(r"(.*/)?python(3(\.\d+)?)?", name) else None
    return Program(("python", "-m", "scalearena.harness.local.cli", "engine"),
                   ("--host=0.0.0.0", "--port=8000", "--model=model"), executable, host_flag="--host",
                   time_scale_flag="--time-scale")


def default_programs(sim_binary: Callable[[], str] = _sim_binary) -> dict[str, Program]:
    """Image repository (the image name without tag) -> program."""
    return {SIM_REPOSITORY: sim_program(sim_binary), ENGINE_REPOSITORY: engine_program()}


def repository(image: str) -> str:
    """The image without its tag or digest: ``ghcr.io/x/y:v1`` -> ``ghcr.io/x/y`` (a port in the registry stays)."""
    name = image.split("@", 1)[0]
    slash = name.rfind("/")
    colon = name.rfind(":")
    return name[:colon] if colon > slash else name


def flag_value(argv: Sequence[str], flag: str) -> tuple[int, str] | None:
    """The last ``flag=value`` / ``flag value`` in argv: (index of the value's element, value)."""
    found = None
    for i, a in enumerate(argv):
        if a.startswith(flag + "="):
            found = (i, a[len(flag) + 1:])
        elif a == flag and i + 1 < len(argv):
            found = (i + 1, argv[i + 1])
    return found


def set_flag(argv: list[str], flag: str, value: str) -> list[str]:
    """argv with the flag's (last) value replaced, or the flag appended."""
    out = list(argv)
    found = flag_value(out, flag)
    if found is None:
        return out + [f"{flag}={value}"]
    i, _ = found
    out[i] = f"{flag}={value}" if out[i].startswith(flag + "=") else value
    return out


@dataclass
class Plan:
    """What to run for one container: argv (resolved), env, and the relays podIP:port -> where it listens."""

    argv: list[str]
    env: dict[str, str]
    netns: bool = False  # its own network namespace (the relays connect inside it)
    forwards: dict[int, int] = field(default_factory=dict)  # container port -> port the process listens on


WILDCARDS = ("0.0.0.0", "::", "")


def plan_container(pod: Obj, container: Obj, program: Program, env: dict[str, str], *, network: str,
                   time_scale: float = 1.0, port: Callable[[], int] = free_port) -> Plan:
    """The kubelet's argv for the container (command/args or the image's entrypoint/cmd, ``$(VAR)`` expanded),
    with argv[0] resolved on this host and the listen address placed on the pod IP (module docstring)."""
    command = [expand(str(a), env) for a in container.get("command") or []]
    args = [expand(str(a), env) for a in container.get("args") or []]
    if command:
        argv = command + args
    else:
        argv = list(program.entrypoint) + (args if "args" in container else list(program.cmd))
    exe = program.executable(argv[0])
    if exe is None:
        raise LaunchError(f"image {container.get('image')}: no program {argv[0]!r} on this host")
    argv[0] = exe
    pod_ip = pod["status"]["podIP"]
    plan = Plan(argv, env)
    if program.host_flag:
        found = flag_value(argv, program.host_flag)
        if found is None or found[1] in WILDCARDS:
            plan.argv = set_flag(argv, program.host_flag, pod_ip)
    elif program.port_flag:
        found = flag_value(argv, program.port_flag)
        if found is not None and not found[1].isdigit():
            return plan  # not a port: the program rejects it itself, as it would in the pod
        listens = int(found[1]) if found is not None else program.default_port
        if network == "netns":  # its own namespace: every port of the container, unchanged
            plan.netns = True
            declared = [int(p["containerPort"]) for p in container.get("ports") or []]
            plan.forwards = {p: p for p in sorted({*declared, *([listens] if listens else [])})}
        elif listens:  # the host's namespace: the one port it listens on moves to a free one
            own = port()
            plan.argv = set_flag(argv, program.port_flag, str(own))
            plan.forwards = {listens: own}
    if program.time_scale_flag and time_scale != 1.0 and flag_value(plan.argv, program.time_scale_flag) is None:
        plan.argv.append(f"{program.time_scale_flag}={time_scale!r}")
    for flag in program.duration_flags if time_scale != 1.0 else ():
        found = flag_value(plan.argv, flag)
        if found is not None:
            try:
                plan.argv = set_flag(plan.argv, flag, scaled_duration(found[1], time_scale))
            except click.BadParameter:
                pass  # not a duration: the program rejects it itself, as it would in the pod
    return plan


# -- readiness, as the kubelet's prober worker ------------------------------------------------------------------------
@dataclass(frozen=True)
class ProbeSpec:
    """A readinessProbe resolved for one pod; delays and period already divided by the time scale."""

    kind: str  # http | tcp
    host: str
    port: int
    path: str = "/"
    scheme: str = "HTTP"
    headers: tuple[tuple[str, str], ...] = ()
    initial_delay_s: float = 0.0
    period_s: float = 10.0
    timeout_s: float = 1.0
    success_threshold: int = 1
    failure_threshold: int = 3


def probe_spec(pod: Obj, container: Obj, time_scale: float = 1.0) -> ProbeSpec | None:
    """The container's readinessProbe with the kubelet's defaults (period 10 s, timeout 1 s, thresholds 1/3);
    None when it has none (the container is ready once it runs)."""
    p = container.get("readinessProbe")
    if not p:
        return None
    if "httpGet" in p:
        kind, action = "http", p["httpGet"]
    elif "tcpSocket" in p:
        kind, action = "tcp", p["tcpSocket"]
    else:
        raise LaunchError(f"readinessProbe {sorted(k for k in p if k not in _PROBE_TIMING)} is not supported "
                          "by the pod launcher (httpGet, tcpSocket)")
    port = action.get("port")
    if isinstance(port, str) and not port.isdigit():
        named = {c.get("name"): c["containerPort"] for c in container.get("ports") or []}
        if port not in named:
            raise LaunchError(f"readinessProbe port {port!r} is not a port of container {container['name']}")
        port = named[port]
    return ProbeSpec(kind=kind, host=action.get("host") or pod["status"]["podIP"], port=int(port),
                     path=action.get("path") or "/", scheme=action.get("scheme", "HTTP"),
                     headers=tuple((h["name"], h["value"]) for h in action.get("httpHeaders") or []),
                     initial_delay_s=float(p.get("initialDelaySeconds", 0)) / time_scale,
                     period_s=float(p.get("periodSeconds", 10)) / time_scale,
                     timeout_s=float(p.get("timeoutSeconds", 1)),
                     success_threshold=int(p.get("successThreshold", 1)),
                     failure_threshold=int(p.get("failureThreshold", 3)))


_PROBE_TIMING = {"initialDelaySeconds", "periodSeconds", "timeoutSeconds", "successThreshold", "failureThreshold",
                 "terminationGracePeriodSeconds"}


class Readiness:
    """The kubelet's readiness worker for one container (pkg/kubelet/prober/worker.go), on the caller's clock.

    Probes fall on ticks every ``period_s`` from the container's start; a tick earlier than
    ``initial_delay_s`` after the start is skipped (doProbe: "Probe disabled for InitialDelaySeconds").
    The result starts as failure (not ready); ``success_threshold`` consecutive successes make the
    container ready, ``failure_threshold`` consecutive failures make it unready again. (The kubelet also
    probes at once on a pod status sync while the container is not ready; those extra probes come at no
    fixed time and are not modelled: readiness is seen at most one period after the endpoint answers.)
    """

    def __init__(self, spec: ProbeSpec, started: float) -> None:
        self.spec = spec
        self.started = started
        self.next_at = started
        self.ready = False
        self._run = 0  # consecutive results equal to the last one
        self._last: bool | None = None

    def due(self, now: float) -> bool:
        """True when a probe is to run now: the latest tick at or before ``now`` is one not seen yet and
        lies past the initial delay. Ticks missed in between are dropped, as a Go ticker drops them."""
        if now < self.next_at:
            return False
        tick = self.started + math.floor((now - self.started) / self.spec.period_s) * self.spec.period_s
        self.next_at = tick + self.spec.period_s
        return tick - self.started >= self.spec.initial_delay_s

    def record(self, ok: bool) -> bool | None:
        """A probe's result; the new readiness when it changes, else None."""
        self._run = self._run + 1 if ok == self._last else 1
        self._last = ok
        threshold = self.spec.success_threshold if ok else self.spec.failure_threshold
        if ok != self.ready and self._run >= threshold:
            self.ready = ok
            return ok
        return None


def run_probe(spec: ProbeSpec) -> bool:
    """One probe, as the kubelet's prober: httpGet succeeds on 200-399 within the timeout; tcpSocket on connect."""
    try:
        if spec.kind == "tcp":
            with socket.create_connection((spec.host, spec.port), timeout=spec.timeout_s):
                return True
        cls = http.client.HTTPSConnection if spec.scheme.upper() == "HTTPS" else http.client.HTTPConnection
        conn = cls(spec.host, spec.port, timeout=spec.timeout_s)
        try:
            conn.request("GET", spec.path, headers={"User-Agent": "kube-probe/1.33", **dict(spec.headers)})
            status = conn.getresponse().status
        finally:
            conn.close()
        return 200 <= status < 400
    except (OSError, http.client.HTTPException):
        return False


# -- the API ----------------------------------------------------------------------------------------------------------
class Gone(Exception):
    """A watch's resourceVersion is too old (410): list again."""


class PodAPI:
    """The few pod calls the launcher makes, over the official client; answers are the server's JSON.

    Patches name their content type (strategic merge: conditions merge by type), so the client's default,
    which differs between client versions, does not matter."""

    def __init__(self, kubeconfig: Path | str) -> None:
        from kubernetes import client

        from scalearena.harness.kube.wva.kubeapi import load_api_client

        self.core: Any = client.CoreV1Api(load_api_client(str(kubeconfig)))

    def list_pods(self, namespace: str, selector: str) -> tuple[list[Obj], str]:
        resp = self.core.list_namespaced_pod(namespace, label_selector=selector, _preload_content=False)
        doc = json.loads(resp.data)
        return doc.get("items") or [], doc["metadata"]["resourceVersion"]

    def watch_pods(self, namespace: str, selector: str, resource_version: str,
                   timeout_s: int = 60) -> Iterator[tuple[str, Obj]]:
        resp = self.core.list_namespaced_pod(namespace, label_selector=selector, watch=True,
                                             resource_version=resource_version, allow_watch_bookmarks=True,
                                             timeout_seconds=timeout_s, _preload_content=False,
                                             _request_timeout=(10, timeout_s + 30))
        try:
            buf = b""
            for chunk in resp.stream(amt=None, decode_content=False):  # as kubernetes.watch: one chunk per event
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    if not line.strip():
                        continue
                    event = json.loads(line)
                    if event["type"] == "ERROR":
                        if event["object"].get("code") == 410:
                            raise Gone()
                        raise RuntimeError(f"watch error: {event['object'].get('message')}")
                    yield event["type"], event["object"]
        finally:
            resp.release_conn()

    def patch_status(self, namespace: str, name: str, body: Obj) -> None:
        from kubernetes.client.exceptions import ApiException

        try:
            self.core.patch_namespaced_pod_status(name, namespace, body, _preload_content=False,
                                                  _content_type="application/strategic-merge-patch+json")
        except ApiException as e:
            if e.status != 404:  # deleted meanwhile: nothing to report on
                raise

    def delete_pod(self, namespace: str, name: str, uid: str) -> None:
        from kubernetes.client.exceptions import ApiException

        try:
            self.core.delete_namespaced_pod(name, namespace, grace_period_seconds=0, _preload_content=False,
                                            body={"gracePeriodSeconds": 0, "preconditions": {"uid": uid}})
        except ApiException as e:
            if e.status not in (404, 409):  # gone already, or a new pod of the same name
                raise

    def config_map(self, namespace: str, name: str) -> Mapping[str, str] | None:
        from kubernetes.client.exceptions import ApiException

        try:
            resp = self.core.read_namespaced_config_map(name, namespace, _preload_content=False)
        except ApiException as e:
            if e.status == 404:
                return None
            raise
        return json.loads(resp.data).get("data") or {}


# -- the launcher -----------------------------------------------------------------------------------------------------
@dataclass
class Failure:
    pod: str  # namespace/name
    container: str
    exit_code: int | None  # None: it never started
    command: str
    log_tail: str

    def render(self) -> str:
        if not self.container:
            return f"pod {self.pod}: {self.command}"
        what = f"exited with code {self.exit_code}" if self.exit_code is not None else "could not be started"
        tail = f"\n--- last {TAIL_LINES} log lines ---\n{self.log_tail}" if self.log_tail else ""
        return f"container {self.container} of pod {self.pod} {what}: {self.command}{tail}"


def _now_rfc3339(wall: float) -> str:
    return datetime.fromtimestamp(wall, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class _Container:
    name: str
    image: str
    key: str  # supervisor / relay / log name
    plan: Plan
    child: Child | None = None
    started_wall: float = 0.0
    readiness: Readiness | None = None
    probe: ProbeSpec | None = None
    in_flight: Future | None = None
    ready: bool = False
    exit_code: int | None = None
    finished_wall: float | None = None


@dataclass
class _Pod:
    uid: str
    namespace: str
    name: str
    obj: Obj
    containers: list[_Container] = field(default_factory=list)
    term_at: float | None = None  # monotonic time SIGTERM went out
    kill_at: float | None = None
    gone_from_api: bool = False
    failed: bool = False
    ready: bool = False
    ready_since: str = ""
    dirty: bool = False  # a status change not yet written
    errors: int = 0

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.name}"


class PodLauncher:
    """Runs the containers of the namespace's engine pods on this host (module docstring).

    ``programs``: image repository -> Program (default ``default_programs()``). ``network``: ``auto``,
    ``netns`` or ``port`` (how a program that listens on every address gets the pod's port; module
    docstring). ``api``, ``probe`` and ``clock`` are for tests. ``start()`` runs the watch and the
    launcher's loop in threads; ``step()`` is one pass of that loop (tests call it themselves).
    """

    def __init__(self, kubeconfig: Path | str | None, namespace: str, logs: Path, *,
                 programs: Mapping[str, Program] | None = None, time_scale: float = 1.0,
                 selector: str = VARIANT_SELECTOR, network: str = "auto", api: Any = None,
                 probe: Callable[[ProbeSpec], bool] = run_probe, clock: Callable[[], float] = time.monotonic,
                 wall: Callable[[], float] = time.time, stop_grace_s: float = 5.0) -> None:
        if not time_scale > 0:
            raise ValueError(f"time_scale must be > 0, got {time_scale!r}")
        if network not in ("auto", "netns", "port"):
            raise ValueError(f"network must be auto, netns or port, got {network!r}")
        self.namespace = namespace
        self.selector = selector
        self.time_scale = time_scale
        self.programs = dict(programs) if programs is not None else default_programs()
        self.api = api if api is not None else PodAPI(kubeconfig or "")
        self.sup = Supervisor(Path(logs))
        self.network = network
        self._probe, self._clock, self._wall = probe, clock, wall
        self.stop_grace_s = stop_grace_s
        self.failures: list[Failure] = []
        self.pods: dict[str, _Pod] = {}  # by uid
        self.events: queue.Queue[tuple[str, Obj]] = queue.Queue()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._probes = ThreadPoolExecutor(max_workers=4, thread_name_prefix="pod-probe")
        self._relay: Relay | None = None
        self._watch_error: BaseException | None = None

    # -- lifecycle ----------------------------------------------------------------------------------------------------
    def start(self) -> PodLauncher:
        if self.network == "auto":
            self.network = "netns" if netns_supported() else "port"
        items, rv = self.api.list_pods(self.namespace, self.selector)  # the first list in the caller: errors surface
        self._resync(items)
        for target, name in ((self._watch, "pod-watch"), (self._loop, "pod-launcher")):
            t = threading.Thread(target=target, args=(rv,) if target == self._watch else (), name=name, daemon=True)
            t.start()
            self._threads.append(t)
        return self

    def stop(self) -> None:
        """Stop every container (SIGTERM, SIGKILL after ``stop_grace_s``) and the threads; finish the pods
        that were being deleted (delete with grace 0). Leaves no process behind."""
        self._stop.set()
        for t in self._threads:
            if t.name == "pod-launcher":
                t.join(timeout=30)
        self.sup.close(grace_s=self.stop_grace_s)
        for pod in list(self.pods.values()):
            if pod.obj.get("metadata", {}).get("deletionTimestamp") and not pod.gone_from_api:
                try:
                    self.api.delete_pod(pod.namespace, pod.name, pod.uid)
                except Exception:  # noqa: BLE001 - teardown: the cluster may be going away too
                    pass
        self._probes.shutdown(wait=True, cancel_futures=True)
        if self._relay is not None:
            self._relay.close()
            self._relay = None

    def __enter__(self) -> PodLauncher:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def check(self) -> None:
        """RunFailed naming every container that exited on its own (or never started), with its log tail."""
        if self._watch_error is not None:
            raise RunFailed(f"pod launcher: the watch of namespace {self.namespace} failed: {self._watch_error}")
        if self.failures:
            raise RunFailed("\n".join(f.render() for f in self.failures))

    # -- threads ------------------------------------------------------------------------------------------------------
    def _watch(self, rv: str) -> None:
        errors = 0
        while not self._stop.is_set():
            try:
                for kind, obj in self.api.watch_pods(self.namespace, self.selector, rv):
                    rv = obj.get("metadata", {}).get("resourceVersion") or rv
                    if kind != "BOOKMARK":
                        self.events.put((kind, obj))
                    errors = 0
                    if self._stop.is_set():
                        return
            except Gone:
                items, rv = self.api.list_pods(self.namespace, self.selector)
                self.events.put(("RESYNC", {"items": items}))
            except Exception as e:  # noqa: BLE001 - a broken watch is re-opened; repeated failure fails the run
                errors += 1
                if errors >= 10:
                    self._watch_error = e
                    return
                self._stop.wait(1.0)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                kind, obj = self.events.get(timeout=0.05)
                self._event(kind, obj)
                while True:
                    kind, obj = self.events.get_nowait()
                    self._event(kind, obj)
            except queue.Empty:
                pass
            self.step()

    # -- events -------------------------------------------------------------------------------------------------------
    def _event(self, kind: str, obj: Obj) -> None:
        if kind == "RESYNC":
            self._resync(obj["items"])
            return
        uid = obj["metadata"]["uid"]
        if kind == "DELETED":
            pod = self.pods.get(uid)
            if pod is not None:
                pod.gone_from_api = True
                pod.obj = obj
            return
        pod = self.pods.get(uid)
        if pod is None:
            self.pods[uid] = _Pod(uid, obj["metadata"].get("namespace", self.namespace), obj["metadata"]["name"], obj)
        else:
            pod.obj = obj

    def _resync(self, items: list[Obj]) -> None:
        seen = set()
        for obj in items:
            seen.add(obj["metadata"]["uid"])
            self._event("MODIFIED", obj)
        for uid, pod in self.pods.items():
            if uid not in seen:
                pod.gone_from_api = True

    # -- one pass -----------------------------------------------------------------------------------------------------
    def step(self) -> None:
        """Start what became runnable, probe what is due, notice exits, carry deletions forward."""
        now = self._clock()
        for uid, pod in list(self.pods.items()):
            try:
                if not pod.containers and not pod.failed and not pod.gone_from_api and self._runnable(pod.obj):
                    self._launch(pod, now)
                self._exits(pod)
                if not pod.gone_from_api:
                    self._readiness(pod, now)
                if (pod.obj.get("metadata", {}).get("deletionTimestamp") or pod.gone_from_api) \
                        and self._terminate(pod, now):
                    del self.pods[uid]
            except Exception as e:  # noqa: BLE001 - an API call that failed: reported, the next pass retries
                pod.errors += 1
                if pod.errors == ERRORS_TO_FAIL:
                    self.failures.append(Failure(pod.ref, "", None, f"pod launcher: {type(e).__name__}: {e}", ""))
            else:
                pod.errors = 0

    @staticmethod
    def _runnable(obj: Obj) -> bool:
        md, spec, status = obj.get("metadata", {}), obj.get("spec", {}), obj.get("status", {})
        return (bool(spec.get("nodeName")) and bool(status.get("podIP")) and status.get("phase") == "Running"
                and not md.get("deletionTimestamp"))

    def _launch(self, pod: _Pod, now: float) -> None:
        spec = pod.obj["spec"]
        try:
            if spec.get("initContainers"):
                raise LaunchError("init containers are not run by the pod launcher")
            plans = []
            for c in spec["containers"]:
                program = self.programs.get(repository(c.get("image", "")))
                if program is None:
                    raise LaunchError(f"container {c['name']}: no program for image {c.get('image')!r} "
                                      f"(known: {', '.join(sorted(self.programs))})")
                env = container_env(pod.obj, c, self.api.config_map)
                plans.append((c, plan_container(pod.obj, c, program, env, network=self.network,
                                                time_scale=self.time_scale),
                              probe_spec(pod.obj, c, self.time_scale)))
        except Exception as e:  # noqa: BLE001 - LaunchError, or the simulator binary that could not be built
            self._fail(pod, spec["containers"][0]["name"] if spec.get("containers") else "", None,
                       str(e) if isinstance(e, LaunchError) else f"{type(e).__name__}: {e}", "")
            return
        pod_ip = pod.obj["status"]["podIP"]
        for c, plan, probe in plans:
            key = f"{pod.namespace}_{pod.name}_{c['name']}"
            ct = _Container(c["name"], c.get("image", ""), key, plan, probe=probe)
            pod.containers.append(ct)
            argv = [sys.executable, "-I", "-c", NETNS_EXEC, *plan.argv] if plan.netns else plan.argv
            try:
                ct.child = self.sup.start(key, argv, env=plan.env)
            except OSError as e:
                self._fail(pod, c["name"], None, f"{shlex.join(plan.argv)} ({e})", "")
                return
            ct.started_wall = self._wall()
            ct.readiness = Readiness(probe, now) if probe is not None else None
            if plan.forwards:
                if self._relay is None:
                    self._relay = Relay()
                try:
                    self._relay.add(key, pod_ip, plan.forwards, ct.child.pid if plan.netns else None)
                except OSError as e:
                    self._fail(pod, c["name"], None, f"{shlex.join(plan.argv)} (relay {pod_ip}: {e})", "")
                    return
        pod.dirty = True
        self._write_status(pod)

    def _exits(self, pod: _Pod) -> None:
        for ct in pod.containers:
            if ct.child is None or ct.exit_code is not None or ct.child.alive():
                continue
            ct.exit_code = ct.child.returncode()
            ct.finished_wall = self._wall()
            ct.ready = False
            if self._relay is not None:
                self._relay.remove(ct.key)
            if not ct.child.stop_requested:
                self.failures.append(Failure(pod.ref, ct.name, ct.exit_code, shlex.join(ct.plan.argv),
                                             ct.child.log_tail(TAIL_LINES)))
                pod.dirty = True

    def _fail(self, pod: _Pod, container: str, code: int | None, command: str, tail: str) -> None:
        pod.failed = True
        self.failures.append(Failure(pod.ref, container, code, command, tail))
        for ct in pod.containers:
            if ct.child is not None and ct.child.alive():
                self.sup.kill(ct.key)

    def _terminate(self, pod: _Pod, now: float) -> bool:
        """Graceful stop of a deleted pod; True once its processes are gone and the pod is deleted."""
        md = pod.obj.get("metadata", {})
        if pod.term_at is None:
            grace = md.get("deletionGracePeriodSeconds")
            if grace is None:
                grace = pod.obj.get("spec", {}).get("terminationGracePeriodSeconds", 30)
            pod.term_at = now
            pod.kill_at = now + float(grace) / self.time_scale
            for ct in pod.containers:
                if ct.child is not None and ct.child.alive():
                    self.sup.terminate(ct.key)
        if pod.kill_at is not None and now >= pod.kill_at:
            for ct in pod.containers:
                if ct.child is not None and ct.child.alive():
                    self.sup.kill(ct.key)
        if any(ct.child is not None and ct.child.alive() for ct in pod.containers):
            return False
        self._exits(pod)
        for ct in pod.containers:
            self.sup.forget(ct.key)
            if self._relay is not None:
                self._relay.remove(ct.key)
        if not pod.gone_from_api:
            self.api.delete_pod(pod.namespace, pod.name, pod.uid)
        return True

    # -- readiness ----------------------------------------------------------------------------------------------------
    def _readiness(self, pod: _Pod, now: float) -> None:
        changed = False
        for ct in pod.containers:
            if ct.exit_code is not None:
                continue
            if ct.readiness is None:  # no probe: ready once running
                changed |= not ct.ready
                ct.ready = True
                continue
            if ct.in_flight is not None:
                if not ct.in_flight.done():
                    continue
                ok = bool(ct.in_flight.result())
                ct.in_flight = None
                new = ct.readiness.record(ok)
                if new is not None:
                    ct.ready = new
                    changed = True
            if ct.readiness.due(now) and ct.probe is not None:
                ct.in_flight = self._probes.submit(self._probe, ct.probe)
        if changed:
            pod.dirty = True
        self._write_status(pod)

    def _pod_ready(self, pod: _Pod) -> bool:
        if not pod.containers or not all(ct.ready for ct in pod.containers):
            return False
        conditions = {c.get("type"): c.get("status") for c in pod.obj.get("status", {}).get("conditions") or []}
        return all(conditions.get(g["conditionType"]) == "True" for g in pod.obj["spec"].get("readinessGates") or [])

    def status_patch(self, pod: _Pod) -> Obj:
        """The pod status the kubelet would write now: container states, Ready and ContainersReady."""
        statuses = []
        for ct in pod.containers:
            s: Obj = {"name": ct.name, "image": ct.image, "ready": ct.ready, "restartCount": 0}
            if ct.exit_code is None:
                s["started"] = True
                s["state"] = {"running": {"startedAt": _now_rfc3339(ct.started_wall)}}
            else:
                s["started"] = False
                s["state"] = {"terminated": {
                    "exitCode": ct.exit_code if ct.exit_code >= 0 else 128 - ct.exit_code,
                    "reason": "Completed" if ct.exit_code == 0 else "Error",
                    "startedAt": _now_rfc3339(ct.started_wall),
                    "finishedAt": _now_rfc3339(ct.finished_wall or ct.started_wall)}}
            statuses.append(s)
        ready = self._pod_ready(pod)
        containers_ready = bool(pod.containers) and all(ct.ready for ct in pod.containers)
        if not pod.ready_since:  # KWOK's Stage wrote Ready False: its transition time stands until Ready changes
            had: Obj = next((c for c in pod.obj.get("status", {}).get("conditions") or [] if c.get("type") == "Ready"), {})
            pod.ready = had.get("status") == "True"
            pod.ready_since = had.get("lastTransitionTime") or _now_rfc3339(self._wall())
        if ready != pod.ready:
            pod.ready, pod.ready_since = ready, _now_rfc3339(self._wall())
        unready = [ct.name for ct in pod.containers if not ct.ready]
        conditions = []
        for kind, ok in (("Ready", ready), ("ContainersReady", containers_ready)):
            c: Obj = {"type": kind, "status": "True" if ok else "False", "lastProbeTime": None,
                      "lastTransitionTime": pod.ready_since}
            # null removes a field in a strategic merge patch: a Ready condition has no reason (as the kubelet's)
            c["reason"] = None if ok else "ContainersNotReady"
            c["message"] = None if ok else f"containers with unready status: [{' '.join(unready)}]"
            conditions.append(c)
        return {"status": {"conditions": conditions, "containerStatuses": statuses}}

    def _write_status(self, pod: _Pod) -> None:
        """Write the status if it changed; a failed write raises and is retried on the next pass."""
        if pod.dirty and not pod.gone_from_api:
            self.api.patch_status(pod.namespace, pod.name, self.status_patch(pod))
            pod.dirty = False
