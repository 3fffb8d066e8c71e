"""The wall-clock loop driver (harness/control/loop.py) on virtual time: when it decides, samples and stops."""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from scalearena.harness.control.loop import LoopHooks, WallLoop
from scalearena.harness.control.ports import VirtualClock


class FakePolicy:
    period_s = 30.0
    fast_period_s: float | None = 5.0


class FakePlane:
    """Records every pass with its time; stands in for ControlPlane (the loop only calls these)."""

    def __init__(self, clock: VirtualClock, policy: Any = FakePolicy) -> None:
        self.clock, self.policy = clock, policy
        self.calls: list[tuple[str, float]] = []
        self.last_sample = 0.0
        self.published: Any = None  # a published target's HPA (harness/control/actuation.py): set by a test

    @property
    def fast_period_s(self) -> float | None:
        return getattr(self.policy, "fast_period_s", None)

    def decide(self, fast: bool = False, now: float | None = None) -> list:
        assert now == self.clock.now()
        self.calls.append(("fast" if fast else "decide", now))
        return []

    def sync_published(self, now: float | None = None) -> None:
        self.calls.append(("sync", now))

    def sample(self, now: float | None = None) -> list:
        assert now is not None
        self.calls.append(("sample", now))
        self.last_sample = now
        return [now]


class Recorder(LoopHooks):
    def __init__(self, plane: FakePlane) -> None:
        self.plane = plane

    def tick(self, t: float) -> None:
        self.plane.calls.append(("tick", t))

    def after_decide(self, t: float) -> None:
        self.plane.calls.append(("after", t))

    def sampled(self, t: float, rows: Any) -> None:
        assert rows == [t]
        self.plane.calls.append(("sampled", t))


def virtual(scale: float = 1.0) -> tuple[VirtualClock, Any]:
    clock = VirtualClock(0.0)

    def sleep(wall_s: float) -> None:
        clock.t += wall_s * scale

    return clock, sleep


def times(plane: FakePlane, kind: str) -> list[float]:
    return [t for k, t in plane.calls if k == kind]


def test_passes_fire_on_their_periods_and_the_end_closes_with_a_sample() -> None:
    # time scale 2: a 1.25 s wall tick is 2.5 scenario s, so ticks land on 0, 2.5, 5, ..., 60 exactly
    clock, sleep = virtual(scale=2.0)
    plane = FakePlane(clock)
    WallLoop(plane, clock, end_s=60.0, sample_every_s=10.0, load_alive=lambda: False,  # type: ignore[arg-type]
             tick_s=1.25, hooks=Recorder(plane), sleep=sleep).run()
    assert times(plane, "decide") == [0.0, 30.0]  # every 30 s from the first tick; at 60 the run is over
    assert times(plane, "fast") == [5.0 * k for k in range(12)]  # 0, 5, ..., 55
    # the grid k x 10 (the first at one interval, as the simulator), then one closing sample at the end
    assert times(plane, "sample") == [10.0, 20.0, 30.0, 40.0, 50.0, 60.0]
    assert times(plane, "sampled") == times(plane, "sample")
    assert len(times(plane, "tick")) == 24  # ticks at 0 .. 57.5; the one at 60 ends the loop
    # within a tick: hook, decide, fast, after_decide, sample (the simulator's order at equal times)
    at30 = [k for k, t in plane.calls if t == 30.0]
    assert at30 == ["tick", "decide", "fast", "after", "sample", "sampled"]


def test_a_published_target_is_synced_every_hpa_period_after_the_decisions() -> None:
    clock, sleep = virtual(scale=2.0)
    plane = FakePlane(clock)
    plane.published = SimpleNamespace(sync_period_s=15.0)
    WallLoop(plane, clock, end_s=60.0, sample_every_s=10.0, load_alive=lambda: False,  # type: ignore[arg-type]
             tick_s=1.25, hooks=Recorder(plane), sleep=sleep).run()
    assert times(plane, "sync") == [0.0, 15.0, 30.0, 45.0]  # every 15 s from 0; at 60 the run is over
    # at 30: decisions, then the HPA's sync, then the sample (the simulator's HPA_SYNC order, events.py)
    assert [k for k, t in plane.calls if t == 30.0] == ["tick", "decide", "fast", "sync", "after", "sample", "sampled"]


def test_a_load_generator_that_overstays_is_cut_off() -> None:
    clock, sleep = virtual()
    plane = FakePlane(clock, policy=None)  # sampling only: an in-cluster autoscaler decides
    WallLoop(plane, clock, end_s=20.0, sample_every_s=10.0, load_alive=lambda: True,  # type: ignore[arg-type]
             overstay_s=15.0, tick_s=5.0, sleep=sleep).run()
    assert times(plane, "decide") == times(plane, "fast") == []
    # grid 10, 20, 30 while the load runs on; at 35 = 20 + 15 the loop ends and closes with a sample at 35
    assert times(plane, "sample") == [10.0, 20.0, 30.0, 35.0]


def test_sample_at_start_and_no_catch_up_burst_after_a_stall() -> None:
    clock = VirtualClock(0.0)
    walls = iter([1.0, 34.0] + [1.0] * 100)  # the second tick stalls 34 s (a slow API server)

    def sleep(wall_s: float) -> None:
        clock.t += next(walls)

    plane = FakePlane(clock, policy=None)
    WallLoop(plane, clock, end_s=50.0, sample_every_s=10.0, load_alive=lambda: False,  # type: ignore[arg-type]
             tick_s=1.0, sample_at_start=True, sleep=sleep).run()
    # t = 0 (start), grid 10, 20, ...: the tick at 35 samples once for the missed 10/20/30 and the grid
    # moves on to 40; then 40; the tick at 50 ends the run and closes with a sample at 50
    assert times(plane, "sample") == [0.0, 35.0, 40.0, 50.0]


def test_stopped_ends_the_loop_at_once() -> None:
    clock, sleep = virtual()
    plane = FakePlane(clock)
    WallLoop(plane, clock, end_s=60.0, sample_every_s=10.0, load_alive=lambda: True,  # type: ignore[arg-type]
             tick_s=1.0, sleep=sleep, stopped=lambda: clock.t >= 3.0).run()
    assert times(plane, "decide") == [0.0] and times(plane, "sample") == [3.0]  # ticks 0, 1, 2; closing sample


def test_first_tick_is_the_loops_phase_against_the_load() -> None:
    from scalearena.harness.control.loop import first_tick

    # an HPA created 39.5 s before the load syncs at -39.5 + 15k: -24.5, -9.5, 5.5, 20.5, ... -> first at 5.5
    assert first_tick(15.0, 39.5) == pytest.approx(5.5)
    assert first_tick(15.0, 0.0) == 0.0  # no lead: every loop starts with the load, as before
    assert first_tick(15.0, 30.0) == 0.0  # a whole number of periods: a tick falls on the load's start
    assert first_tick(30.0, 8.0) == pytest.approx(22.0)  # WVA's 30 s loop, 8 s before: -8, 22, 52, ...


def test_a_lead_puts_every_decision_and_sync_in_the_real_controllers_phase() -> None:
    clock, sleep = virtual()
    plane = FakePlane(clock)
    plane.published = SimpleNamespace(sync_period_s=15.0)
    WallLoop(plane, clock, end_s=60.0, sample_every_s=10.0, load_alive=lambda: False,  # type: ignore[arg-type]
             tick_s=0.5, hooks=Recorder(plane), sleep=sleep, lead_s=39.5).run()
    # the policy's 30 s loop began 39.5 s before: -39.5, -9.5, 20.5, 50.5; the sync's 15 s: 5.5, 20.5, 35.5, 50.5
    # (ticks every 0.5 s land on the half seconds exactly)
    assert times(plane, "decide") == [20.5, 50.5]
    assert times(plane, "sync") == [5.5, 20.5, 35.5, 50.5]


def test_a_loop_started_before_the_load_samples_on_the_grid_from_the_loads_start() -> None:
    # kube starts its loop at t = -3 (Locust begins the load 3 s later): one sample then, then 0, 5, 10, ...,
    # the simulator's grid, not -3 + 5k = 2, 7, 12 (which put every real step seen 2-3 s off the simulator's)
    clock = VirtualClock(-3.0)

    def sleep(wall_s: float) -> None:
        clock.t += wall_s

    plane = FakePlane(clock, policy=None)
    WallLoop(plane, clock, end_s=12.0, sample_every_s=5.0, load_alive=lambda: False,  # type: ignore[arg-type]
             tick_s=0.5, sample_at_start=True, sleep=sleep).run()
    assert times(plane, "sample") == [-3.0, 0.0, 5.0, 10.0, 12.0]  # the last one closes the run at its end
