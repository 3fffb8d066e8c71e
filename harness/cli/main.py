"""The `scalearena` command line.

Every user mistake (bad YAML, unknown field, unknown autoscaler, unreachable
backend) surfaces as one line on stderr and exit code 2; click's own usage
errors also exit 2. Anything else that escapes a command is a bug, not bad
input: one top-level guard prints ``error: internal error ...`` with the path
of a log file holding the traceback, and exits 3, so the two are never
confused. User text (file names, field values, messages) is printed as rich
``Text``, never parsed as markup or emoji codes: a scenario value ``[/x]`` or
``:x:`` must come out as written. Commands that live with their subsystem (report, compare,
serve-engine, serve-router; paper from scalearena/cli.py) are imported lazily so `scalearena run` on
the simulator loads nothing it does not need.
"""
from __future__ import annotations

import importlib
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text

from scalearena import __version__
from scalearena.contracts.cli_params import ANY_JOBS, JOBS, OutDir, check_jobs
from scalearena.contracts.errors import RunFailed, UserError
from scalearena.harness.cli.objects import objects_autoscaler, objects_options
from scalearena.harness.cli.progress import RunBar, print_table, run_lines
from scalearena.harness.config.frontier_spec import FrontierSpec, frontier_option
from scalearena.harness.run.executor import EXECUTORS, Executor, make_executor
from scalearena.harness.run.interrupts import Interrupted, deferred, exit_code, interruptible, stdout_gone
from scalearena.harness.run.outcome import RunOutcome
from scalearena.harness.run.registry import CLUSTERS, KUBE_CLUSTERS, parse_option_flags, resolve_options

if TYPE_CHECKING:  # the run machinery (pandas, the controllers, the simulator) loads when a command needs it:
    from scalearena.harness.config.suite import RunPlan
    from scalearena.harness.run.runner import SuiteRecorder  # `scalearena --help` starts ~1 s sooner

err_console = Console(stderr=True)
LAZY_COMMANDS = {
    "report": "scalearena.reports.cli:report",
    "tune": "scalearena.harness.tuning.cli:tune",
    "compare": "scalearena.reports.cli:compare",
    "serve-engine": "scalearena.harness.local.cli:serve_engine",
    "serve-router": "scalearena.harness.local.cli:serve_router",
    "render": "scalearena.harness.kube.cli:render",
    "doctor": "scalearena.harness.kube.cli:doctor",
    "kind": "scalearena.harness.kube.cli:kind",
    "kwok": "scalearena.harness.kube.cli:kwok",
    "autoscalers": "scalearena.harness.cli.autoscalers:autoscalers",
}  # commands of packages above the harness (paper/) are added by scalearena/cli.py


class ArenaGroup(click.Group):
    lazy_commands: dict[str, str] = LAZY_COMMANDS  # name -> "module:attribute", imported when invoked

    def add_lazy_commands(self, commands: dict[str, str]) -> None:
        self.lazy_commands = {**self.lazy_commands, **commands}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(self.lazy_commands))

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """As click's, but a lazy command's line is its docstring read from source (harness/cli/docs.py)."""
        from scalearena.harness.cli.docs import command_rows

        with formatter.section("Commands"):
            formatter.write_dl(command_rows(self, ctx, formatter.width))

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in self.lazy_commands:
            # a subcommand that fails to import is a bug of this checkout, not an unknown command: the error
            # reaches invoke's guard (exit 3, traceback in the log) instead of click's "No such command"
            mod, attr = self.lazy_commands[name].split(":")
            return getattr(importlib.import_module(mod), attr)  # type: ignore[no-any-return]
        return super().get_command(ctx, name)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except UserError as e:
            print_error(e.render())
            ctx.exit(2)
        except RunFailed as e:  # the input was fine, the infrastructure failed (a component, a build): exit 1
            print_error(str(e))
            ctx.exit(1)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise  # click's own usage errors (exit 2) and exits
        except BrokenPipeError:  # the reader went away (`| head`): stop quietly, as cat does (128 + SIGPIPE)
            ctx.exit(stdout_gone())
        except Exception as e:  # noqa: BLE001 - the one guard: a bug must not look like bad input
            log = write_internal_error_log()
            print_error(f"internal error: {type(e).__name__}: {e} (traceback in {log}; please report it)")
            ctx.exit(3)


def print_error(message: str) -> None:
    """One ``error: ...`` line on stderr; the message is plain text (no markup, no emoji codes)."""
    err_console.print(Text.assemble(("error:", "bold red"), " ", message), highlight=False, soft_wrap=True)


def write_internal_error_log() -> str:
    """Write the current exception's traceback to a fresh file in the temp folder; returns its path."""
    fd, path = tempfile.mkstemp(prefix=f"scalearena-internal-error-{time.strftime('%Y%m%dT%H%M%S')}-",
                                suffix=".log")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(f"scalearena {__version__}; argv: {sys.argv!r}\n")
        fh.write(traceback.format_exc())
    return path


@click.group(cls=ArenaGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="scalearena")
def main() -> None:
    """Benchmark autoscalers for LLM inference serving."""


def _backend_option(f: Any) -> Any:
    return click.option("--backend-option", "backend_options", multiple=True, metavar="KEY=VALUE",
                        help="A backend option (repeatable), e.g. time_scale=5 for --cluster local or kwok; "
                             "see docs/backends.md.")(f)


def _cluster_option(f: Any) -> Any:
    return click.option("--cluster", type=click.Choice(CLUSTERS), default="sim", show_default=True,
                        help="Where to run: embedded simulator, local processes, the real control plane here "
                             "(kwok), kind, or the kubeconfig context.")(f)


@main.command()
@click.argument("file", type=click.Path(dir_okay=False))
@_cluster_option
@click.option("--gateway", type=click.Choice(["serve-router", "epp"]), default=None,
              help="kind/cluster: the gateway the run would use (what series it exposes).")
@objects_options
def validate(file: str, cluster: str, gateway: str | None, **objects: tuple[str, ...]) -> None:
    """Check a scenario or suite YAML file; exit 2 naming the field on error (also a recipe that reads series
    the cluster does not expose)."""
    from scalearena.harness.config.scenario import load_scenario, read_yaml
    from scalearena.harness.config.suite import load_suite
    from scalearena.harness.objects.recipes import check_series

    if cluster in KUBE_CLUSTERS:  # the flag, else $SCALEARENA_GATEWAY, as a run resolves it
        gateway = getattr(resolve_options(cluster, {"gateway": gateway} if gateway else {}), "gateway", None)
    data, added = read_yaml(file), objects_autoscaler(**objects)
    if isinstance(data, dict) and "runs" in data:
        if added:
            raise UserError("--objects applies to a scenario, not a suite", where=file,
                            expected="a scenario file (or the objects in the suite's scenarios' autoscalers:)")
        spec, plans = load_suite(file)
        for p in plans:
            check_series(p.autoscaler, cluster, gateway, file)
        traces = _check_traces([p.scenario for p in plans])
        click.echo(f"ok: suite {spec.name!r}: {len(plans)} runs "
                   f"({len({p.scenario.name for p in plans})} scenarios){traces}")
    else:
        sc = load_scenario(file, add_autoscalers=added)
        for a in sc.autoscaler_configs():
            check_series(a, cluster, gateway, file)
        traces = _check_traces([sc])
        names = ", ".join(a.label for a in sc.autoscaler_configs())
        click.echo(f"ok: scenario {sc.name!r}: {len(sc.cluster.variants)} variants, "
                   f"{sc.duration_s:g} s, autoscalers: {names}{traces}")
        from scalearena.harness.config.disagg_spec import role_blind
        from scalearena.harness.objects import bound_warnings
        from scalearena.harness.objects.recipes import queue_warnings
        from scalearena.harness.objects.signal_probe import probe_report
        from scalearena.harness.sizing.fit import oversized

        listing, blind = probe_report(sc)  # per object: its variant and each query, with whether it found series
        for line in listing:
            click.echo(line)
        bounds = [m for a in sc.autoscaler_configs() for m in bound_warnings(a, sc.cluster.variants)]
        for msg in [*role_blind(sc), *queue_warnings(sc), *bounds, *blind]:
            _warn(f"{file}: {msg}")
        for o in oversized(sc):
            _warn(f"{file}: {o.too_long} of {o.requests} requests for model {o.model!r} ask for more than "
                  f"{o.limit_tokens} tokens (prompt + max_tokens), the most variant {o.variant!r} accepts; "
                  "they will fail as too_long (HTTP 400)")


def _warn(msg: str) -> None:
    """One yellow ``warning:`` line on stderr, unwrapped."""
    err_console.print(Text.assemble(("warning:", "yellow"), f" {msg}"), highlight=False, soft_wrap=True)


def _check_traces(scenarios: list[Any]) -> str:
    """Read every trace the scenarios replay, each file once and whole (streaming); a bad row is a UserError."""
    from scalearena.workloads.traces.replay import check_trace

    specs = {(w.arrivals.path, w.arrivals.format, w.arrivals.trace_model): w.arrivals
             for sc in scenarios for w in sc.workloads if w.arrivals.kind == "trace"}
    rows = [check_trace(spec) for spec in specs.values()]
    return f", traces: {', '.join(f'{n:,} rows' for n in rows)}" if rows else ""


def _jobs(jobs: int | None, cluster: str) -> int:
    from scalearena.harness.run.runner import default_jobs

    return 1 if cluster != "sim" else max(1, jobs) if jobs else default_jobs(cluster)


def _executor_options(f: Any) -> Any:
    f = click.option("--address", default=None,
                     help="With --executor ray: the cluster (ray://HOST:10001, HOST:6379, auto); default a local "
                          "Ray instance.")(f)
    return click.option("--executor", "executor_kind", type=click.Choice(EXECUTORS), default="local",
                        show_default=True, help="Where runs execute: this machine's cores, or Ray tasks "
                        "(pip install 'scalearena[ray]'; simulator runs only).")(f)


def _executor(kind: str, cluster: str, jobs: int, address: str | None) -> Executor | None:
    """None for the default local execution; a Ray executor for ``--executor ray`` (simulator runs only)."""
    if kind == "local":
        if address is not None:
            raise UserError("--address is for --executor ray", expected="--executor ray --address ADDR")
        return None
    if cluster != "sim":
        raise UserError(f"--executor ray runs simulator runs only, not --cluster {cluster}",
                        expected="--cluster sim, or --executor local")
    return make_executor(kind, jobs, cluster, address)


def _run_all(plans: list[RunPlan], out: Path, cluster: str, jobs: int, name: str, source: str | None,
             report: bool = True, backend_options: dict[str, str] | None = None,
             executor: Executor | None = None, frontier: FrontierSpec | None = None) -> int:
    """Run plans with a progress bar, keep suite.json current, run the oracle frontier (harness/sizing/frontier.py;
    not when None), write the report. Returns the exit code.

    SIGINT/SIGTERM (harness/run/interrupts.py) stop the runs; the report of what finished is still written,
    with one more signal deferred while it is.
    """
    from scalearena.harness.run.runner import SuiteRecorder, prepare_out, with_pages
    from scalearena.harness.sizing.frontier import for_suite

    _preflight(plans, cluster, backend_options, source)
    prepare_out(out, name)
    plans = with_pages(plans) if report else plans  # each worker writes its run's page as the run ends
    rec = SuiteRecorder(out, name, cluster, plans, source)
    results: list[RunOutcome] = []
    interrupted: KeyboardInterrupt | None = None
    if executor is None and jobs > 1:  # one warm pool for the suite's runs and the frontier's
        executor = make_executor("local", jobs, cluster, backend_options=backend_options)
    with interruptible():
        try:
            _execute(plans, out, cluster, jobs, name, rec, results, backend_options, executor)
            if frontier is not None:
                for_suite(plans, out, cluster, frontier, results, executor, backend_options, err_console)
        except KeyboardInterrupt as e:
            interrupted = e
        finally:
            if executor is not None:
                executor.close()
    with deferred("interrupted: writing the report of the finished runs (again to skip it)") as late:
        try:
            rec.close(complete=interrupted is None)
            if any(r.ok for r in results):
                if report:
                    _write_report(out)
                print_table(results)
        except KeyboardInterrupt as e:
            interrupted = interrupted or e
            err_console.print(Text("report not written (interrupted)"))
    if late and interrupted is None:
        interrupted = Interrupted(late[0])
    for msg in dict.fromkeys(r.error or "" for r in results if r.status == "bad_input"):
        print_error(msg)
    if interrupted is not None:
        err_console.print(Text(f"interrupted: partial results kept in {out} (unfinished runs marked incomplete)"))
        return exit_code(interrupted)
    if any(r.status == "bad_input" for r in results):
        return 2
    return 1 if any(not r.ok for r in results) else 0


def _preflight(plans: list[RunPlan], cluster: str, backend_options: dict[str, str] | None, source: str | None) -> None:
    """Every check that can refuse the suite, before any output: each is one error line."""
    from scalearena.harness.objects import bound_warnings
    from scalearena.harness.objects.recipes import check_series
    from scalearena.harness.run.runner import preflight

    options = resolve_options(cluster, backend_options)  # an unknown or bad option
    for p in plans:  # a recipe reading series this backend does not expose
        check_series(p.autoscaler, cluster, getattr(options, "gateway", None), source)  # flag, else $SCALEARENA_GATEWAY
    preflight(plans, cluster, options)  # the backend's: a missing tool, objects that do not render
    for msg in dict.fromkeys(m for p in plans for m in bound_warnings(p.autoscaler, p.scenario.cluster.variants)):
        _warn(msg)


def _execute(plans: list[RunPlan], out: Path, cluster: str, jobs: int, name: str, rec: SuiteRecorder,
             results: list[RunOutcome], backend_options: dict[str, str] | None = None,
             executor: Executor | None = None) -> None:
    from scalearena.harness.run.runner import run_plan

    columns = (TextColumn("{task.description}", markup=False), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err_console, transient=False) as progress:
        total = progress.add_task(f"{name} [{cluster}]", total=len(plans))

        def done(r: RunOutcome) -> None:
            rec.record(r)
            results.append(r)
            progress.advance(total)
            for line in run_lines(r):
                progress.console.print(line, highlight=False)

        if executor is not None:
            executor.run(plans, out, done)
            return
        for p in plans:  # in-process, with a per-run progress bar over simulated/wall time
            with RunBar(progress, p.rel_dir, p.scenario.duration_s) as advance:
                done(run_plan(p, out, cluster, advance, backend_options))


def _write_report(out: Path) -> None:
    from scalearena.reports.cli import write_report_with_progress  # part of the package: never optional

    try:
        path = write_report_with_progress(out)
        err_console.print(Text(f"report: {path}"))
    except Exception as e:  # noqa: BLE001 - the measurements are already on disk
        _warn(f"report not written: {type(e).__name__}: {e}")


@main.command()
@click.argument("scenario", type=click.Path(dir_okay=False))
@_cluster_option
@click.option("--autoscaler", "autoscaler_names", multiple=True,
              help="Autoscaler label or kind to run (repeatable); default: the scenario's list, else all.")
@click.option("--out", type=OutDir(), default=None,
              help="Results folder; default a fresh results/runs/<scenario>-<UTC timestamp>.")
@click.option("--seed", type=int, default=None, help="Override the scenario's seed.")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE", help="Override a scenario field.")
@click.option("--jobs", type=JOBS, default=None, help="Parallel runs (sim only); default all cores.")
@_backend_option
@objects_options
def run(scenario: str, cluster: str, autoscaler_names: tuple[str, ...], out: str | None, seed: int | None,
        overrides: tuple[str, ...], jobs: int | None, backend_options: tuple[str, ...],
        **objects: tuple[str, ...]) -> None:
    """Run one scenario with one or more autoscalers."""
    from scalearena.harness.config.scenario import load_scenario
    from scalearena.harness.config.suite import plans_for_scenario
    from scalearena.harness.run.runner import fresh_run_dir

    sc = load_scenario(scenario, list(overrides), seed, objects_autoscaler(**objects))
    plans = plans_for_scenario(sc, list(autoscaler_names) or None)
    out_dir = Path(out) if out else fresh_run_dir(sc.name)
    sys.exit(_run_all(plans, out_dir, cluster, _jobs(jobs, cluster), sc.name, os.path.abspath(scenario),
                      backend_options=parse_option_flags(backend_options)))


@main.command()
@click.argument("suite_file", metavar="SUITE", type=click.Path(dir_okay=False))
@_cluster_option
@click.option("--out", type=OutDir(), default=None,
              help="Results folder; default results/<suite>.")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE", help="Override a field in every scenario.")
@click.option("--jobs", type=ANY_JOBS, default=None,
              help="Parallel runs (sim only; at most 4 per core, or 4096 on Ray); default all cores.")
@_backend_option
@_executor_options
@frontier_option("the suite file's `frontier:`")
@click.option("--tuned", "tuned_trials", type=click.IntRange(min=1), default=None, metavar="TRIALS",
              help="First tune every tunable autoscaler (TRIALS trials on a training seed) and run it as "
                   "<name>-tuned beside its defaults (docs/tuning.md).")
def suite(suite_file: str, cluster: str, out: str | None, overrides: tuple[str, ...], jobs: int | None,
          backend_options: tuple[str, ...], executor_kind: str, address: str | None, with_frontier: bool | None,
          tuned_trials: int | None) -> None:
    """Run a suite: scenarios x autoscalers x sweeps, in parallel on the simulator (or on Ray)."""
    from scalearena.harness.config.suite import load_suite
    from scalearena.harness.run.runner import default_jobs

    check_jobs(jobs, executor_kind)
    spec, plans = load_suite(suite_file, list(overrides))
    out_dir = Path(out) if out else Path("results") / spec.name
    options = parse_option_flags(backend_options)
    ex = _executor(executor_kind, cluster, jobs or default_jobs(cluster), address)
    if tuned_trials is not None:
        from scalearena.harness.tuning.tuned_suite import with_tuned

        plans = with_tuned(plans, out_dir, tuned_trials, cluster, jobs or default_jobs(cluster), ex,
                           lambda line: err_console.print(Text(line)))
    on = spec.frontier.enabled if with_frontier is None else with_frontier
    sys.exit(_run_all(plans, out_dir, cluster, _jobs(jobs, cluster), spec.name, os.path.abspath(suite_file),
                      backend_options=options, executor=ex, frontier=spec.frontier if on else None))


if __name__ == "__main__":
    main()
