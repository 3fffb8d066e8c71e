"""Start-ups in the simulator: scheduling, node pools, image pull, weight load, warm-up, sleep mode and
warm buffer pods, each pod's phases written to pods.jsonl.

A mixin of ``loop.Simulation`` beside pods.PodLifecycle (which owns the ReplicaSet part: how many
pods, which to delete). Here: when a pod may be bound (its scheduling delay), where (a node of its
GPU type's pool, bin-packed, else the GPU pool), what happens until it is Ready (the phases drawn
by harness/sim/startup_phases.py), the cluster autoscaler's scans (harness/sim/engine/nodes.py), and the standby
pods a variant keeps besides its replicas: warm buffer pods (started, Ready, out of the router;
a scale-up takes one at once) and slept replicas (vLLM sleep mode: a scale-down drains the pod and
puts it to sleep with its GPUs held; a scale-up wakes it in seconds instead of a cold start).
Standby pods hold GPUs (billed, ``standby_replicas`` in the time series) but are not replicas:
not in the Deployment's counts, not scraped, not routed.

A scenario without ``cold_start``, node pools, sleep mode or a warm buffer takes exactly the
events it took before (the single ``startup_s`` as one Running-not-Ready phase).
"""
from __future__ import annotations

import functools
from typing import Any

from mypy_extensions import trait

from scalearena.harness.config.startup_spec import phase_rng, sample_s
from scalearena.harness.sim.engine.cluster import ASLEEP, GONE, PENDING, READY, STARTING, Deployment, Pod
from scalearena.harness.sim.engine.nodes import Node, NodePool
from scalearena.harness.sim.engine.prefix_cache import PrefixCache
from scalearena.harness.sim.events import (
    CA_SCAN,
    NODE_READY,
    POD_READY,
    POD_SCHEDULABLE,
    STANDBY_EXPIRE,
)
from scalearena.harness.sim.startup_phases import (
    after_bind,
    clip,
    phase,
    pod_record,
    scheduling_delay,
    wake_s,
)
from scalearena.harness.sim.state import SimState


@trait
class StartupLifecycle(SimState):
    """Needs the Simulation's state (see loop.Simulation) and pods.PodLifecycle."""

    sc: Any
    deps: list[Deployment]
    pool: Any
    writer: Any
    node_pools: dict[str, NodePool]  # GPU type -> its pool
    _slow: list[Any]
    _warm: bool

    def init_node_pools(self) -> None:
        """Pools, their initial Ready nodes and their cluster autoscaler's scans (none without pools)."""
        self.node_pools = {}
        sc = self.sc
        for spec in sc.cluster.node_pools:
            np = NodePool(spec, functools.partial(_provisioning_s, spec, sc.seed))
            n0 = spec.initial_nodes
            if n0 is None:  # enough for the pods of the start (replicas + buffer), first-fit like the scheduler
                needs = [v.gpus_per_replica for v in sc.cluster.variants if v.gpu == spec.gpu
                         for _ in range(v.start_replicas + v.warm_buffer)]
                n0 = max(spec.min_nodes, min(spec.max_nodes, _nodes_for(needs, spec.gpus_per_node)))
            for _ in range(n0):
                np.add(0.0, 0.0)
            self.node_pools[spec.gpu] = np
            self.push(0.0, CA_SCAN, np)

    # ---- binding and phases -------------------------------------------------------------------------
    def pod_created(self, pod: Pod, d: Deployment) -> None:
        how = "initial" if self._warm else ("buffer" if pod.standby == "buffer" else "cold")
        pod.record = pod_record(pod.name, pod.variant, pod.created_s, how)
        delay = 0.0 if self._warm else scheduling_delay(d.spec, self.sc.seed, pod.name)
        pod.schedulable_s = pod.created_s + delay
        if delay > 0:
            self.push(pod.schedulable_s, POD_SCHEDULABLE, pod)

    def bind_gpus(self, pod: Pod, d: Deployment) -> bool:
        n = d.spec.gpus_per_replica
        np = self.node_pools.get(d.spec.gpu)
        if np is None:
            if not self.pool.can_bind(d.spec.gpu, n):
                return False
            self.pool.bind(d.spec.gpu, n)
            return True
        node = np.fit(n)
        if node is None:
            return False
        np.bind(node, n)
        pod.node = node
        pod.record["node"] = node.name
        return True

    def release_gpus(self, pod: Pod, d: Deployment) -> None:
        if pod.node is not None:
            self.node_pools[d.spec.gpu].release(pod.node, d.spec.gpus_per_replica)
            pod.node = None
        else:
            self.pool.release(d.spec.gpu, d.spec.gpus_per_replica)

    def start_phases(self, pod: Pod, d: Deployment) -> None:
        """Bound at t: the Pending phases it went through, then the drawn phases until Ready."""
        t, v = self.t, d.spec
        pod.state = STARTING
        rec = pod.record["phases"]
        sched_end = min(pod.schedulable_s, t)
        wait_end = t if pod.node_wait_s is None else max(sched_end, pod.node_wait_s)
        for name, a, b in (("scheduling", pod.created_s, sched_end), ("unschedulable", sched_end, wait_end),
                           ("node_provisioning", wait_end, t)):
            if b > a:
                rec.append(phase(name, a, b))
        image = v.cold_start.image_pull.image if v.cold_start is not None else None
        if self._warm:  # ready at t=0: its node has the image already
            if image is not None and pod.node is not None:
                pod.node.images.setdefault(image, t)
            pod.running_s = t
            self.push(t + 0.0, POD_READY, pod)
            return
        image_at = pod.node.images.get(image) if image is not None and pod.node is not None else None
        phases = after_bind(v, self.sc.seed, pod.name, t, image_at, self._slowed)
        if image is not None and pod.node is not None and image_at is None:
            pod.node.images[image] = phases[0][2] if phases[0][0] == "image_pull" else t  # later pods find it
        rec.extend(phase(*p) for p in phases)
        pod.running_s = phases[0][2] if phases[0][0] == "image_pull" else t
        self.push(phases[-1][2], POD_READY, pod)

    def _slowed(self, seconds: float) -> float:
        """A duration after binding, times every slow_cold_start fault active now (as startup_s always was)."""
        for f in self._slow:
            if f.start_s <= self.t < f.end_s:
                seconds *= f.factor
        return seconds

    def on_schedulable(self, t: float, pod: Pod) -> None:
        if pod.state == PENDING:
            self.schedule_pending()

    # ---- the cluster autoscaler ----------------------------------------------------------------------
    def on_ca_scan(self, t: float, np: NodePool) -> None:
        pods = sorted((p for d in self.deps if d.spec.gpu == np.gpu for p in (*d.pods, *d.standby)
                       if p.state == PENDING and p.schedulable_s <= t), key=lambda p: p.seq)
        needs = [self.dep(p.variant).spec.gpus_per_replica for p in pods]
        nodes, waits = np.scale_up(t, needs)
        for p, waiting in zip(pods, waits, strict=True):
            if waiting and p.node_wait_s is None:
                p.node_wait_s = t
        for i, n in enumerate(nodes):
            self.push(t + np.provisioning(len(np.nodes) - len(nodes) + i), NODE_READY, (np, n))
        for n in np.scale_down(t):
            self.writer.add_event(t, "node_removed", pool=n.pool, node=n.name)
        if nodes:
            self.writer.add_event(t, "node_scale_up", pool=np.spec.name, nodes=[n.name for n in nodes])
        self.push(t + np.spec.scan_interval_s, CA_SCAN, np)

    def on_node_ready(self, t: float, payload: tuple[NodePool, Node]) -> None:
        np, n = payload
        np.mark_ready(n, t)
        self.schedule_pending()

    def node_usage(self, end_s: float) -> dict[str, Any]:
        """summary.json ``node_pools``: node-hours billed and node counts per pool (node pools only)."""
        out: dict[str, Any] = {}
        for np in self.node_pools.values():
            spec, price = np.spec, self.sc.cluster.gpu(np.gpu).price_per_hour
            hours = np.node_seconds(end_s) / 3600.0
            out[spec.name] = {
                "gpu": np.gpu, "gpus_per_node": spec.gpus_per_node, "node_hours": hours,
                "gpu_hours": hours * spec.gpus_per_node, "cost_usd": hours * spec.gpus_per_node * price,
                "nodes_added": sum(1 for n in np.nodes if n.requested_s > 0),
                "nodes_removed": sum(1 for n in np.nodes if n.removed_s is not None),
                "nodes_max": _peak(np.nodes, end_s),
            }
        return out

    # ---- standby pods: warm buffer and sleep mode ----------------------------------------------------
    def take_standby(self, d: Deployment) -> bool:
        """A scale-up's new replica from the standby pods, best first: a Ready buffer pod (at once), a
        slept replica (wakes in seconds), a buffer pod still starting (ahead of a new pod)."""
        t = self.t
        buf = [p for p in d.standby if p.standby == "buffer"]
        asleep = [p for p in d.standby if p.state == ASLEEP]
        pod = next((p for p in buf if p.state == READY), None) or (asleep[-1] if asleep else None) \
            or (buf[0] if buf else None)
        if pod is None:
            return False
        d.standby.remove(pod)
        d.pods.append(pod)
        pod.standby = None
        if pod.state == READY:
            pod.record["phases"].append(phase("promote", t, t))
            self.serve(pod, t)
        elif pod.state == ASLEEP:
            w = wake_s(d.spec, self.sc.seed, pod.name, pod.wakes)
            pod.wakes += 1
            pod.record["phases"].extend([phase("asleep", pod.running_s, t), phase("wake", t, t + w)])
            pod.state, pod.running_s = STARTING, t
            self.push(t + w, POD_READY, pod)
        return True

    def fill_buffer(self, d: Deployment) -> None:
        for _ in range(d.spec.warm_buffer - sum(1 for p in d.standby if p.standby == "buffer")):
            self.create_pod(d, standby="buffer")

    def sleep_slot(self, d: Deployment) -> bool:
        sm = d.spec.sleep_mode
        if sm is None:
            return False
        held = sum(1 for p in d.standby if p.state == ASLEEP) + sum(1 for p in d.pods if p.to_sleep)
        return held < sm.max_sleeping

    def fall_asleep(self, pod: Pod, t: float) -> None:
        """Drained (or its grace ended): the replica sleeps with its GPUs; its KV cache is dropped."""
        d = self.dep(pod.variant)
        d.pods.remove(pod)
        d.standby.append(pod)
        pod.state, pod.standby, pod.to_sleep, pod.running_s = ASLEEP, "asleep", False, t
        if pod.engine.cache is not None:
            pod.engine.cache = PrefixCache()
        keep = d.spec.sleep_mode.keep_s if d.spec.sleep_mode else None
        if keep is not None:
            self.push(t + keep, STANDBY_EXPIRE, (pod, pod.wakes))

    def on_standby_expire(self, t: float, payload: tuple[Pod, int]) -> None:
        pod, wakes = payload
        if pod.state == ASLEEP and pod.wakes == wakes:
            pod.record["phases"].append(phase("asleep", pod.running_s, t))
            self.pod_gone(pod, t)

    def pod_ended(self, pod: Pod, t: float | None, how: str) -> None:
        rec = pod.record
        if not rec:
            return
        if pod.state == ASLEEP and how == "running":
            rec["phases"].append(phase("asleep", pod.running_s, self.t))
        if t is not None:
            rec["phases"] = clip(rec["phases"], t)
        rec["ended_s"] = None if t is None else round(t, 6)
        rec["end"] = rec["end"] or how
        self.writer.add_pod(rec)

    def finish_pods(self) -> None:
        """Run end: every pod still there gets its row; node usage goes to the summary."""
        for d in self.deps:
            for pod in (*d.pods, *d.standby):
                if pod.state != GONE:
                    self.pod_ended(pod, None, "running")
        if self.node_pools:
            self.writer.meta["node_pools"] = self.node_usage(self.t)


def _provisioning_s(spec: Any, seed: int, index: int) -> float:
    """Node ``index`` of the pool's provisioning time (its own generator: independent of other draws)."""
    return sample_s(spec.provisioning_s, phase_rng(seed, "node", spec.name, index))


def _nodes_for(needs: list[int], per_node: int) -> int:
    free: list[int] = []
    for g in needs:
        i = next((j for j, f in enumerate(free) if f >= g), None)
        if i is None:
            free.append(per_node)
            i = len(free) - 1
        free[i] -= g
    return len(free)


def _peak(nodes: list[Node], end_s: float) -> int:
    edges = sorted([(n.requested_s, 1) for n in nodes]
                   + [(n.removed_s, -1) for n in nodes if n.removed_s is not None], key=lambda e: (e[0], e[1]))
    live = peak = 0
    for _, step in edges:
        live += step
        peak = max(peak, live)
    return peak
