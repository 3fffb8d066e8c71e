"""The embedded simulated cluster: virtual time, one heap-ordered event loop.

Everything the other backends do with processes or Kubernetes happens here as
events on a virtual clock: arrivals, the router (harness.sim.router), one
vLLM-like engine per pod (harness.sim.engine.core), pod lifecycle and scale-down
ordering (harness.sim.engine.cluster), Prometheus-like scrapes into
``MemoryMetrics``, the autoscaler's ``decide`` / ``decide_fast`` loops and
faults. A simulated hour takes seconds because engines jump from event to
event instead of stepping token by token.

Request outcomes (every request gets exactly one RequestRecord):
ok 200; ``rejected`` 429 (router admission, full gateway queue, full engine
waiting queue); ``killed`` 0 (still running when its pod's termination grace
ran out); ``error`` 500 (its pod crashed); ``too_long`` 400 (prompt + max_tokens
can never fit the engine: max_model_len or the whole KV cache);
``timeout`` 0 (the client gave up after ``client.timeout_s``, or the run
ended with it still in flight).

Same-time events run in a fixed order (engine events, pod transitions,
arrivals, timeouts, faults, scrapes, decisions, samples, then a sequence
number), so a scenario and seed give byte-identical results.

The package: ``loop`` (the event heap, scrapes, decisions, samples, faults),
``requests`` (arrival, routing, engine progress, one record per request),
``pods`` (ReplicaSet reconcile, GPU scheduling, cold start, termination, and
what the control plane reads and changes of them).
"""
from __future__ import annotations

import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from scalearena.controllers.base import AutoscalerConfig
from scalearena.harness.config.scenario import Scenario
from scalearena.harness.config.suite import RunPlan
from scalearena.harness.run.backend import Progress
from scalearena.harness.sim.loop import Simulation
from scalearena.reports.results import RunWriter

__all__ = ["SimBackend", "Simulation", "scratch_run"]


class SimBackend:
    """``Backend`` for ``--cluster sim``."""

    def __init__(self) -> None:
        """No options: the simulator does what the scenario says (harness/run/registry.py SimOptions)."""

    def preflight(self, plans: Sequence[RunPlan]) -> None:
        """Nothing outside the process: a scenario that validated runs."""

    def run(self, scenario: Scenario, autoscaler: AutoscalerConfig, writer: RunWriter,
            progress: Progress | None = None) -> None:
        from dataclasses import asdict

        from scalearena.workloads.generate import WorkloadStats, iter_requests

        stats = WorkloadStats()  # filled in as the stream is consumed
        try:
            Simulation(scenario, autoscaler, writer, iter_requests(scenario, stats), progress).run()
        finally:
            writer.meta["workload_generation"] = {
                "requests": list(stats.requests), "clipped": stats.clipped,
                "traces": [asdict(t) if t is not None else None for t in stats.traces],
            }


def scratch_run(sc: Any, cfg: Any, requests: Iterable[Any], meta: dict[str, Any]) -> tuple[dict[str, Any],
                                                                                           list[dict[str, Any]]]:
    """Simulate ``sc`` under ``cfg`` with ``requests`` in a temporary folder that is removed afterwards; the
    summary and the decisions. For runs whose figures are all that is wanted: the static pools' sizing probes
    (harness/sizing/static.py) and validate's signal probe (harness/objects/signal_probe.py)."""
    with tempfile.TemporaryDirectory(prefix="scalearena-scratch-") as tmp:
        writer = RunWriter(Path(tmp), meta)
        try:
            Simulation(sc, cfg, writer, requests).run()
        except BaseException:
            writer.abort("scratch run failed")
            raise
        return writer.finish(), writer.decisions
