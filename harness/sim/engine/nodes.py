"""GPU nodes of a pool and the cluster autoscaler that adds and removes them (clock-free state).

What it follows (kubernetes/autoscaler cluster-autoscaler, FAQ "How does scale-up work?" and "How
does scale-down work?"): every ``--scan-interval`` it looks at the pods that cannot be scheduled;
those that would fit on nodes already being provisioned wait for them, for the rest it asks for as
many new nodes as a bin-packing of the pending pods needs, never past the pool's node limit. A
requested node becomes Ready (GPUs allocatable) after its provisioning time. A node with no pod
is unneeded; once unneeded for ``--scale-down-unneeded-time``, and no scale-up happened in the last
``--scale-down-delay-after-add``, it is removed (never below the pool's minimum). The unneeded timer
starts at the first scan that finds the node empty, as upstream tracks unneeded nodes per loop.

Not modelled: moving pods off an under-utilised node so it can be removed (upstream drains nodes
below --scale-down-utilization-threshold 0.5 when their pods fit elsewhere; a vLLM pod moved is a
new cold start), scale-up failures and max-node-provision-time, other node groups to pick from.

Placement (the scheduler's part): a pod goes to a Ready node with enough free GPUs, the fullest
first (bin-packing, as GPU clusters configure the scheduler's MostAllocated strategy so empty nodes
can go), ties by node creation order. A node keeps the images it pulled.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(eq=False)
class Node:
    name: str
    pool: str
    gpus: int
    requested_s: float
    ready_s: float | None = None  # None while provisioning
    removed_s: float | None = None
    free: int = 0
    images: dict[str, float] = field(default_factory=dict)  # image -> time its pull completes on this node
    unneeded_since: float | None = None
    pods: int = 0

    @property
    def ready(self) -> bool:
        return self.ready_s is not None and self.removed_s is None


class NodePool:
    """One pool's nodes. ``provisioning`` draws one node's provisioning time from its index."""

    def __init__(self, spec: Any, provisioning: Callable[[int], float]) -> None:
        self.spec = spec
        self.provisioning = provisioning
        self.nodes: list[Node] = []  # every node ever requested, in creation order
        self.last_scale_up_s = -float("inf")
        self._count = 0

    @property
    def gpu(self) -> str:
        return str(self.spec.gpu)

    def live(self) -> list[Node]:
        return [n for n in self.nodes if n.removed_s is None]

    def add(self, t: float, ready_at: float | None) -> Node:
        """A node requested at ``t`` (Ready at ``ready_at``; None: the caller marks it when its event fires)."""
        n = Node(f"{self.spec.name}-{self._count}", self.spec.name, self.spec.gpus_per_node, t)
        self._count += 1
        if ready_at is not None and ready_at <= t:
            n.ready_s, n.free = t, n.gpus
        self.nodes.append(n)
        return n

    def mark_ready(self, n: Node, t: float) -> None:
        if n.removed_s is None and n.ready_s is None:
            n.ready_s, n.free = t, n.gpus

    def fit(self, gpus: int) -> Node | None:
        """The Ready node a pod needing ``gpus`` goes to: the fullest that fits, then the oldest."""
        best = None
        for n in self.nodes:
            if n.ready and n.free >= gpus and (best is None or n.free < best.free):
                best = n
        return best

    def bind(self, n: Node, gpus: int) -> None:
        n.free -= gpus
        n.pods += 1
        n.unneeded_since = None

    def release(self, n: Node, gpus: int) -> None:
        n.free += gpus
        n.pods -= 1

    def scale_up(self, t: float, pending: list[int]) -> tuple[list[Node], list[bool]]:
        """Pending pods' GPU needs (in scheduling order) -> (nodes to request now, per pod: whether a node
        being provisioned, requested now or before, is counted for it). Pods are packed onto the
        provisioning nodes' GPUs first, the rest first-fit onto new nodes up to ``max_nodes``."""
        spare = [n.gpus for n in self.live() if n.ready_s is None]  # provisioning nodes hold no pod yet
        new: list[int] = []
        waits: list[bool] = []
        room = self.spec.max_nodes - len(self.live())
        for g in pending:
            slot = next((i for i, s in enumerate(spare) if s >= g), None)
            if slot is not None:
                spare[slot] -= g
                waits.append(True)
                continue
            slot = next((i for i, s in enumerate(new) if s >= g), None)
            if slot is None and len(new) < room:
                new.append(self.spec.gpus_per_node)
                slot = len(new) - 1
            if slot is not None:
                new[slot] -= g
            waits.append(slot is not None)
        nodes = [self.add(t, None) for _ in new]
        if nodes:
            self.last_scale_up_s = t
        return nodes, waits

    def scale_down(self, t: float) -> list[Node]:
        """Remove the nodes unneeded long enough (newest first, keeping ``min_nodes``)."""
        for n in self.live():
            if n.ready and n.pods == 0:
                if n.unneeded_since is None:
                    n.unneeded_since = t
            else:
                n.unneeded_since = None
        if t - self.last_scale_up_s < self.spec.scale_down_delay_after_add_s:
            return []
        live = len(self.live())
        out: list[Node] = []
        for n in reversed(self.live()):
            if live - len(out) <= self.spec.min_nodes:
                break
            if n.unneeded_since is not None and t - n.unneeded_since >= self.spec.scale_down_unneeded_s:
                n.removed_s = t
                out.append(n)
        return out

    def node_seconds(self, end_s: float) -> float:
        """Node-seconds billed: from the request (the VM runs while it boots) to removal or ``end_s``."""
        return sum(min(end_s, n.removed_s if n.removed_s is not None else end_s) - n.requested_s for n in self.nodes)
