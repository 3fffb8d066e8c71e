"""The wall-clock control loop of local and kube: decide, decide_fast and sample on their periods.

The simulator's event heap schedules the three passes on virtual time; on
real processes one loop polls a ``Clock`` instead, and this is that loop,
once, for both wall-clock backends (they used to carry a copy each, which
had drifted in the order of the passes and the sample grid). Per tick, in
the simulator's order at equal times (events.py: decisions before samples):
the backend's ``tick`` hook (poll processes, fire faults, health checks),
``decide`` when the policy's period is due, ``decide_fast`` when the fast
loop's is, a published target's HPA sync when due, the ``after_decide`` hook (local: start or stop engine processes),
then a sample when the sample grid is due. Samples stay on the grid
``k x sample_every_s`` (no drift, no catch-up burst after a stall). The loop
ends when the run is over and the load generator has stopped, or
``overstay_s`` after the end whatever the load does, or when ``stopped()``
says so; an interruption (``Interrupted``/``KeyboardInterrupt`` raised from
``sleep``) propagates to the backend, which tears down. A last sample closes
the interval since the previous one.

Clock and sleep are injected, kopf-style: a test hands a ``VirtualClock``
and a ``sleep`` that advances it, and the loop runs on virtual time exactly.
Written by hand: it is a dozen lines of scheduling around our own
``ControlPlane``, which no scheduler library knows.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from scalearena.contracts.records import TimeseriesRecord
from scalearena.harness.control.plane import ControlPlane
from scalearena.harness.control.ports import Clock


class LoopHooks:
    """What a backend adds to the loop; every hook is a no-op here."""

    def tick(self, t: float) -> None:
        """Start of every tick, before any decision (poll processes, fire due faults, check health)."""

    def after_decide(self, t: float) -> None:
        """Every tick, after the decision passes and before the sample."""

    def sampled(self, t: float, rows: Sequence[TimeseriesRecord]) -> None:
        """After every sample (checkpoint the results, read back what an in-cluster scaler did)."""


def _never() -> bool:
    return False


def first_tick(period_s: float, lead_s: float) -> float:
    """The first tick at or after the load's start (t = 0) of a loop of ``period_s`` that began ``lead_s`` seconds
    before it and ticks every period from then: a real controller's phase against the load. The upstream HPA
    controller syncs an HPA first one sync period after its creation and then a period after each sync
    (kubernetes pkg/controller/podautoscaler/horizontal.go: ``enqueueHPA`` and ``processNextWorkItem`` call
    ``queue.AddRateLimited``; ``NewDefaultHPARateLimiter`` is a fixed interval of the sync period), so its syncs
    fall at creation + k x period. 0 when ``lead_s`` is 0: every loop starts with the load."""
    return (-lead_s) % period_s if lead_s else 0.0


@dataclass
class WallLoop:
    """One run's wall-clock loop around ``control``. Times are the clock's (scenario seconds);
    ``tick_s`` is wall seconds between ticks (what ``sleep`` is given)."""

    control: ControlPlane
    clock: Clock
    end_s: float  # scenario end (duration + drain)
    sample_every_s: float
    load_alive: Callable[[], bool]
    overstay_s: float = 15.0  # scenario seconds the load may run past end_s before the loop ends anyway
    tick_s: float = 0.05
    sample_at_start: bool = False  # True: a sample at the first tick too (the grid stays k x sample_every_s)
    hooks: LoopHooks = field(default_factory=LoopHooks)
    progress: Callable[[float, float], None] | None = None
    sleep: Callable[[float], None] = time.sleep
    stopped: Callable[[], bool] = _never
    lead_s: float = 0.0  # the control loops began this long before the load (Scenario.phases.control_lead_s)

    def finished(self, t: float) -> bool:
        if self.stopped():
            return True
        return t >= self.end_s and (t >= self.end_s + self.overstay_s or not self.load_alive())

    def run(self) -> None:
        policy = self.control.policy
        period = policy.period_s if policy is not None else None
        fast = self.control.fast_period_s
        sync = self.control.published.sync_period_s if self.control.published is not None else None
        next_fast = 0.0
        next_decide = first_tick(period, self.lead_s) if period else 0.0
        next_sync = first_tick(sync, self.lead_s) if sync else 0.0
        next_sample = self.sample_every_s
        if self.sample_at_start:
            t = self.clock.now()
            self._sample(t)
            # the next point of the grid k x sample_every_s, as the simulator samples: a kube run starts its loop a
            # few seconds before the load (Locust's lead), and a grid from there put every step seen some seconds
            # off the simulator's samples
            next_sample = (math.floor(t / self.sample_every_s) + 1) * self.sample_every_s
        while True:
            t = self.clock.now()
            if self.finished(t):
                break
            self.hooks.tick(t)
            if period and t >= next_decide:
                self.control.decide(now=t)
                next_decide = t + period
            if fast and t >= next_fast:
                self.control.decide(fast=True, now=t)
                next_fast = t + float(fast)
            if sync and t >= next_sync:  # the actuation HPA of a published target (harness/control/actuation.py)
                self.control.sync_published(now=t)
                next_sync = t + sync
            self.hooks.after_decide(t)
            if t >= next_sample:
                self._sample(t)
                missed = int((t - next_sample) // self.sample_every_s)  # ticks stalled past whole intervals
                next_sample += self.sample_every_s * (missed + 1)
            if self.progress:
                self.progress(min(t, self.end_s), self.end_s)
            self.sleep(self.tick_s)
        t = self.clock.now()
        if t - self.control.last_sample > 1e-9:
            self._sample(t)

    def _sample(self, t: float) -> None:
        self.hooks.sampled(t, self.control.sample(t))
