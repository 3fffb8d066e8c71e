"""Where runs execute: this machine's cores (``local``, the default) or a Ray cluster (``ray``, executor_ray.py).

An executor takes run plans and calls ``on_done`` with each run's outcome (``runner.run_plan``'s RunOutcome:
dir, status, wall_s, summary or error) as it lands. ``LocalExecutor`` keeps one warm process pool for
its whole life, so a tuning study that submits a few runs at a time pays the worker start-up and the
imports once, not per batch; with one job it runs in-process. A suite, a study and the paper
reproduction all go through it.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol

from scalearena.harness.run.interrupts import init_worker, stop_workers
from scalearena.harness.run.outcome import RunOutcome

if TYPE_CHECKING:  # not at run time: the CLI imports this module for EXECUTORS before it loads any scenario
    from scalearena.harness.config.suite import RunPlan

OnDone = Callable[[RunOutcome], None]
EXECUTORS = ("local", "ray")


class Executor(Protocol):
    jobs: int

    def run(self, plans: list[RunPlan], out: Path, on_done: OnDone) -> list[RunOutcome]: ...

    def close(self) -> None: ...


class LocalExecutor:
    """Runs plans on this machine: ``jobs`` worker processes, kept warm between calls of ``run``."""

    def __init__(self, jobs: int, cluster: str = "sim", backend_options: Mapping[str, Any] | None = None) -> None:
        self.jobs = max(1, jobs)
        self.cluster = cluster
        self.backend_options = dict(backend_options or {})
        self._pool: ProcessPoolExecutor | None = None

    def _get_pool(self) -> ProcessPoolExecutor:
        if self._pool is None:
            self._pool = ProcessPoolExecutor(max_workers=self.jobs, initializer=init_worker, initargs=(os.getpid(),))
        return self._pool

    def run(self, plans: list[RunPlan], out: Path, on_done: OnDone) -> list[RunOutcome]:
        from scalearena.harness.run.runner import run_plan

        results: list[RunOutcome] = []
        if self.jobs <= 1 or (len(plans) <= 1 and self._pool is None):
            for p in plans:
                r = run_plan(p, str(out), self.cluster, backend_options=self.backend_options)
                results.append(r)
                on_done(r)
            return results
        pool = self._get_pool()
        try:
            pending: set[Future[RunOutcome]] = {
                pool.submit(_run_in_worker, p, str(out), self.cluster, self.backend_options) for p in plans}
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for f in done:
                    r = f.result()
                    results.append(r)
                    on_done(r)
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)  # queued runs never start
            stop_workers()  # running ones are marked incomplete by their worker, which then exits
            self._pool = None
            raise
        return results

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def __enter__(self) -> LocalExecutor:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def _run_in_worker(plan: RunPlan, out: str, cluster: str, backend_options: dict[str, Any]) -> RunOutcome:
    from scalearena.harness.run.runner import run_plan

    try:
        return run_plan(plan, out, cluster, backend_options=backend_options)
    except KeyboardInterrupt:  # SIGTERM from stop_workers (or the parent's death): the run is marked incomplete
        os._exit(143)


def make_executor(kind: str, jobs: int | None, cluster: str = "sim", address: str | None = None,
                  backend_options: Mapping[str, Any] | None = None) -> Executor:
    """The executor ``--executor`` names (``ray`` needs the optional extra and a reachable cluster); ``jobs``
    None: every CPU, of this machine or of the Ray cluster."""
    if kind == "ray":
        from scalearena.harness.run.executor_ray import RayExecutor

        return RayExecutor(address, jobs, cluster, backend_options)
    return LocalExecutor(jobs if jobs is not None else (os.cpu_count() or 1), cluster, backend_options)


def run_plans(plans: list[RunPlan], out: Path, cluster: str, jobs: int,
              on_done: Callable[[RunOutcome], None],
              backend_options: Mapping[str, Any] | None = None) -> list[RunOutcome]:
    """Execute plans, in worker processes when jobs > 1; ``on_done`` sees each result as it lands. A recipe
    that reads series the backend does not expose is refused before anything runs (exit 2)."""
    from scalearena.harness.objects.recipes import check_series

    for p in plans:
        check_series(p.autoscaler, cluster, (backend_options or {}).get("gateway"))

    with LocalExecutor(jobs if len(plans) > 1 else 1, cluster, backend_options) as ex:
        return ex.run(plans, out, on_done)
