"""ControlPlane's fast loop: called only while a variant at 0 spec replicas has requests queued at
the gateway for its model, on a view without pod samples (the in-cluster controller's
``reconcile_fast`` gate, harness/kube/wva/controller.py)."""
from __future__ import annotations

from typing import Any

from scalearena.controllers.base import Decision, Reason
from scalearena.harness.control.plane import ControlPlane
from scalearena.harness.control.ports import ReplicaStatus, VirtualClock
from scalearena.harness.control.view import VariantInfo


class Spy:
    period_s = 30.0
    fast_period_s = 0.1

    def __init__(self) -> None:
        self.views: list[Any] = []

    def decide(self, now: float, view: Any) -> list[Decision]:
        return []

    def decide_fast(self, now: float, view: Any) -> list[Decision]:
        self.views.append(view)
        v = view.variant("a")
        return [Decision("a", v.spec_replicas, 1, (Reason("spy", "wake"),))]


class Ports:
    """Actuator, LoadProbe and MetricsSource in one: spec replicas and gateway queue set by the test."""

    def __init__(self) -> None:
        self.spec = {"a": 0, "b": 2}
        self.queue = {"m": 0, "n": 0}
        self.scaled: list[tuple[str, int]] = []
        self.pod_reads = 0

    def replicas(self, variant: str) -> ReplicaStatus:
        return ReplicaStatus(self.spec[variant], (), 0, 0)

    def scale(self, variant: str, replicas: int) -> None:
        self.scaled.append((variant, replicas))
        self.spec[variant] = replicas

    def router_queue(self) -> dict[str, int]:
        return dict(self.queue)

    def evaluate_at(self, now: float) -> None:
        pass

    def latest_pod_samples(self, variant: str) -> list[Any]:
        self.pod_reads += 1
        return []


class Writer:
    def __init__(self) -> None:
        self.decisions: list[tuple[float, str]] = []

    def add_decision(self, t: float, label: str, dec: Decision, loop: str = "main") -> None:
        self.decisions.append((t, loop))

    def add_timeseries(self, row: Any) -> None:
        pass


def _plane() -> tuple[ControlPlane, Spy, Ports, Writer]:
    spy, ports, writer = Spy(), Ports(), Writer()
    variants = [VariantInfo("a", "m", "A100-80GB", 1, 1.0, 0, 4), VariantInfo("b", "n", "A100-80GB", 1, 1.0, 0, 4)]
    plane = ControlPlane(spy, "spy", variants, clock=VirtualClock(), metrics=ports, actuator=ports,  # type: ignore[arg-type]
                         probe=ports, writer=writer)
    return plane, spy, ports, writer


def test_fast_loop_skips_the_policy_unless_a_variant_at_zero_has_requests_queued():
    plane, spy, ports, writer = _plane()
    assert plane.decide(fast=True, now=0.1) == []  # nothing queued anywhere
    ports.queue["n"] = 3
    assert plane.decide(fast=True, now=0.2) == []  # queued for n, but its variant b has 2 spec replicas
    assert spy.views == [] and writer.decisions == []
    ports.queue["m"] = 1
    out = plane.decide(fast=True, now=0.3)  # a is at 0 with 1 queued for m: the policy runs
    assert [(d.variant, d.desired_replicas) for d in out] == [("a", 1)]
    assert ports.scaled == [("a", 1)] and writer.decisions == [(0.3, "fast")]
    assert len(spy.views) == 1 and all(v.pods == () for v in spy.views[0].variants)
    assert ports.pod_reads == 0  # the fast view reads no pod samples
    assert plane.decide(fast=True, now=0.4) == []  # a now has 1 spec replica: gated again
    assert len(spy.views) == 1
