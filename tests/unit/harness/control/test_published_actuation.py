"""WVA's published actuation (harness/control/actuation.py): a decision reaches the Deployment at the
first HPA sync after the first scrape that follows it, 10 Pods per sync at most; direct only from 0
replicas and on the fast loop.

The scrape grid of these tests: every 15 s from a phase of 0.94 s (0.94, 15.94, 30.94, ...), as
the simulator offsets its scrapes from its decisions (harness/sim/loop.py).
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from scalearena.controllers.base import Decision, Reason
from scalearena.harness.config.scenario import scenario_from_data
from scalearena.harness.control.actuation import POD_STEP, PublishedActuation
from scalearena.harness.control.plane import ControlPlane
from scalearena.harness.control.ports import VirtualClock
from scalearena.harness.control.view import VariantInfo
from scalearena.harness.sim.backend import Simulation
from scalearena.reports.results import RunWriter
from scalearena.workloads.generate import build_requests
from tests.unit.harness.control.test_control_plane_fast import Ports, Writer

ROOT = Path(__file__).resolve().parents[4]
PHASE = 0.94


def grid(now: float) -> float | None:
    """The last scrape at or before ``now`` on the 15 s grid from ``PHASE``."""
    return None if now < PHASE else PHASE + 15.0 * math.floor((now - PHASE) / 15.0)


def test_a_decision_lands_at_the_first_sync_after_the_next_scrape() -> None:
    act = PublishedActuation(grid)
    act.publish("a", 0.0, 1)
    act.publish("a", 60.0, 2)
    assert act.sync("a", 0.0, 1) is None  # no scrape before 0.94: nothing to read
    # sync at 60: the last scrape (45.94) read 1, the Deployment has 1: nothing to write
    assert act.sync("a", 60.0, 1) is None
    # sync at 75: the scrape at 60.94 read the 2 published at 60
    assert act.sync("a", 75.0, 1) == 2
    assert act.sync("a", 90.0, 2) is None  # written: no change


def test_a_value_published_at_a_scrape_waits_for_the_next_one() -> None:
    # the simulator runs a scrape before a same-time decision (events.py): published at 45.94, read at 60.94
    act = PublishedActuation(grid)
    act.publish("a", 0.0, 1)
    act.publish("a", 45.94, 3)
    assert act.scraped("a", 50.0) == 1
    assert act.sync("a", 60.0, 1) is None
    assert act.scraped("a", 61.0) == 3 and act.sync("a", 75.0, 1) == 3


def test_a_repeated_value_keeps_its_first_time() -> None:
    act = PublishedActuation(grid)
    act.publish("a", 10.0, 2)
    act.publish("a", 40.0, 2)  # a hold: the gauge is unchanged, the scrape at 15.94 already read it
    assert act.scraped("a", 16.0) == 2


def test_ten_pods_per_sync_and_nothing_at_zero() -> None:
    act = PublishedActuation(grid)
    act.publish("a", 0.0, 25)
    # up from 3 by at most POD_STEP = 10 per sync: 3 -> 13 -> 23 -> 25
    assert POD_STEP == 10
    assert act.sync("a", 15.0, 3) == 13
    assert act.sync("a", 30.0, 13) == 23
    assert act.sync("a", 45.0, 23) == 25
    act.publish("a", 50.0, 2)
    assert act.sync("a", 75.0, 25) == 15  # down by 10 at most: 25 - 10
    assert act.sync("a", 90.0, 15) == 5
    assert act.sync("a", 105.0, 5) == 2
    assert act.sync("a", 120.0, 0) is None  # the HPA is disabled while its target has 0 replicas
    assert act.sync("b", 120.0, 1) is None  # never published


class Policy:
    """Decides ``want`` for variant a on every call; publishes it (WVA's default actuation)."""
    actuation = "hpa"
    period_s = 30.0
    fast_period_s = 0.1

    def __init__(self) -> None:
        self.want = 1

    def decide(self, now: float, view: Any) -> list[Decision]:
        return [Decision("a", view.variant("a").spec_replicas, self.want, (Reason("spy", "set"),))]

    decide_fast = decide


def _ports(spec: int) -> Ports:
    """test_control_plane_fast's fake, variant a at ``spec`` replicas and one request queued for model m."""
    ports = Ports()
    ports.spec, ports.queue = {"a": spec}, {"m": 1}
    return ports


def _plane(spec: int) -> tuple[ControlPlane, Policy, Ports]:
    policy, ports = Policy(), _ports(spec)
    variants = [VariantInfo("a", "m", "A100-80GB", 1, 1.0, 0, 40)]
    plane = ControlPlane(policy, "spy", variants, clock=VirtualClock(), metrics=ports, actuator=ports,  # type: ignore[arg-type]
                         probe=ports, writer=Writer(), last_scrape=grid)
    return plane, policy, ports


def test_the_control_plane_publishes_and_its_hpa_sync_scales() -> None:
    plane, policy, ports = _plane(spec=1)
    assert plane.published is not None
    policy.want = 3
    plane.decide(now=60.0)
    assert ports.scaled == []  # published only
    plane.sync_published(now=60.0)  # the scrape at 45.94 read nothing yet
    assert ports.scaled == []
    plane.sync_published(now=75.0)  # the scrape at 60.94 read 3
    assert ports.scaled == [("a", 3)]


def test_from_zero_and_on_the_fast_loop_the_control_plane_scales_directly() -> None:
    plane, policy, ports = _plane(spec=0)
    plane.decide(now=10.0)  # at 0 replicas the actuation HPA is disabled: WVA scales itself
    assert ports.scaled == [("a", 1)]
    plane, policy, ports = _plane(spec=0)
    plane.decide(fast=True, now=0.3)  # the fast loop's wake-up (queued requests at 0 replicas)
    assert ports.scaled == [("a", 1)]


def test_a_policy_without_published_actuation_scales_at_once() -> None:
    policy, ports = Policy(), _ports(1)
    policy.actuation = "direct"  # type: ignore[misc]
    policy.want = 2
    plane = ControlPlane(policy, "spy", [VariantInfo("a", "m", "A100-80GB", 1, 1.0, 0, 40)], clock=VirtualClock(),
                         metrics=ports, actuator=ports, probe=ports, writer=Writer(), last_scrape=grid)  # type: ignore[arg-type]
    assert plane.published is None
    plane.decide(now=30.0)
    assert ports.scaled == [("a", 2)]


def test_simulated_wva_moves_its_deployment_one_sync_after_each_decision(tmp_path: Path) -> None:
    data = yaml.safe_load((ROOT / "workloads/scenarios/exp1-staircase.yaml").read_text())
    data.update(duration_s=300, drain_s=0, autoscalers=[{"kind": "wva"}])
    sc = scenario_from_data(data, "exp1")
    w = RunWriter(tmp_path, {})
    Simulation(sc, sc.autoscalers[0], w, build_requests(sc)).run()
    w.finish()
    ts = pd.read_parquet(tmp_path / "timeseries.parquet").set_index("t_s")["spec_replicas"]
    rows = map(json.loads, (tmp_path / "decisions.jsonl").read_text().splitlines())
    moves = [(r["t_s"], r["current_replicas"], r["desired_replicas"]) for r in rows
             if r["desired_replicas"] != r["current_replicas"] and r["current_replicas"] > 0 and r["t_s"] + 15.0 <= sc.window_s]
    assert len(moves) >= 2  # the staircase's steps
    # WVA decides every 30 s from 0; the scrape after a decision at t is at t + phase (phase in (0, 15)),
    # the next HPA sync at t + 15 writes it; samples every 5 s, after a same-time sync (events.py)
    for t, cur, want in moves:
        assert ts[t + 10.0] == cur and ts[t + 15.0] == want, (t, cur, want)
