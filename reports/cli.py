"""`scalearena report` and `scalearena compare` (click commands).

The lead's main group adds them with
``from scalearena.reports.cli import report, compare``. Each command turns a
``UserError`` into one line on stderr and exit 2 itself, so it behaves the
same inside the main group and alone. ``compare`` exits 1 on a regression.
"""
from __future__ import annotations

import sys
from pathlib import Path

import click

from scalearena.contracts.cli_params import JOBS
from scalearena.contracts.errors import UserError


def write_report_with_progress(results_dir: Path, jobs: int | None = None, force: bool = False,
                               min_attainment: float | None = None) -> Path:
    """``write_suite_report`` with a progress bar on stderr (run pages, then the suite page)."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

    from scalearena.reports.report import write_suite_report

    console = Console(stderr=True)
    columns = (TextColumn("report: {task.description}", markup=False), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn())
    with Progress(*columns, console=console, transient=not console.is_terminal) as bar:
        tasks: dict[str, TaskID] = {}

        def step(name: str, done: int, total: int) -> None:
            if name not in tasks:
                tasks[name] = bar.add_task(name, total=total)
                if not console.is_terminal and done < total:  # a log (CI, make | tee) gets no live bar:
                    console.print(f"report: {name}: {total} to render", highlight=False)  # say what is to come
            bar.update(tasks[name], completed=done, total=total)

        out = write_suite_report(results_dir, jobs=jobs, progress=step, force=force, min_attainment=min_attainment)
    return out


def _fail(err: UserError) -> None:
    click.echo(f"error: {err.render()}", err=True)
    sys.exit(2)


@click.command("report")
@click.argument("results_dir", type=click.Path(path_type=Path))
@click.option("--jobs", "-j", type=JOBS, default=None,
              help="Processes rendering run reports in parallel (default: one per CPU).")
@click.option("--force", is_flag=True, help="Render every page, even those whose inputs did not change.")
@click.option("--min-attainment", type=click.FloatRange(0.0, 1.0), default=None,
              help="SLO-attainment target of the verdict, 0..1 (default: each scenario's attainment_target, "
                   "else 0.95).")
def report(results_dir: Path, jobs: int | None, force: bool, min_attainment: float | None) -> None:
    """Regenerate report.html for a suite results folder or a single run folder.

    Pages whose inputs (result files and renderer) are unchanged are kept."""
    try:
        if (results_dir / "tune.json").is_file():  # a tuning study's folder: its one page (reports/tune.py)
            from scalearena.reports.tune import write_tune_report

            out = write_tune_report(results_dir, force=force)
        else:
            out = write_report_with_progress(results_dir, jobs=jobs, force=force, min_attainment=min_attainment)
    except UserError as e:
        _fail(e)
    click.echo(str(out))


@click.command("compare")
@click.argument("baseline", type=click.Path(path_type=Path))
@click.argument("current", type=click.Path(path_type=Path))
@click.option("--tolerance", "-t", "tolerances", multiple=True, metavar="METRIC=PCT",
              help="Allowed worsening in percent for one metric (e.g. ttft_p99=15, cost=off). Repeatable.")
@click.option("--scenario", "scenarios", multiple=True, metavar="GLOB",
              help="Compare only runs of scenarios matching this glob (repeatable).")
@click.option("--autoscaler", "autoscalers", multiple=True, metavar="GLOB",
              help="Compare only runs of autoscalers matching this glob (repeatable).")
@click.option("--run", "run_keys", multiple=True, metavar="GLOB",
              help="Compare only runs whose key scenario/autoscaler[/sweep] matches this glob (repeatable).")
@click.option("--allow-config-change", is_flag=True,
              help="Compare even when SLOs, workload or cluster differ between the sides (a warning is still printed).")
@click.option("--verbose", "-v", is_flag=True, help="List every metric of every run, not only changes.")
@click.option("--html", "html_path", type=click.Path(path_type=Path), default=None,
              help="Where to write compare.html (default: CURRENT/compare.html).")
@click.option("--markdown", "markdown_path", type=click.Path(path_type=Path), default=None,
              help="Also write the Markdown summary to this file.")
@click.option("--allow-incomplete", is_flag=True,
              help="Compare interrupted/failed runs instead of refusing them (an incomplete current run fails).")
def compare(baseline: Path, current: Path, tolerances: tuple[str, ...], scenarios: tuple[str, ...],
            autoscalers: tuple[str, ...], run_keys: tuple[str, ...], allow_config_change: bool, verbose: bool,
            html_path: Path | None, markdown_path: Path | None, allow_incomplete: bool) -> None:
    """Compare CURRENT results with a BASELINE; exit 1 on a regression beyond tolerance.

    Prints the verdict first, then only the metrics that regressed or improved
    beyond tolerance (--verbose: all). Exit 2 when the SLOs or the workload
    differ between the sides, unless --allow-config-change.

    Metrics and default tolerances (allowed worsening relative to the baseline):
    throughput_rps, goodput_rps, slo_attainment -5 %; ttft_mean, ttft_p99,
    itl_mean, itl_p99, e2e_p99, gpu_hours, cost, energy_kwh +10 %;
    failures +10 % (+0 when the baseline had none).
    """
    from scalearena.reports.compare import compare as run_compare, parse_tolerances
    from scalearena.reports.compare_config import RunFilter
    from scalearena.reports.compare_output import (
        append_step_summary,
        markdown,
        text_table,
        write_compare_html,
    )
    from scalearena.reports.results import check_writable

    only = RunFilter(scenarios, autoscalers, run_keys)
    try:
        for out in (html_path, markdown_path):  # before any work: a device or FIFO is no output
            if out is not None:
                check_writable(Path(out))
        result = run_compare(baseline, current, parse_tolerances(tolerances), allow_incomplete, only=only)
    except UserError as e:
        _fail(e)
    refused = bool(result.config_changes) and not allow_config_change
    click.echo(text_table(result, verbose, refused))
    target = html_path or Path(current) / "compare.html"
    try:
        html = write_compare_html(result, target, verbose, refused)
        if markdown_path is not None:
            target = markdown_path
            markdown_path.parent.mkdir(parents=True, exist_ok=True)
            markdown_path.write_text(markdown(result, refused), encoding="utf-8")
    except OSError as e:
        _fail(UserError(f"cannot write: {e.strerror or e}", where=str(target), expected="a writable path"))
    click.echo(f"report: {html}")  # outside the try: a closed stdout (| head) is not an unwritable file
    append_step_summary(result, refused)
    if refused:
        _fail(UserError("SLOs, workload or cluster differ between baseline and current (listed above); "
                        "rerun one side, or pass --allow-config-change to compare anyway",
                        where=f"{baseline} vs {current}"))
    sys.exit(0 if result.passed else 1)
