"""The seams a backend implements: Clock, MetricsSource, Actuator, LoadProbe.

Everything between a metric sample and a replica change happens in the one
control plane (``harness.control.plane``); a backend only says what time it
is, what the metrics say, what its replicas are doing, and how to change
them. The simulator, local processes and Kubernetes then differ in these
adapters and in their lifecycle (start pods, send load, stop), never in how
a view is built or a decision applied.

* ``Clock`` -- the time policies and rows are stamped with: virtual on sim
  (the event loop moves it), scenario time derived from the wall clock on
  local/kube (``(wall - t0) x time_scale``).
* ``MetricsSource`` -- what a policy may read: the upstream queries of
  ``controllers.base.MetricsReader``, the latest sample of every pod (what
  the view carries), and raw PromQL (``query``, declared on ``MetricsReader`` because policies
  send it, and ``query_range``; the seam
  the PromQL-over-memory engine plugs into). Implemented by
  ``harness.metrics.memory.MemoryMetrics`` (sim) and
  ``harness.metrics.prometheus.PrometheusMetrics`` (local, kind, cluster).
* ``Actuator`` -- the owner of the replicas: reports their state
  (``replicas``) and changes the desired count (``scale``). Sim: a simulated
  Deployment; local: engine processes (pods.PodSet); kube: the scale
  subresource.
* ``LoadProbe`` -- the harness's own instruments for the time series (the
  true KV usage, queue lengths and completions at sample time) and the
  gateway queue the view reports. Never handed to a policy.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, Protocol

from scalearena.controllers.base import MetricsReader, PodMetrics


class Clock(Protocol):
    def now(self) -> float:
        """Seconds since the run's start, in scenario time."""
        ...


class VirtualClock:
    """The simulator's clock: the event loop sets ``t``; nothing else moves it."""

    __slots__ = ("t",)

    def __init__(self, t: float = 0.0) -> None:
        self.t = t

    def now(self) -> float:
        return self.t


class WallClock:
    """Scenario time on real processes: ``(wall - t0) x time_scale``; ``wall`` is injectable for tests.

    ``t0`` is 0 until the run starts (the backend sets it when load begins); ``from_wall`` maps a
    wall-clock timestamp (a Prometheus sample time) onto the same axis.
    """

    def __init__(self, time_scale: float = 1.0, wall: Callable[[], float] = time.time, t0: float = 0.0) -> None:
        self.time_scale, self.wall, self.t0 = time_scale, wall, t0

    def now(self) -> float:
        return (self.wall() - self.t0) * self.time_scale

    def from_wall(self, ts: float) -> float:
        return (ts - self.t0) * self.time_scale


class MetricsSource(MetricsReader, Protocol):
    """What a policy may read. Every read raises ``MetricsUnavailable`` when the source cannot answer."""

    def evaluate_at(self, now: float) -> None:
        """Answer the queries that follow as of ``now`` (memory: virtual time; Prometheus: ignored,
        it always answers at its own present)."""
        ...

    def latest_pod_samples(self, variant: str) -> list[PodMetrics]:
        """The newest fresh sample of every pod of a variant, stamped in the Clock's time."""
        ...

    def query_range(self, expr: str, start: float, end: float, step: float) -> list[dict[str, Any]]:
        """PromQL range query -> Prometheus' JSON ``result`` matrix."""
        ...


class ReplicaStatus(NamedTuple):
    """One variant's replicas as its owner sees them now (a NamedTuple: built on every view, cheaply)."""

    spec: int  # desired replicas currently set (Deployment spec.replicas)
    ready: tuple[str, ...]  # names of the pods serving
    pending: int  # created, not ready yet (scheduling + cold start)
    terminating: int
    target_exists: bool = True  # False: the scale target is missing (Kubernetes only)
    starting: int = 0  # of ``pending``: containers running, not Ready yet (phase Running); the rest are Pending
    standby: int = 0  # pods held ready or asleep besides the replicas (warm buffer, sleep mode): GPUs held


class Actuator(Protocol):
    def replicas(self, variant: str) -> ReplicaStatus: ...

    def scale(self, variant: str, replicas: int) -> None:
        """Set the desired replicas (already clamped to the variant's bounds by the control plane)."""
        ...


class LoadSample(NamedTuple):
    """What the harness measures of one variant at a sample time (timeseries ground truth)."""

    kv_usage: tuple[float, ...]  # per ready pod, 0..1
    gpu_util: tuple[float, ...]  # per ready pod with a known value, busy fraction since the last sample
    waiting: int  # summed over the variant's pods
    running: int
    completed_ok: int | None  # OK completions since the run began; None: counted after the run (kube)


class LoadProbe(Protocol):
    def router_queue(self) -> Mapping[str, int]:
        """model -> requests held at the gateway; a model it cannot tell is absent."""
        ...

    def load(self, now: float, since: float) -> Mapping[str, LoadSample]:
        """variant -> its load at ``now``; ``since`` is the previous sample time (utilisation window)."""
        ...
