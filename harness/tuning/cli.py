"""`scalearena tune SCENARIO --autoscaler NAME`: search its parameters for the cheapest configuration meeting the SLO.

Runs on the simulator. The scenario's configuration of the autoscaler (or its registry defaults) is the
starting point and the reference; the oracle runs once as the bound. Every user mistake (unknown
objective, a target outside [0, 1], a range the config model refuses, an unreachable Ray address) is one
``error:`` line and exit 2 before anything runs.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text

from scalearena.contracts.cli_params import OutDir, check_jobs
from scalearena.contracts.errors import UserError
from scalearena.contracts.limits import MAX_SEEDS
from scalearena.harness.config.scenario import load_scenario
from scalearena.harness.run.executor import EXECUTORS, Executor, make_executor
from scalearena.harness.run.outcome import RunOutcome
from scalearena.harness.sizing import frontier
from scalearena.harness.tuning.objectives import check_target, cost_axis, default_objectives, parse_objectives
from scalearena.harness.tuning.outputs import write
from scalearena.harness.tuning.space import build_space
from scalearena.harness.tuning.study import SAMPLERS, Tuning, open_storage, open_study, optimize
from scalearena.harness.tuning.trials import Outcome, outcome, plans
from scalearena.reports.verdict import Verdict, target_of

err = Console(stderr=True)


def _positive(value: int, flag: str, most: int | None = None) -> int:
    if value < 1:
        raise UserError(f"{flag} {value}: must be at least 1")
    if most is not None and value > most:
        raise UserError(f"{flag} {value}: at most {most:,}")
    return value


def reference_runs(t: Tuning, executor: Executor) -> dict[str, Outcome]:
    """The default configuration and the oracle over the study's seeds, kept from an earlier run of the same
    study when their summaries are complete; then the oracle frontier (``t.frontier``; its runs cached)."""
    from scalearena.reports.load import read_json

    refs = {"default": t.base, **({"oracle": t.oracle} if t.oracle is not None else {})}
    results: dict[str, list[RunOutcome]] = {k: [] for k in refs}
    todo = []
    for name, cfg in refs.items():
        for p in plans(t.scenario, cfg, name, t.seeds):
            path = t.out / p.rel_dir / "summary.json"
            summary = read_json(path) if path.is_file() else None
            if summary is not None and summary.get("complete") is True:
                results[name].append(RunOutcome(p.rel_dir, "ok", summary=summary))
            else:
                todo.append(p)
    for r in executor.run(todo, t.out, lambda r: None):
        results[r.dir.split("/")[0]].append(r)
    if t.frontier is not None:
        oracle = t.oracle if t.oracle is not None else t.base
        runs = frontier.frontier_runs(plans(t.scenario, oracle, "oracle", t.seeds), t.frontier)
        t.frontier_rows = frontier.run(runs, executor.run, {r.dir: r for r in results.get("oracle", [])})
        t.perfect_rows = frontier.perfect_rows(runs)
    return {k: outcome(v, t.objectives) for k, v in results.items()}


def best_text(v: Verdict, t: Tuning) -> str:
    cost = cost_axis(t.objectives)
    if v.pick is None:
        near = v.best_attainment
        return f"none meets {t.target:.0%} yet" + (f" (closest {near.name}: {near.attainment:.1%})"
                                                    if near and near.attainment is not None else "")
    return f"best {v.pick.name}: {cost.format(v.pick.cost)} {cost.unit} at {(v.pick.attainment or 0):.1%}"


@click.command("tune")
@click.argument("scenario", type=click.Path(dir_okay=False))
@click.option("--autoscaler", "name", required=True, help="Autoscaler label or kind to tune (the scenario's "
              "configuration of it is the starting point).")
@click.option("--trials", type=int, default=50, show_default=True, help="Trials in the study (a rerun completes it).")
@click.option("--seeds", type=int, default=1, show_default=True, help="Seeds per trial (scenario seed, +1, ...), averaged.")
@click.option("--objective", "objectives", multiple=True, metavar="METRIC",
              help="Metric to optimise (repeatable; default cost_usd and slo_attainment), e.g. cost_usd, gpu_hours, "
                   "goodput_rps, cost (variantCost x h).")
@click.option("--min-attainment", type=float, default=None,
              help="SLO-attainment target 0..1 of the verdict (a constraint when slo_attainment is no objective); "
                   "default the scenario's attainment_target, else 0.95.")
@click.option("--param", "params", multiple=True, metavar="NAME=LOW:HIGH[:log]",
              help="Change a parameter's range, NAME=A,B,C for choices, NAME=VALUE to pin it (repeatable).")
@click.option("--out", type=OutDir(), default=None,
              help="Study folder (study.db, trials, report); default results/tune/<scenario>-<autoscaler>.")
@click.option("--jobs", type=int, default=None, help="Trials run at once; default all cores (Ray: its CPUs).")
@click.option("--sampler", type=click.Choice(SAMPLERS), default="tpe", show_default=True,
              help="Optuna sampler: TPE (single and multi-objective), NSGA-II, random.")
@click.option("--sampler-seed", type=int, default=0, show_default=True, help="Seed of the sampler.")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE", help="Override a scenario field.")
@click.option("--executor", "executor_kind", type=click.Choice(EXECUTORS), default="local", show_default=True,
              help="Where trials run: this machine's cores, or a Ray cluster (pip install 'scalearena[ray]').")
@click.option("--address", default=None, help="Ray cluster address (ray://HOST:10001, HOST:6379, auto); "
              "default: a local Ray instance.")
@click.option("--report/--no-report", default=True, show_default=True, help="Write OUT/report.html at the end.")
@frontier.frontier_option("on (5 more runs per seed, cached)")
def tune(scenario: str, name: str, trials: int, seeds: int, objectives: tuple[str, ...], min_attainment: float | None,
         params: tuple[str, ...], out: str | None, jobs: int | None, sampler: str, sampler_seed: int,
         overrides: tuple[str, ...], executor_kind: str, address: str | None, report: bool,
         with_frontier: bool | None) -> None:
    """Tune one autoscaler's parameters on SCENARIO with Optuna: the cheapest configuration meeting the SLO."""
    check_jobs(jobs, executor_kind)
    from scalearena.controllers.registry import REGISTRY

    objs = parse_objectives(objectives)
    sc = load_scenario(scenario, list(overrides))
    target = check_target(min_attainment if min_attainment is not None else target_of(sc.attainment_target))
    base = sc.autoscaler(name)
    space = build_space(base, list(params))
    if not space.params:
        raise UserError(f"{base.label} has nothing to search", expected="a --param NAME=LOW:HIGH")
    oracle = None if base.kind == "oracle" else next((a for a in sc.autoscalers if a.kind == "oracle"),
                                                    REGISTRY.default_config("oracle"))
    n_seeds, n_trials = _positive(seeds, "--seeds", MAX_SEEDS), _positive(trials, "--trials")
    out_dir = Path(out) if out else Path("results") / "tune" / f"{sc.name}-{base.label}"
    if not objectives:  # the default, or what a study already in out_dir began with
        objs = parse_objectives(default_objectives(out_dir))
    out_dir.mkdir(parents=True, exist_ok=True)
    t = Tuning(sc, base, oracle, space, objs, target, [sc.seed + i for i in range(n_seeds)], out_dir, n_trials,
               sampler, sampler_seed,
               frontier.FrontierSpec(enabled=True) if with_frontier is not False else None)
    if executor_kind == "local" and address is not None:
        raise UserError("--address is for --executor ray", expected="--executor ray --address ADDR")
    executor = make_executor(executor_kind, _positive(jobs, "--jobs") if jobs is not None else None, "sim", address)
    storage = open_storage(out_dir)
    try:
        _run(t, open_study(t, storage), executor, report)
    except KeyboardInterrupt:
        err.print(Text(f"interrupted: finished trials kept in {out_dir}; run the same command to continue"))
        sys.exit(130)
    finally:
        executor.close()
        storage.engine.dispose()  # the last connection closed: the write-ahead log goes back into study.db


def _run(t: Tuning, study: Any, executor: Executor, report: bool) -> None:
    columns = (TextColumn("{task.description}", markup=False), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn(), TextColumn("{task.fields[best]}", markup=False))
    refs: dict[str, Outcome] = {}
    last: list[Verdict] = []

    def after_batch() -> str:
        _, v = write(study, t, refs)
        last[:] = [v]
        return best_text(v, t)

    with Progress(*columns, console=err, transient=False) as bar:
        task = bar.add_task(f"tune {t.base.label} on {t.scenario.name}", total=t.trials, best="")
        bar.update(task, best="default, oracle" + (" and oracle frontier" if t.frontier else "") + " runs ...")
        refs.update(reference_runs(t, executor))
        optimize(study, t, executor, max(1, executor.jobs), after_batch,
                 lambda n, total, best: bar.update(task, completed=n, best=best))
    after_batch()
    if report:
        from scalearena.reports.tune import write_tune_report

        err.print(Text(f"report: {write_tune_report(t.out)}"))
    v = last[0]
    click.echo(best_text(v, t) if v.pick else f"no configuration meets {t.target:.0%} SLO attainment "
               f"({best_text(v, t)})")
    if (t.out / "best.yaml").is_file():
        click.echo(f"best configuration: {t.out / 'best.yaml'}")
    click.echo(f"study: {t.out / 'study.db'} (optuna-dashboard sqlite:///{(t.out / 'study.db').resolve()}); "
               "the same command continues it")
