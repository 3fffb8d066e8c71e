"""Pods, deployments and the GPU pool of the simulated cluster (clock-free state).

A pod goes pending -> starting -> ready -> terminating -> gone:

- pending: created by its deployment, waiting for GPUs (``cluster.gpu_capacity``
  per GPU type; unlimited when not set). Pending pods are scheduled FIFO by
  creation as GPUs free up, like the Kubernetes scheduler's queue.
- starting: GPUs bound, cold start (image pull + model load) for
  ``startup_s`` (x the factor of a ``slow_cold_start`` fault).
- ready: serves requests (the router sees it).
- terminating: removed from the router at once; it finishes what it holds for
  up to ``termination_grace_s`` and then whatever is still running is killed.
  Its GPUs stay bound until it is gone.

Scale-down picks victims the way a Kubernetes ReplicaSet does
(``getPodsToDelete`` / ``ActivePodsWithRanks``): unscheduled (pending) before
scheduled, not-ready (starting) before ready, then the pod that has been
ready for the shortest time, then the newest. Kubernetes does not look at
load — which is exactly how an average-driven scale-down ends up killing a
replica that is serving long requests, the paper's "scale-down instability".
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from scalearena.harness.sim.engine.core import Engine
from scalearena.harness.sim.router import RoutedPod

PENDING: Final = "pending"
STARTING: Final = "starting"
READY: Final = "ready"
TERMINATING: Final = "terminating"
GONE: Final = "gone"
ASLEEP: Final = "asleep"  # sleep mode: holds its GPUs, out of the router, wakes on a scale-up


@dataclass(eq=False)
class Pod:
    name: str
    variant: str
    model: str
    created_s: float
    engine: Any  # its Engine (typed Any so a test may stand a stub in; the simulator's hot paths read it as Engine)
    routed: RoutedPod
    seq: int  # creation order across the cluster
    state: str = PENDING
    ready_s: float | None = None
    grace_end_s: float | None = None
    inflight: dict[int, Any] = field(default_factory=dict)  # request id -> the simulator's request state
    sched_t: float | None = None  # time of this pod's engine event in the simulator's heap
    ver: int = 0
    last_busy: float = 0.0  # engine busy_s at the previous scrape
    last_scrape: float | None = None
    scrape_offset: float | None = None  # its own scrape offset (phases.pod_scrape_s: a real run's pod's), if any
    chained: bool = False  # a scrape of its own is booked (harness/sim/scrapes.py)
    sample_busy: float = 0.0  # engine busy_s at the previous timeseries sample
    link_free_s: float = 0.0  # P/D prefill pod: when its KV link has sent everything queued on it
    # start-up (harness/sim/startup_phases.py, harness/sim/startup.py)
    schedulable_s: float = 0.0  # the scheduler may bind it from then (creation + scheduling delay)
    running_s: float = 0.0  # containers started (after the image pull): Running, not Ready until ready_s
    node: Any = None  # harness.sim.engine.nodes.Node it is bound to (node pools only)
    node_wait_s: float | None = None  # when the cluster autoscaler first counted a node for it
    standby: str | None = None  # "buffer" (warm buffer pod) or "asleep" (sleep mode); None: a replica
    to_sleep: bool = False  # terminating into sleep instead of deletion
    wakes: int = 0
    record: dict[str, Any] = field(default_factory=dict)  # its pods.jsonl row


@dataclass(eq=False)
class Deployment:
    """One variant's Deployment: desired replicas and its pods."""

    spec: Any  # harness.config.scenario.VariantSpec
    latency: Any
    num_gpu_blocks: int
    replicas: int
    pods: list[Pod] = field(default_factory=list)
    counter: int = 0
    kv_hold_timeout_s: float = 480.0  # P/D: cluster.kv_transfer.abort_timeout_s
    standby: list[Pod] = field(default_factory=list)  # warm buffer and slept pods: GPUs held, not replicas

    @property
    def name(self) -> str:
        return self.spec.name

    def count(self, state: str) -> int:
        return sum(1 for p in self.pods if p.state == state)

    def active(self) -> list[Pod]:
        """Pods the ReplicaSet counts towards its replicas (not terminating)."""
        return [p for p in self.pods if p.state in (PENDING, STARTING, READY)]

    def new_engine(self) -> Engine:
        e = self.spec.engine
        return Engine(self.latency, self.num_gpu_blocks, e.block_size, e.max_num_seqs, e.max_waiting_queue,
                      e.max_model_len, e.max_num_batched_tokens, e.enable_prefix_caching, self.kv_hold_timeout_s)

    def pod_name(self) -> str:
        """``<variant>-<n>``; a prefill or decode variant whose name lacks its role gets it inserted
        (``<variant>-<role>-<n>``), so llm-d's role selectors (pod=~".*decode.*",
        endpoint_name=~".*prefill.*") find its pods."""
        role = self.spec.role
        if role == "both" or role in self.spec.name:
            return f"{self.spec.name}-{self.counter}"
        return f"{self.spec.name}-{role}-{self.counter}"

    def victims(self, n: int) -> list[Pod]:
        """The ``n`` pods a ReplicaSet deletes first (see module docstring)."""
        rank = {PENDING: 0, STARTING: 1, READY: 2}

        def key(p: Pod) -> tuple:
            ready_for = -(p.ready_s if p.ready_s is not None else p.created_s)  # shorter ready first
            return (rank[p.state], ready_for, -p.created_s, -p.seq)

        return sorted(self.active(), key=key)[:n]


class GPUPool:
    """GPUs per type; None = unlimited."""

    def __init__(self, capacity: dict[str, int] | None) -> None:
        self.capacity = dict(capacity) if capacity is not None else None
        self.bound: dict[str, int] = {}

    def can_bind(self, gpu: str, n: int) -> bool:
        if self.capacity is None or gpu not in self.capacity:
            return True  # no limit known for this GPU type
        return self.bound.get(gpu, 0) + n <= self.capacity[gpu]

    def bind(self, gpu: str, n: int) -> None:
        self.bound[gpu] = self.bound.get(gpu, 0) + n

    def release(self, gpu: str, n: int) -> None:
        self.bound[gpu] = self.bound.get(gpu, 0) - n
