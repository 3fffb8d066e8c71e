"""Run orchestration: one run, or a suite's plans in parallel.

Each run gets its own folder and ``RunWriter``; the backend (sim, local, kind,
cluster) fills it as the run goes. ``suite.json`` is rewritten atomically
after every finished run, so an interrupted suite keeps everything it measured
and says which runs are missing. Simulated runs are independent and
CPU-bound, so a suite fans them out over processes (``--jobs``, default all
cores); runs on real processes or clusters share the host and go one at a time.
On SIGINT/SIGTERM (harness/run/interrupts.py) queued runs are cancelled, workers
are stopped, and rows of suite.json that never finished say ``interrupted``
(a folder with a summary marked incomplete) or ``cancelled`` (never started).
"""
from __future__ import annotations

import json
import os
import time
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from scalearena.contracts.errors import UserError
from scalearena.harness.config.frontier_spec import FRONTIER_FILE
from scalearena.harness.config.suite import RunPlan
from scalearena.harness.run.interrupts import held
from scalearena.harness.run.meta import git_sha, run_meta, versions
from scalearena.harness.run.outcome import RunOutcome
from scalearena.harness.run.registry import build_backend, entry
from scalearena.reports.results import RunWriter, atomic_write_json

Progress = Callable[[float, float], None]


def preflight(plans: list[RunPlan], cluster: str, options: Any) -> None:
    """The backend's own checks of every plan (``Backend.preflight``: a missing tool, a binary not built, objects
    that do not render) before any run starts, so bad input in any run of a suite is one error line before the
    --out folder exists, not a "bad input" run in a half-written folder."""
    entry(cluster).build(options).preflight(plans)


def execute(plan: RunPlan, out: Path, cluster: str, progress: Progress | None = None,
            backend_options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Run one plan; returns its summary. Partial results are kept on any failure."""
    run_dir = Path(out) / plan.rel_dir
    with held():  # the run's folder and its writer come together: a folder without one would have no summary
        writer = RunWriter(run_dir, run_meta(plan, cluster))
    try:
        # everything after the writer inside the try: importing a backend takes ~0.5 s (local), a simulated
        # run can be over in 0.1 s, and a Ctrl-C or a bad option at any point (the finish included) must
        # still leave a summary.json marked incomplete
        cfg, derived = plan.autoscaler, dict(getattr(plan.autoscaler, "derived", None) or {})  # a recipe's values
        derived |= plan.notes  # suite --tuned: what was tuned, where
        if getattr(cfg, "size", None):  # static-peak / static-mean: the count found by simulation
            from scalearena.harness.sizing.static import size_static

            cfg, sized = size_static(plan.scenario, cfg)
            derived |= sized
            writer.meta["autoscaler_config"] = cfg.model_dump(mode="json")
        for setting, how in derived.items():
            writer.add_event(0.0, "derived_setting", setting=setting, value=how)
        atomic_write_json(run_dir / "scenario.json", plan.scenario.model_dump(mode="json"))
        backend = build_backend(cluster, backend_options)
        backend.run(plan.scenario, cfg, writer, progress)
        return writer.finish()
    except KeyboardInterrupt:
        writer.abort("interrupted")
        raise
    except BaseException as e:
        writer.abort(f"{type(e).__name__}: {e}")
        if not isinstance(e, UserError):
            (run_dir / "error.log").write_text(traceback.format_exc())
        raise


def run_plan(plan: RunPlan, out: str | Path, cluster: str, progress: Progress | None = None,
             backend_options: Mapping[str, Any] | None = None) -> RunOutcome:
    """Run one plan and describe the outcome (ok / bad_input / failed) instead of raising, so a suite goes on."""
    t0 = time.perf_counter()
    try:
        summary = execute(plan, Path(out), cluster, progress, backend_options)
        wall_s = time.perf_counter() - t0
        if plan.page_color is not None:
            write_page(plan, Path(out))
        return RunOutcome(plan.rel_dir, "ok", wall_s, summary=summary)
    except UserError as e:
        return RunOutcome(plan.rel_dir, "bad_input", time.perf_counter() - t0, error=e.render())
    except Exception as e:  # noqa: BLE001 - recorded in suite.json and error.log, the suite goes on
        return RunOutcome(plan.rel_dir, "failed", time.perf_counter() - t0, error=f"{type(e).__name__}: {e}")


def with_pages(plans: list[RunPlan]) -> list[RunPlan]:
    """The plans, each to write its run page when it ends, in its autoscaler's colour on the suite page."""
    from dataclasses import replace

    from scalearena.reports.figures import autoscaler_colors

    colors = autoscaler_colors(p.label for p in plans)
    return [replace(p, page_color=colors[p.label]) for p in plans]


def write_page(plan: RunPlan, out: Path) -> None:
    """The run's report.html, as the suite report would write it (same link and colour, so the same inputs
    hash: ``scalearena report`` afterwards finds it up to date). Rendered by the worker that ran the plan,
    the pages are drawn while other runs go on instead of after the last one; a failure here is left to
    that later report step, which renders the page again and says why it could not."""
    from scalearena.reports.report import write_run_report

    run_dir = out / plan.rel_dir
    try:
        write_run_report(run_dir, os.path.relpath(out / "report.html", run_dir), color=plan.page_color)
    except Exception:  # noqa: BLE001, S110 - the report step retries it and reports the error
        pass


class SuiteRecorder:
    """Keeps OUT/suite.json true while a suite runs."""

    def __init__(self, out: Path, name: str, cluster: str, plans: list[RunPlan], source: str | None) -> None:
        self.path = Path(out) / "suite.json"
        self.doc: dict[str, Any] = {
            "suite": name,
            "source": source,
            "cluster": cluster,
            "complete": False,
            "started_unix": time.time(),
            "versions": versions(),
            "git_sha": git_sha(),
            "seeds": sorted({p.scenario.seed for p in plans}),
            "scenarios": {p.scenario.name: p.scenario.model_dump(mode="json") for p in plans},
            "runs": [
                {"dir": p.rel_dir, "scenario": p.scenario.name, "autoscaler": p.label,
                 "autoscaler_kind": p.autoscaler.kind, "sweep": dict(p.sweep), "seed": p.scenario.seed,
                 "status": "pending"}
                for p in plans
            ],
        }
        self._index = {r["dir"]: r for r in self.doc["runs"]}
        self.write()

    def record(self, result: RunOutcome) -> None:
        row = self._index[result.dir]
        row["status"] = result.status
        row["wall_s"] = round(result.wall_s, 3)
        if result.error is not None:
            row["error"] = result.error
        if result.attempts > 1:  # run again after its worker was lost (harness/run/executor_ray.py)
            row["attempts"] = result.attempts
        self.write()

    def close(self, complete: bool) -> None:
        for row in self.doc["runs"]:
            if row["status"] == "pending":  # never recorded: the suite was interrupted
                folder = self.path.parent / row["dir"]  # its RunWriter made the folder
                # a run can be complete and still unrecorded: its worker was stopped while writing its page
                row["status"] = "cancelled" if not folder.is_dir() else "ok" if _complete(folder) else "interrupted"
        self.doc["complete"] = complete and all(r["status"] == "ok" for r in self.doc["runs"])
        self.doc["finished_unix"] = time.time()
        self.write()

    def write(self) -> None:
        atomic_write_json(self.path, self.doc)


def _complete(run_dir: Path) -> bool:
    """The run's summary.json says it finished (complete: true)."""
    try:
        return json.loads((run_dir / "summary.json").read_text()).get("complete") is True
    except (OSError, ValueError):
        return False


def default_jobs(cluster: str) -> int:
    return (os.cpu_count() or 1) if cluster == "sim" else 1


def prepare_out(out: Path, name: str | None = None) -> None:
    """Create the results folder and prove it writable before any run starts; remove an earlier suite's
    oracle frontier (OUT/frontier.json), which must not outlive the runs it bounded. A folder holding another
    suite's or scenario's results (its suite.json names another ``name``) is refused: the runs would mix."""
    held = out / "suite.json"
    if name is not None and held.is_file():
        from scalearena.reports.load import read_json

        other = read_json(held).get("suite")
        if isinstance(other, str) and other != name:
            raise UserError(f"holds the results of {other!r}; writing {name!r} there would mix the two",
                            where=f"--out {out}", expected="a fresh --out folder (or remove the old one)")
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / f".scalearena-write-test-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
        (out / FRONTIER_FILE).unlink(missing_ok=True)
    except OSError as e:
        raise UserError(f"cannot write results there: {e.strerror or e}", where=f"--out {out}",
                        expected="a writable folder") from None


def fresh_run_dir(scenario: str, now: float | None = None) -> Path:
    """results/runs/<scenario>-<UTC timestamp>: a new folder per `run`, never mixed with earlier results."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(time.time() if now is None else now))
    base = Path("results") / "runs" / f"{scenario}-{stamp}"
    path, n = base, 1
    while path.exists():  # two runs in the same second
        n += 1
        path = base.with_name(f"{base.name}-{n}")
    return path
