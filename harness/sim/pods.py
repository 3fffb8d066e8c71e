"""Pods in the simulator, and what the control plane reads and changes of them.

A mixin of ``loop.Simulation``. The lifecycle: a Deployment's desired
replicas are reconciled as a ReplicaSet does (new pods pending until the GPU
pool can bind them, then starting for the cold start, then ready; scale-down
victims in ``Deployment.victims`` order); a terminating pod drains for its
grace period and its requests still running are ``killed``. The control
plane's ``Actuator`` (``replicas``, ``scale``) and ``LoadProbe``
(``router_queue``, ``load``: true engine state, not scraped) are here too,
since they are reads and writes of exactly this state.
"""
from __future__ import annotations

from typing import Any

from mypy_extensions import trait

from scalearena.harness.control.ports import LoadSample, ReplicaStatus
from scalearena.harness.sim.engine.cluster import (
    ASLEEP,
    GONE,
    PENDING,
    READY,
    STARTING,
    TERMINATING,
    Deployment,
    Pod,
)
from scalearena.harness.sim.events import GRACE_END
from scalearena.harness.sim.router import RoutedPod
from scalearena.harness.sim.state import SimState


@trait
class PodLifecycle(SimState):
    """Deployments, pods and the GPU pool. Needs the Simulation's state (see loop.Simulation)."""

    deps: list[Deployment]
    pool: Any
    router: Any
    gateway: dict[str, list[Any]]
    flows: dict[str, Any]  # model -> harness.sim.flow_control.FlowQueues (admission flow_control only)
    models: list[str]
    _pod_seq: Any
    _slow: list[Any]
    _warm: bool
    _ok_total: dict[str, int]

    def dep(self, name: str) -> Deployment:
        for d in self.deps:
            if d.name == name:
                return d
        raise KeyError(name)

    def reconcile(self, d: Deployment) -> None:
        active = d.active()
        if len(active) < d.replicas:
            for _ in range(d.replicas - len(active)):
                if not (d.standby and self.take_standby(d)):
                    self.create_pod(d)
        elif len(active) > d.replicas:
            for pod in d.victims(len(active) - d.replicas):
                self.terminate(pod)
        if d.spec.warm_buffer:
            self.fill_buffer(d)
        self.schedule_pending()

    def create_pod(self, d: Deployment, standby: str | None = None) -> Pod:
        name = d.pod_name()
        d.counter += 1
        engine = d.new_engine()
        routed = RoutedPod(name, engine, d.spec.engine.block_size, capacity_blocks=d.num_gpu_blocks, role=d.spec.role)
        pod = Pod(name, d.name, d.spec.model, self.t, engine, routed, next(self._pod_seq))
        routed.owner = pod
        pod.standby = standby
        (d.standby if standby else d.pods).append(pod)
        self.pod_created(pod, d)
        return pod

    def schedule_pending(self) -> None:
        t = self.t
        pending = sorted((p for d in self.deps for p in (*d.pods, *d.standby)
                          if p.state == PENDING and p.schedulable_s <= t), key=lambda p: p.seq)
        for pod in pending:
            d = self.dep(pod.variant)
            if self.bind_gpus(pod, d):
                self.start_phases(pod, d)

    def on_ready(self, t: float, pod: Pod) -> None:
        if pod.state != STARTING:
            return
        pod.state = READY
        pod.record["ready_s"] = pod.record.get("ready_s") or round(t, 6)
        if pod.standby is None:
            self.serve(pod, t)

    def serve(self, pod: Pod, t: float) -> None:
        """A Ready replica joins the router (a warm buffer pod when it is put into service)."""
        pod.ready_s = t
        pod.engine.t = max(pod.engine.t, t)  # the engine's clock starts at readiness
        pod.last_scrape = t
        self.pod_ready_scrape(pod, t)
        self.router.add_pod(pod.model, pod.routed)
        q = self.gateway.get(pod.model, [])
        self.gateway[pod.model] = []
        for req in q:
            self.dispatch(t, req)

    def terminate(self, pod: Pod) -> None:
        if pod.state in (PENDING, STARTING):
            self.pod_gone(pod, self.t)
            return
        self.router.remove_pod(pod.model, pod.routed)
        pod.to_sleep = self.sleep_slot(self.dep(pod.variant))  # sleep mode: drain, then sleep with the GPUs
        pod.state = TERMINATING
        if not pod.inflight:
            self.pod_gone(pod, self.t)
            return
        grace = self.dep(pod.variant).spec.termination_grace_s
        pod.grace_end_s = self.t + grace
        self.push(pod.grace_end_s, GRACE_END, pod)

    def on_grace_end(self, t: float, pod: Pod) -> None:
        if pod.state != TERMINATING:
            return
        self.drain(pod, t)
        if pod.state == GONE:
            return
        self.kill(pod, t, "killed", 0)

    def kill(self, pod: Pod, t: float, status: str, http: int) -> None:
        victims = [(pod.inflight.pop(rid), tokens) for rid, tokens in pod.engine.kill_all(t) if rid in pod.inflight]
        victims += [(req, 0) for req in pod.inflight.values()]  # P/D: held outside the engine (sidecar, kept KV)
        pod.inflight.clear()
        for req, tokens in victims:
            self.record(req, t, status, http, tokens)
        for req, _ in victims:  # then the other pod of a P/D pair drops them (all recorded first)
            self.leave_partner(t, req, pod, notify=False)
        self.pod_gone(pod, t)

    def pod_gone(self, pod: Pod, t: float) -> None:
        prev = pod.state
        if prev == READY and pod.standby is None:
            self.router.remove_pod(pod.model, pod.routed)
        d = self.dep(pod.variant)
        if pod.to_sleep and prev == TERMINATING:
            self.fall_asleep(pod, t)
            return
        pod.state = GONE
        (d.standby if pod.standby else d.pods).remove(pod)
        if prev in (STARTING, READY, TERMINATING, ASLEEP):
            self.release_gpus(pod, d)
        self.pod_ended(pod, t, "deleted")
        self.schedule_pending()

    # ---- the control plane's Actuator and LoadProbe ------------------------------------------------
    def replicas(self, variant: str) -> ReplicaStatus:
        """One pass over the variant's pods (this runs on every view, 10 times a second for WVA's fast loop)."""
        d = self.dep(variant)
        ready: list[str] = []
        pending = starting = terminating = 0
        t = self.t
        for p in d.pods:
            state = p.state
            if state == READY:
                ready.append(p.name)
            elif state == PENDING:
                pending += 1
            elif state == STARTING:  # bound; after its image pull the server loads: phase Running, not Ready
                pending += 1
                if t >= p.running_s:
                    starting += 1
            elif state == TERMINATING:
                terminating += 1
        return ReplicaStatus(d.replicas, tuple(ready), pending, terminating, starting=starting,
                             standby=len(d.standby))

    def scale(self, variant: str, replicas: int) -> None:
        d = self.dep(variant)
        d.replicas = replicas
        self.reconcile(d)

    def router_queue(self) -> dict[str, int]:
        """Requests held for lack of a ready pod (the scale-from-zero signal the view carries)."""
        return {m: len(self.gateway.get(m, [])) for m in self.models}

    def flow_held(self) -> dict[str, int]:
        """Requests flow control holds while the pool is saturated: counted in the time series'
        ``router_queue`` (held at the gateway) but not in the view's scale-from-zero queue."""
        return {m: len(q) for m, q in self.flows.items() if len(q)}

    def load(self, now: float, since: float) -> dict[str, LoadSample]:
        """True engine state (not scraped): KV usage of ready pods, busy fraction since ``since``."""
        out = {}
        for d in self.deps:
            ready = [p for p in d.pods if p.state == READY]
            kvs = [p.engine.kv_usage(now) for p in ready]
            utils = []
            for p in ready:
                busy = p.engine.busy_s
                start = max(p.ready_s or 0.0, since)
                if now > start:
                    utils.append(min(1.0, (busy - p.sample_busy) / (now - start)))
                p.sample_busy = busy
            for p in d.pods:
                if p.state != READY:
                    p.sample_busy = p.engine.busy_s
            out[d.name] = LoadSample(
                kv_usage=tuple(kvs), gpu_util=tuple(utils), waiting=sum(p.engine.num_waiting for p in d.pods),
                running=sum(p.engine.num_running for p in d.pods), completed_ok=self._ok_total[d.name])
        return out
