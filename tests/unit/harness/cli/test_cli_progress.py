"""RunBar (harness/cli/progress.py): a bar on a terminal, a plain line every QUIET_LINE_S in a log."""
from __future__ import annotations

import io

from rich.console import Console
from rich.progress import Progress

from scalearena.harness.cli.progress import QUIET_LINE_S, RunBar


def _run(terminal: bool) -> str:
    out = io.StringIO()
    console = Console(file=out, force_terminal=terminal, width=120)
    now = [100.0]
    with Progress(console=console, transient=False, auto_refresh=False) as progress:
        with RunBar(progress, "exp2/hpa", 300, clock=lambda: now[0]) as advance:
            # wall 5 s (scenario 0), 21 s (30), 30 s (60), 45 s (120): with QUIET_LINE_S = 20, lines at 21 and 45
            for wall, t in ((5, 0), (21, 30), (30, 60), (45, 120)):
                now[0] = 100.0 + wall
                advance(t, 300)
        assert not progress.tasks  # the run's bar is gone when the run ends
    return out.getvalue()


def test_a_log_gets_a_plain_line_every_quiet_interval() -> None:
    assert QUIET_LINE_S == 20.0
    lines = [x.strip() for x in _run(terminal=False).splitlines() if x.strip().startswith("...")]
    assert lines == ["... exp2/hpa: 30 of 300 s of scenario time after 21 s",
                     "... exp2/hpa: 120 of 300 s of scenario time after 45 s"]


def test_a_terminal_gets_the_bar_only() -> None:
    assert "of scenario time" not in _run(terminal=True)


def test_a_run_sampled_before_its_loads_start_says_so_instead_of_a_negative_time() -> None:
    out = io.StringIO()
    now = [0.0]
    with Progress(console=Console(file=out, force_terminal=False, width=120), auto_refresh=False) as progress:
        with RunBar(progress, "svr/hpa", 220, clock=lambda: now[0]) as advance:
            now[0] = 25.0  # a kube run: set-up took 25 s, its first sample is 3 s before the load's t0
            advance(-3.0, 220)
    assert "... svr/hpa: load starts in 3 s of scenario time after 25 s" in out.getvalue()
