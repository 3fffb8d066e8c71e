"""The oracle frontier: the hindsight plan run at several headrooms, the bound regret is measured against.

One oracle run gives one (GPU-hours, SLO attainment) point, at whatever attainment its default
headroom happens to reach, so "the oracle is cheaper" says nothing about an autoscaler that reached
less or more. The frontier runs the same hindsight plan (controllers/oracle.py: it knows every
arrival, every request's token lengths and every variant's cold start) at several ``utilization``
settings -- the share of a replica's unsaturated capacity it plans to be busy: 0.5 plans twice the
replicas the load needs, 1.25 a fifth fewer -- and adds the **floor**, every variant at its
``min_replicas`` for the whole run (``static`` at 0, clamped up): nothing can be billed less, so no
run is cheaper. reports/verdict.py turns these points into the bound (their lower convex hull, see
docs/metrics.md) and measures each autoscaler's regret against it.

Frontier runs are ordinary simulator runs of the suite's scenario, seed and sweep point (the scenario
holding only the plan), executed by the suite's executor (harness/run/executor.py: local pool or Ray) into
a scratch folder that is deleted afterwards; only their summaries are kept, in ``OUT/frontier.json``
and in the run cache (harness/sizing/frontier_cache.py), so the frontier of a scenario and seed is simulated
once. A setting equal to an oracle the suite runs anyway (the default ``utilization`` 1.0) is not run
again: the suite's run is that point. Simulator only: on local, kind or a cluster the runs are a
different system from the suite's, so no frontier is computed there.
"""
from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text

from scalearena.controllers.registry import REGISTRY
from scalearena.harness.config.frontier_spec import (
    FRONTIER_FILE,
    FrontierSpec,
    frontier_option as frontier_option,  # re-exported: tuning/cli.py
)
from scalearena.harness.config.suite import RunPlan
from scalearena.harness.run.executor import Executor
from scalearena.harness.run.outcome import RunOutcome
from scalearena.harness.sizing import frontier_cache
from scalearena.reports.results import atomic_write_json

FLOOR = "floor"
SUMMARY_KEYS = ("complete", "gpu_hours", "cost", "cost_usd", "slo_attainment", "goodput_rps", "throughput_rps",
                "requests_total", "duration_s", "replicas", "billed_replicas")
_SEED = re.compile(r"seed-\d+")


@dataclass(frozen=True)
class FrontierRun:
    scenario: str
    point: str  # sweep label (rate-2), "" without a sweep
    seed: int
    setting: str  # "floor" or "u=0.75"
    utilization: float | None  # None for the floor
    plan: RunPlan
    key: str  # frontier_cache.run_key
    reuse: str | None = None  # rel_dir of a suite run that is this point (not run again)


def point_of(plan: RunPlan) -> str:
    """A plan's sweep point as reports/load.py reads it from the folder: rel_dir after scenario/autoscaler,
    without the seed folder."""
    parts = plan.rel_dir.split("/")[2:]
    if parts and _SEED.fullmatch(parts[-1]):
        parts = parts[:-1]
    return "/".join(parts)


def _settings(spec: FrontierSpec) -> list[tuple[str, float | None]]:
    us = sorted(dict.fromkeys(spec.utilization), reverse=True)
    return ([(FLOOR, None)] if spec.floor else []) + [(f"u={u:g}", u) for u in us]


def _config(base: Any, setting: str, u: float | None) -> Any:
    if u is None:
        return REGISTRY.default_config("static").model_copy(update={"name": f"frontier-{FLOOR}", "replicas": 0})
    return base.model_copy(update={"utilization": u, "name": f"frontier-u{u:g}"})


def _same(a: Any, b: Any) -> bool:
    return a.kind == b.kind and a.model_dump(mode="json", exclude={"name"}) == b.model_dump(mode="json",
                                                                                           exclude={"name"})


def frontier_runs(plans: list[RunPlan], spec: FrontierSpec, cluster: str = "sim") -> list[FrontierRun]:
    """The frontier's runs for every (scenario, sweep point, seed) of ``plans``, in plan order."""
    groups: dict[tuple[str, str, int], list[RunPlan]] = {}
    for p in plans:
        groups.setdefault((p.scenario.name, point_of(p), p.scenario.seed), []).append(p)
    out = []
    for (name, point, seed), members in groups.items():
        sc = members[0].scenario
        base = sc.autoscaler("oracle")
        oracles = [p for p in members if p.autoscaler.kind == "oracle"]
        for setting, u in _settings(spec):
            cfg = _config(base, setting, u)
            one = sc.model_copy(update={"autoscalers": [cfg]})
            reuse = next((p.rel_dir for p in oracles if u is not None and _same(p.autoscaler, cfg)), None)
            key = frontier_cache.run_key(one.model_dump(mode="json"), cfg.model_dump(mode="json"), cluster)
            rel = "/".join(filter(None, [name, point, f"seed-{seed}", setting.replace("=", "")]))
            out.append(FrontierRun(name, point, seed, setting, u, RunPlan(one, cfg, rel, members[0].sweep), key,
                                   reuse))
    return out


def _summary(s: dict[str, Any]) -> dict[str, Any]:
    return {k: s[k] for k in SUMMARY_KEYS if k in s}


def _row(fr: FrontierRun, summary: dict[str, Any] | None, source: str, error: str | None = None) -> dict[str, Any]:
    """One point of frontier.json; ``source`` (suite:<dir>, cache, run) rides along under "_source" for the
    progress line and is dropped before writing, so the file is the same however the point was obtained."""
    row: dict[str, Any] = {"scenario": fr.scenario, "point": fr.point, "seed": fr.seed, "setting": fr.setting,
                           "autoscaler_kind": fr.plan.autoscaler.kind, "utilization": fr.utilization,
                           "summary": _summary(summary or {}), "_source": source}
    if error is not None:
        row["error"] = error
    return row


Runner = Callable[[list[RunPlan], Path, Callable[[RunOutcome], None]], Any]


def run(runs: list[FrontierRun], execute: Runner, suite_results: dict[str, RunOutcome] | None = None,
        on_done: Callable[[dict[str, Any]], None] | None = None) -> list[dict[str, Any]]:
    """Every frontier point: from the suite's own run, the cache, or a run now (``execute`` is an executor's
    ``run``). ``suite_results``: rel_dir -> the suite's run outcome. Returns frontier.json's rows in order."""
    done = on_done or (lambda r: None)
    rows: dict[int, dict[str, Any]] = {}
    todo: dict[str, int] = {}
    for i, fr in enumerate(runs):
        suite_run = (suite_results or {}).get(fr.reuse or "")
        cached = frontier_cache.load(fr.key)
        if suite_run is not None and suite_run.ok and suite_run.summary is not None:
            rows[i] = _row(fr, suite_run.summary, f"suite:{fr.reuse}")
        elif cached is not None:
            rows[i] = _row(fr, cached, "cache")
        else:
            todo[fr.plan.rel_dir] = i
            continue
        done(rows[i])
    if todo:
        scratch = Path(tempfile.mkdtemp(prefix="scalearena-frontier-"))

        def landed(r: RunOutcome) -> None:
            i = todo[r.dir]
            fr = runs[i]
            summary = r.summary if r.ok else None
            if summary is not None and summary.get("complete") is True:
                frontier_cache.store(fr.key, summary, f"{fr.scenario} {fr.point} seed {fr.seed} {fr.setting}")
            rows[i] = _row(fr, summary, "run", None if summary is not None else str(r.error or r.status))
            done(rows[i])

        try:
            execute([runs[i].plan for i in todo.values()], scratch, landed)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    return [rows[i] for i in sorted(rows)]


def perfect_rows(runs: list[FrontierRun]) -> list[dict[str, Any]]:
    """llm-d-autoscaling #1499's "perfect system" (harness/sizing/perfect_system.py: no simulation, ~0.05 s each) for
    every (scenario, sweep point, seed) of ``runs``: GPU-hours, costs, peak and mean GPUs, replicas per window."""
    from scalearena.harness.sizing.perfect_system import perfect_system

    groups: dict[tuple[str, str, int], Any] = {}
    for fr in runs:
        groups.setdefault((fr.scenario, fr.point, fr.seed), fr.plan.scenario)
    out = []
    for (name, point, seed), sc in groups.items():
        summary = perfect_system(sc)
        if summary is not None:  # None: a P/D cluster
            out.append({"scenario": name, "point": point, "seed": seed, "summary": summary})
    return out


def document(spec: FrontierSpec, rows: list[dict[str, Any]], perfect: list[dict[str, Any]] | None = None
             ) -> dict[str, Any]:
    """frontier.json: the settings, every point and the perfect-system rows (a function of the scenarios,
    seeds and code alone)."""
    return {"kind": "oracle-frontier", "settings": [s for s, _ in _settings(spec)],
            "utilization": sorted(dict.fromkeys(spec.utilization), reverse=True), "floor": spec.floor,
            "points": [{k: v for k, v in r.items() if k != "_source"} for r in rows],
            "perfect_system": list(perfect or [])}


def write(out: Path, spec: FrontierSpec, rows: list[dict[str, Any]], perfect: list[dict[str, Any]] | None = None
          ) -> Path:
    path = Path(out) / FRONTIER_FILE
    atomic_write_json(path, document(spec, rows, perfect))
    return path


def for_suite(plans: list[RunPlan], out: Path, cluster: str, spec: FrontierSpec, results: list[RunOutcome],
              executor: Executor | None, backend_options: Mapping[str, Any] | None, console: Console) -> None:
    """The suite's frontier with a progress bar: run (or take from the cache and the suite's oracle runs)
    every point, write OUT/frontier.json, say where each point came from."""
    if cluster != "sim":
        console.print(Text(f"oracle frontier: simulator only, not computed on --cluster {cluster}"))
        return
    runs = frontier_runs(plans, spec, cluster)

    def execute(todo: list[RunPlan], scratch: Path, landed: Callable[[RunOutcome], None]) -> Any:
        if executor is not None:
            return executor.run(todo, scratch, landed)
        from scalearena.harness.run.executor import run_plans

        return run_plans(todo, scratch, cluster, 1, landed, backend_options)

    columns = (TextColumn("{task.description}", markup=False), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=False) as progress:
        task = progress.add_task("oracle frontier (the bound of regret)", total=len(runs))
        rows = run(runs, execute, {r.dir: r for r in results}, lambda r: progress.advance(task))
    path = write(out, spec, rows, perfect_rows(runs))
    src = [str(r["_source"]).split(":")[0] for r in rows]
    failed = [r for r in rows if r.get("error")]
    console.print(Text(f"oracle frontier: {len(rows)} points ({src.count('run')} run, {src.count('cache')} cached, "
                       f"{src.count('suite')} from the suite's oracle runs{f', {len(failed)} failed' if failed else ''})"
                       f" -> {path}"))
    for r in failed:
        console.print(Text(f"  frontier {r['scenario']} {r['point']} seed {r['seed']} {r['setting']}: {r['error']}"))
