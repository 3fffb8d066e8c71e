"""Where `make bench`'s time goes: the paper suite's phases, wall and CPU, in one process as `suite` runs them.

    .venv/bin/python benchmarks/bench_phases.py [OUT] [--jobs N]

Phases: importing the CLI (serial, before any worker exists; the forked workers inherit the modules),
expanding the suite, the runs (worker CPU, each run page included: the worker writes it as its run
ends), the report step after the last run (the suite page; the run pages are found up to date) and
the summary table. On a machine with N idle cores, `make bench` takes about the serial phases plus
the workers' CPU / N. Figures only: nothing is asserted (timing belongs in benchmarks, not tests).
"""
from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _cpu() -> tuple[float, float]:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime


class Phases:
    def __init__(self) -> None:
        self.last = (time.perf_counter(), *_cpu())
        self.rows: list[tuple[str, float, float, float]] = []

    def mark(self, name: str) -> None:
        now, own, kids = time.perf_counter(), *_cpu()
        self.rows.append((name, now - self.last[0], own - self.last[1], kids - self.last[2]))
        self.last = (now, own, kids)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", nargs="?", default=None, help="fresh results folder (default: a temporary one)")
    ap.add_argument("--jobs", type=int, default=None, help="worker processes (default: all cores)")
    args = ap.parse_args()
    out = Path(args.out or tempfile.mkdtemp(prefix="scalearena-phases-"))
    ph = Phases()
    from scalearena.harness.cli import main as cli
    from scalearena.harness.config.suite import load_suite
    from scalearena.harness.run.executor import LocalExecutor
    from scalearena.harness.run.runner import SuiteRecorder, default_jobs, prepare_out, with_pages
    ph.mark("import the CLI (parent)")
    spec, plans = load_suite(ROOT / "workloads/suites/paper.yaml")
    prepare_out(out)
    plans = with_pages(plans)
    rec = SuiteRecorder(out, spec.name, "sim", plans, None)
    ph.mark("suite expanded, suite.json")
    jobs = args.jobs or default_jobs("sim")
    results: list[dict] = []
    with LocalExecutor(jobs, "sim") as ex:
        ex.run(plans, out, lambda r: (rec.record(r), results.append(r)))
    rec.close(True)
    ph.mark(f"{len(plans)} runs + run pages ({jobs} jobs)")
    from scalearena.reports.report import write_suite_report
    write_suite_report(out)
    ph.mark("report step (suite page)")
    cli._print_table(results)
    ph.mark("summary table")
    print(f"{'phase':34s} {'wall s':>7s} {'CPU s (this)':>12s} {'CPU s (workers)':>15s}", file=sys.stderr)
    for name, wall, own, kids in ph.rows:
        print(f"{name:34s} {wall:7.2f} {own:12.2f} {kids:15.2f}", file=sys.stderr)
    serial = sum(own for name, _, own, _ in ph.rows)
    workers = sum(kids for *_, kids in ph.rows)
    print(f"serial CPU {serial:.2f} s + workers' CPU {workers:.2f} s / {jobs} cores = {serial + workers / jobs:.2f} s "
          f"on {jobs} idle cores; results in {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
