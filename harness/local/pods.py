"""Engine processes as pods: a Deployment/ReplicaSet in miniature.

The actuator of the local backend. An autoscaler sets a variant's desired
replicas; ``reconcile`` makes the processes follow, as a ReplicaSet does:

* too few live pods (pending + ready) -> spawn engines; a new engine is
  ``pending`` until its /health/ready answers 200 (the simulated cold start
  plus the real process boot), then ``ready`` and registered with the router
  and with Prometheus' file-SD targets; with ``sim`` set (engine=llm-d-inference-sim,
  inference_sim.py) each pod runs that program instead, and the PodSet holds it
  pending until its readiness path answers and its cold start has passed since
  the spawn (the sim cannot be told its cold start and time scale);
* too many -> pick victims (pending first, then the most recently ready, as
  the ReplicaSet controller ranks them), mark them ``terminating`` (the
  router stops sending them work), SIGTERM; the engine drains within the
  grace period and exits; the harness SIGKILLs it if it overstays;
* a pod whose process died on its own (crash, SIGKILL fault) is ``gone``
  and replaced on the next reconcile.
"""
from __future__ import annotations

import functools
import json
import operator
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import requests

from scalearena.harness.control.ports import ReplicaStatus
from scalearena.harness.local.supervisor import LOOPBACK, Supervisor, free_port
from scalearena.harness.sim.startup_phases import (
    after_bind,
    clip,
    phase,
    pod_record,
    scheduling_delay,
    total_cold_start_s,
)

PENDING, READY, TERMINATING, GONE = "pending", "ready", "terminating", "gone"


@dataclass
class Pod:
    name: str
    variant: str
    model: str
    port: int
    state: str
    created_wall: float
    ready_wall: float | None = None
    term_wall: float | None = None
    kill_wall: float | None = None  # SIGKILL backstop for a terminating pod
    warm: bool = False  # started Ready (the run's initial replicas): no start-up phases
    factor: float = 1.0  # slow_cold_start multiplier at its spawn
    gone_wall: float | None = None
    ready_path: str = "/health/ready"  # what readiness polls
    hold_until: float = 0.0  # wall time before which the pod is not ready, whatever it answers (sim engine)

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"


class PodSet:
    """Every engine pod of a run, by variant."""

    def __init__(self, supervisor: Supervisor, variants: list[Any], time_scale: float,
                 on_change: Callable[[], None], on_event: Callable[[str, dict[str, Any]], None],
                 gpu_types: dict[str, Any] | None = None) -> None:
        self.sup = supervisor
        self.variants = {v.name: v for v in variants}
        self.gpu_types = gpu_types or {}  # the scenario's own GPU types (cluster.gpu_types), by name
        self.handoff_key_file: str | None = None  # P/D: the key the router signs hand-offs with (handoff_auth.py)
        self.time_scale = time_scale
        self.on_change = on_change  # membership changed: push to router + Prometheus
        self.on_event = on_event
        self.pods: dict[str, Pod] = {}
        self.desired: dict[str, int] = {v.name: v.start_replicas for v in variants}
        self._serial = {v.name: 0 for v in variants}
        # Fixed scrape slots: Prometheus applies target changes at most every 5 s of wall time, so
        # every port a pod of the variant may use is a target from the start; a pod takes a free
        # slot and labels its own series with its name (honor_labels).
        self.slots: dict[str, list[int]] = {v.name: [free_port() for _ in range(2 * v.max_replicas + 1)]
                                            for v in variants}
        self.startup_factor: Callable[[], float] = lambda: 1.0  # slow_cold_start fault hook
        self.seed = 0  # the scenario's seed (the run sets it): cold_start phases drawn per pod
        self.history: list[Pod] = []  # every pod spawned, for pods.jsonl
        self.kv_transfer: dict[str, Any] = {}  # P/D: the scenario's cluster.kv_transfer (--kv-transfer)
        self.sim: Any = None  # inference_sim.SimEngine: pods run llm-d-inference-sim (None: serve-engine)
        self.owners: dict[int, str] = {}  # port -> pod name, replaced whole (the metrics relay's thread reads it)

    # -- views -----------------------------------------------------------------------------------
    def of(self, variant: str, *states: str) -> list[Pod]:
        return [p for p in self.pods.values() if p.variant == variant and (not states or p.state in states)]

    def counts(self, variant: str) -> tuple[int, int, int, int]:
        """(ready, pending, terminating, starting): ``starting`` are the pending pods whose engine process
        runs (phase Running, not Ready: it boots or loads); a process that is not (yet) up is Pending."""
        pods = self.of(variant)
        pending = [p for p in pods if p.state == PENDING]
        return (sum(p.state == READY for p in pods), len(pending), sum(p.state == TERMINATING for p in pods),
                sum(self._running(p) for p in pending))

    def _running(self, pod: Pod) -> bool:
        child = self.sup.get(pod.name)
        return child is not None and child.alive()

    # -- the control plane's Actuator ------------------------------------------------------------
    def replicas(self, variant: str) -> ReplicaStatus:
        ready, pending, terminating, starting = self.counts(variant)
        return ReplicaStatus(spec=self.desired[variant], ready=tuple(p.name for p in self.of(variant, READY)),
                             pending=pending, terminating=terminating, starting=starting)

    def scale(self, variant: str, replicas: int) -> None:
        """Desired replicas; the run's loop calls ``reconcile`` right after the decision pass."""
        self.desired[variant] = replicas

    # -- actuation -------------------------------------------------------------------------------
    def spawn(self, variant: str, warm: bool = False) -> Pod:
        v = self.variants[variant]
        role = "" if v.role == "both" or v.role in variant else f"-{v.role}"  # llm-d's selectors find the role
        name = f"{variant}{role}-{self._serial[variant]}"
        self._serial[variant] += 1
        used = {p.port for p in self.pods.values()}
        port = next((s for s in self.slots[variant] if s not in used), None) or free_port()
        one = total_cold_start_s(v, self.seed, name) if v.cold_start is not None else v.startup_s  # startup.py
        factor = self.startup_factor()
        startup = 0.0 if warm else one * factor
        spawned = time.time()
        argv, env = (self._engine_argv(v, name, port, startup), None) if self.sim is None else \
            self.sim.command(variant, name, port)
        child = self.sup.start(name, argv, env=env)
        if self.sim is not None:
            self.sim.started(name, child.proc.pid)  # netns mode: its relay from the slot port
        # created when it was asked for, before its process started (a pod object exists before its container):
        # its start-up phases count from here, and the engine's own start-up timer cannot start any earlier
        pod = Pod(name=name, variant=variant, model=v.model, port=port, state=PENDING, created_wall=spawned,
                  warm=warm, factor=factor)
        if self.sim is not None:  # held as serve-engine holds itself: ready no sooner than its cold start
            pod.ready_path, pod.hold_until = self.sim.ready_path(variant), spawned + startup / self.time_scale
        self.pods[name] = pod
        self.owners = {**self.owners, port: name}
        self.history.append(pod)
        return pod

    def _engine_argv(self, v: Any, name: str, port: int, startup: float) -> list[str]:
        """serve-engine's command line for pod ``name`` of variant ``v``."""
        spec = v.engine.model_dump(mode="json")
        argv = [
            sys.executable, "-m", "scalearena.harness.local.cli", "engine",
            "--model", v.model, "--port", str(port), "--engine-spec", json.dumps(spec), "--gpu", v.gpu,
            "--time-scale", repr(self.time_scale), "--startup-duration", f"{startup}s",
            "--termination-grace-period", f"{v.termination_grace_s}s", "--pod", name, "--variant", v.name,
            "--spawned-at", repr(time.time()),
        ]
        if v.gpu in self.gpu_types:
            argv += ["--gpu-spec", json.dumps(self.gpu_types[v.gpu].model_dump(mode="json"))]
        if v.role != "both":
            argv += ["--role", v.role, "--kv-transfer", json.dumps(self.kv_transfer)]
            if self.handoff_key_file is not None:
                argv += ["--handoff-key-file", self.handoff_key_file]
        return argv

    def terminate(self, pod: Pod) -> None:
        v = self.variants[pod.variant]
        pod.state = TERMINATING
        pod.term_wall = time.time()
        pod.kill_wall = pod.term_wall + v.termination_grace_s / self.time_scale + 2.0
        self.on_change()  # router: draining before the signal, as endpoints are removed in k8s
        self.sup.terminate(pod.name)

    def crash(self, variant: str) -> Pod | None:
        """SIGKILL one ready pod (fault injection)."""
        ready = self.of(variant, READY)
        if not ready:
            return None
        pod = ready[0]
        self.sup.kill(pod.name)
        return pod

    def reconcile(self) -> None:
        for name, want in self.desired.items():
            live = self.of(name, PENDING, READY)
            for _ in range(want - len(live)):
                self.spawn(name)
            if len(live) > want:
                # pending first (newest first), then the most recently ready
                ranked = [p for p in live if p.state == PENDING][::-1] + sorted(
                    (p for p in live if p.state == READY), key=lambda p: p.ready_wall or 0.0, reverse=True)
                for pod in ranked[: len(live) - want]:
                    self.terminate(pod)

    def startup_records(self, to_t: Callable[[float], float]) -> list[dict[str, Any]]:
        """pods.jsonl rows: the phases each engine process waited through before reporting ready (drawn
        as the simulator draws them, harness/sim/startup_phases.py, times a slow_cold_start factor), the ready time
        the run observed (process start and readiness polling included), and when the pod went."""
        rows = []
        for pod in self.history:
            v, t = self.variants[pod.variant], to_t(pod.created_wall)
            rec = pod_record(pod.name, pod.variant, t, "initial" if pod.warm else "cold")
            if not pod.warm:
                f = pod.factor
                at = t + scheduling_delay(v, self.seed, pod.name) * f
                spans = [("scheduling", t, at)] if at > t else []
                spans += after_bind(v, self.seed, pod.name, at, None, functools.partial(operator.mul, f))
                rec["phases"] = [phase(*x) for x in spans]
            rec["ready_s"] = None if pod.ready_wall is None else round(to_t(pod.ready_wall), 6)
            if pod.gone_wall is not None:
                rec["phases"] = clip(rec["phases"], to_t(pod.gone_wall))
            rec["ended_s"] = None if pod.gone_wall is None else round(to_t(pod.gone_wall), 6)
            rec["end"] = "deleted" if pod.gone_wall is not None else "running"
            rows.append(rec)
        return rows

    # -- observation -----------------------------------------------------------------------------
    def poll(self) -> bool:
        """Advance lifecycles from what the processes say; True if membership changed."""
        changed = False
        now = time.time()
        for pod in list(self.pods.values()):
            child = self.sup.get(pod.name)
            alive = child is not None and child.alive()
            if pod.state in (PENDING, READY) and not alive:
                self.on_event("pod_died", {"pod": pod.name, "variant": pod.variant, "was": pod.state,
                                           "returncode": child.returncode() if child else None})
                pod.state = GONE
                changed = True
            elif pod.state == PENDING and now >= pod.hold_until:
                try:
                    ok = requests.get(pod.url + pod.ready_path, timeout=0.2).status_code == 200
                except requests.RequestException:
                    ok = False
                if ok:
                    pod.state, pod.ready_wall = READY, now
                    changed = True
            elif pod.state == TERMINATING:
                if not alive:
                    pod.state = GONE
                    changed = True
                elif pod.kill_wall is not None and now >= pod.kill_wall:
                    self.sup.kill(pod.name)
        for name in [n for n, p in self.pods.items() if p.state == GONE]:
            self.pods[name].gone_wall = now
            del self.pods[name]
            self.sup.forget(name)
            self.owners = {port: pod for port, pod in self.owners.items() if pod != name}
            if self.sim is not None:
                self.sim.gone(name)
        if changed:
            self.on_change()
        return changed

    def endpoints(self) -> list[dict[str, Any]]:
        return [{"pod": p.name, "variant": p.variant, "model": p.model, "url": p.url, "role": self.variants[p.variant].role,
                 "state": "ready" if p.state == READY else "draining"}
                for p in self.pods.values() if p.state in (READY, TERMINATING)]
