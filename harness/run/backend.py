"""The Backend protocol: what every cluster backend (sim, local, kind, kwok, cluster) offers.

``preflight`` raises the ``UserError`` a run of any of the plans would raise for something missing outside
the scenario (a tool, a binary, objects that do not render), before any run starts and before the CLI
prints anything or makes the --out folder; it does no cluster work. Each backend says what it needs there,
so the runner names no backend.

``run`` drives one (scenario, autoscaler) pair to the end and fills the
``RunWriter`` as it goes: a ``RequestRecord`` for every request exactly once,
a ``TimeseriesRecord`` per variant per sample interval, every decision, and
the run's metadata (``writer.meta``). It calls ``writer.checkpoint()`` now and
then; the caller (harness.run.runner.execute) calls ``writer.finish()`` after
``run`` returns and ``writer.abort()`` if it raises. ``progress(now_s,
end_s)`` is called now and then with the run's (virtual or wall) time.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from scalearena.controllers.base import AutoscalerConfig
from scalearena.harness.config.scenario import Scenario
from scalearena.harness.config.suite import RunPlan
from scalearena.reports.results import RunWriter

Progress = Callable[[float, float], None]


class Backend(Protocol):
    def preflight(self, plans: Sequence[RunPlan]) -> None: ...

    def run(self, scenario: Scenario, autoscaler: AutoscalerConfig, writer: RunWriter,
            progress: Progress | None = None) -> None: ...
