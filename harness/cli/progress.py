"""One run's progress line under the suite bar (harness/cli/main.py), on a terminal and in a log.

rich draws its bars only on a terminal; in a CI log a local or kube run would otherwise print nothing from its
start to its "ok" line (a minute or more). There ``RunBar`` prints a plain line every ``QUIET_LINE_S`` of wall
time instead: how far the run is in scenario time and how long it has taken.
"""
from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.progress import Progress
from rich.table import Table
from rich.text import Text

from scalearena.harness.run.outcome import RunOutcome

QUIET_LINE_S = 20.0  # wall seconds between two plain progress lines when there is no terminal


class RunBar:
    """A context manager giving the ``progress(now, end)`` callback of one run; the bar goes when it ends."""

    def __init__(self, progress: Progress, label: str, total_s: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.progress, self.label, self.clock = progress, label, clock
        self.task = progress.add_task(f"  {label}", total=total_s)
        self.started = clock()
        self.said = 0.0  # wall seconds into the run of the last plain line

    def __enter__(self) -> RunBar:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.progress.remove_task(self.task)

    def __call__(self, now: float, end: float) -> None:
        self.progress.update(self.task, completed=max(0.0, min(now, end)))
        wall = self.clock() - self.started
        if not self.progress.console.is_terminal and wall - self.said >= QUIET_LINE_S:
            self.said = wall
            where = f"{min(now, end):.0f} of {end:.0f} s of scenario time" if now >= 0 else \
                f"load starts in {-now:.0f} s of scenario time"  # a kube run samples from before its load's t0
            self.progress.console.print(Text(f"  ... {self.label}: {where} after {wall:.0f} s"), highlight=False)


def run_lines(r: RunOutcome) -> list[Text]:
    """The lines printed when a run ends: its outcome, then a warning per signal its autoscaler never
    received (reports/signal_health.py)."""
    from scalearena.reports.signal_health import blind_text

    mark = {"ok": ("ok", "green"), "bad_input": ("bad input", "red")}.get(r.status, ("failed", "red"))
    if r.attempts > 1:
        mark = (f"{mark[0]} after {r.attempts} attempts (worker lost)", "yellow")
    detail = f": {r.error}" if r.status == "failed" else ""  # bad input is printed once at the end
    lines = [Text.assemble("  ", mark, f" {r.dir} ({r.wall_s:.1f} s){detail}")]
    for m in (r.summary or {}).get("signals_missing") or ():
        lines.append(Text.assemble("    ", ("warning", "yellow"), f": {blind_text(m)}"))
    return lines


def print_table(results: list[RunOutcome]) -> None:
    rows = sorted(((r.dir, r.summary) for r in results if r.ok and r.summary is not None), key=lambda x: x[0])
    if not rows:
        return
    from scalearena.reports.catalog import cost_metric

    cost = cost_metric([s for _, s in rows])  # the report's one cost unit: USD if priced, else GPU-hours
    t = Table("run", "goodput rps", "throughput rps", "failures", "TTFT p99 ms", "replicas mean",
              "cost USD" if cost.id == "cost_usd" else "GPU-hours")
    t.columns[0].overflow = "fold"
    for run_dir, s in rows:
        p99 = s["ttft_ms"]["p99"]
        t.add_row(Text(run_dir), f"{s['goodput_rps']:.2f}", f"{s['throughput_rps']:.2f}",
                  str(sum(s["failures"].values())), "-" if p99 is None else f"{p99:.0f}",
                  f"{s['replicas']['mean']:.2f}", cost.format(cost.value(s)))
    # piped output (CI logs) gets a wide table instead of rich's 80-column default
    Console(width=None if sys.stdout.isatty() else 150).print(t)
