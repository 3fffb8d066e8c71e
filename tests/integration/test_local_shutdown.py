"""CLUSTER=local shutdown: Ctrl-C or a failure mid-run ends every child and keeps partial results.

The issue's promise ("on Ctrl-C or any failure every child process ends and
partial results are kept, marked incomplete") is only worth something if it
holds for the real command line, so these tests drive `python -m scalearena
run` as a user would: in its own process group, against local_step.yaml at a
time scale that would take ~25 s of wall time. Once the run shows progress
(autoscaler decisions, a checkpoint summary, Locust records) the test either
sends SIGINT to the group (what Ctrl-C on a terminal does) or SIGKILLs the
router (a child dying under the harness: OOM killer, a stray `kill`), and
then checks the exit code, the run folder and that no descendant of the CLI
outlives it. Descendants are found through /proc (``/proc/<pid>/task/*/children``)
while the run goes, keyed by start time so a reused PID is never mistaken for
a leftover; a finally block SIGKILLs anything left so a failing test leaks
nothing.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from scalearena.contracts.records import STATUSES

from .test_local_backend import HERE

pytestmark = [
    pytest.mark.local,
    pytest.mark.skipif(shutil.which("prometheus") is None, reason="needs prometheus (scripts/ensure-prometheus.sh)"),
    pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs /proc to track child processes"),
]
TIME_SCALE = "4"  # local_step.yaml is 110 scenario seconds: ~28 s of wall time if nobody stops it
PROGRESS_TIMEOUT_S = 45.0  # process start (Prometheus, router, a warm engine, Locust) takes ~5-10 s
EXIT_TIMEOUT_S = 30.0  # Supervisor.close: SIGTERM, 3 s grace, SIGKILL; plus the final parquet/summary write
REPO = Path(__file__).resolve().parents[2]

Proc = tuple[int, int]  # (pid, start time in clock ticks): identifies one process across PID reuse


def _start_time(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()  # after "pid (comm) "; comm may contain spaces
    if fields[0] == "Z":
        return None  # a zombie has ended; only its exit status is left to reap
    return int(fields[19])


def _descendants(root: int) -> set[Proc]:
    """Every live process below ``root`` (children in their own sessions included)."""
    found: set[Proc] = set()
    todo = [root]
    while todo:
        pid = todo.pop()
        for children in Path(f"/proc/{pid}/task").glob("*/children"):
            try:
                kids = [int(x) for x in children.read_text().split()]
            except OSError:
                continue
            for kid in kids:
                st = _start_time(kid)
                if st is not None and (kid, st) not in found:
                    found.add((kid, st))
                    todo.append(kid)
    return found


def _alive(procs: set[Proc]) -> set[Proc]:
    return {(pid, st) for pid, st in procs if _start_time(pid) == st}


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return "?"


def _lines(path: Path) -> int:
    try:
        return path.read_text().count("\n")
    except OSError:
        return 0


class LocalCli:
    """`scalearena run ... --cluster local` as a subprocess, with its descendants tracked."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.run_dir = out / "local-step" / "hpa"
        env = dict(os.environ, SCALEARENA_TIME_SCALE=TIME_SCALE, PYTHONUNBUFFERED="1")
        self.stderr_path = out.parent / "cli.stderr"
        self._stderr = open(self.stderr_path, "wb")  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "scalearena", "run", str(HERE / "local_step.yaml"), "--cluster", "local",
             "--autoscaler", "hpa", "--out", str(out)],
            cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self._stderr,
            start_new_session=True,  # its own process group, as a shell job is
        )
        self.seen: set[Proc] = set()

    def track(self) -> None:
        self.seen |= _descendants(self.proc.pid)

    def wait_until(self, what: str, cond: Callable[[], bool], timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            self.track()
            if cond():
                return
            if self.proc.poll() is not None:
                pytest.fail(f"CLI exited ({self.proc.returncode}) before {what}:\n{self.stderr()}")
            time.sleep(0.1)
        pytest.fail(f"no {what} after {timeout_s:.0f} s:\n{self.stderr()}")

    def wait_for_progress(self) -> None:
        """Decisions made, a checkpoint written, requests completed: the run is under way."""
        d = self.run_dir
        self.wait_until(
            "progress",
            lambda: _lines(d / "decisions.jsonl") >= 1 and (d / "summary.json").exists()
            and _lines(d / "records-0.jsonl") >= 3,
            PROGRESS_TIMEOUT_S,
        )
        self.track()

    def child_named(self, needle: str) -> int:
        pids = [pid for pid, _ in _alive(self.seen) if needle in _cmdline(pid)]
        assert len(pids) == 1, {pid: _cmdline(pid) for pid, _ in self.seen}
        return pids[0]

    def wait_exit(self) -> int:
        deadline = time.monotonic() + EXIT_TIMEOUT_S
        while self.proc.poll() is None and time.monotonic() < deadline:
            self.track()  # a child started during shutdown is a child too
            time.sleep(0.05)
        if self.proc.poll() is None:
            pytest.fail(f"CLI still running {EXIT_TIMEOUT_S:.0f} s after the stop:\n{self.stderr()}")
        return int(self.proc.returncode)

    def stderr(self) -> str:
        self._stderr.flush()
        return self.stderr_path.read_text(errors="replace")

    def close(self) -> None:
        """Whatever happened, leave nothing running."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(timeout=10)
        for pid, _ in _alive(self.seen):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self._stderr.close()


def assert_partial_results(run_dir: Path, out: Path, reason: str) -> dict:
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["complete"] is False, summary
    assert reason in summary.get("incomplete_reason", ""), summary.get("incomplete_reason")
    req = pd.read_parquet(run_dir / "requests.parquet")
    assert len(req) == 400, len(req)  # the whole schedule (40 x 1 rps + 60 x 6 rps), sent or not
    assert req["status"].isin(STATUSES).all(), req["status"].value_counts().to_dict()
    assert (req["status"] == "ok").sum() >= 3  # what finished before the stop is kept
    assert summary["requests_total"] == len(req)
    assert summary["requests_ok"] + sum(summary["failures"].values()) == summary["requests_total"]
    suite = json.loads((out / "suite.json").read_text())
    assert suite["complete"] is False, suite
    return suite


def assert_no_leftovers(cli: LocalCli, at_least: int = 4) -> None:
    # engines x1+, router, Prometheus, Locust: all seen while the run went
    names = " ".join(_cmdline(pid) for pid, _ in cli.seen)
    assert len(cli.seen) >= at_least, names
    deadline = time.monotonic() + 5.0  # orphans reparented to init are reaped asynchronously
    while _alive(cli.seen) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = {pid: _cmdline(pid) for pid, _ in _alive(cli.seen)}
    assert not left, f"children of the run still alive after the CLI exited: {left}"


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_ctrl_c_stops_every_child_and_keeps_partial_results(tmp_path: Path, sig: int, code: int) -> None:
    out = tmp_path / "out"
    cli = LocalCli(out)
    try:
        cli.wait_for_progress()
        n_before = len(cli.seen)
        if sig == signal.SIGINT:
            os.killpg(cli.proc.pid, signal.SIGINT)  # Ctrl-C: SIGINT to the foreground process group
        else:
            cli.proc.send_signal(signal.SIGTERM)  # `kill PID`, a CI job's timeout: the main process only
        rc = cli.wait_exit()  # fails the test if the CLI hangs (EXIT_TIMEOUT_S): a hang guard, not a speed claim
        err = cli.stderr()
        assert rc == code, err
        assert "Traceback" not in err, err
        assert "interrupted" in err
        suite = assert_partial_results(cli.run_dir, out, "interrupted")
        assert suite["runs"][0]["status"] == "interrupted", suite["runs"]  # started, never finished, never failed
        assert not (cli.run_dir / "error.log").exists()  # Ctrl-C is not an error
        assert n_before >= 4
        assert_no_leftovers(cli)
    finally:
        cli.close()


def test_router_death_fails_the_run_and_stops_every_child(tmp_path: Path) -> None:
    """A child the run cannot go on without dies: the run fails, kept as incomplete, nothing left."""
    out = tmp_path / "out"
    cli = LocalCli(out)
    try:
        cli.wait_for_progress()
        router = cli.child_named("cli router")
        os.kill(router, signal.SIGKILL)
        rc = cli.wait_exit()
        err = cli.stderr()
        assert rc == 1, err
        assert "Traceback" not in err, err
        assert "router process died" in err
        suite = assert_partial_results(cli.run_dir, out, "RuntimeError: the router process died")
        assert suite["runs"][0]["status"] == "failed", suite["runs"]
        assert "router process died" in (cli.run_dir / "error.log").read_text()
        assert_no_leftovers(cli)
    finally:
        cli.close()


def test_ctrl_c_while_the_run_starts_still_marks_it_incomplete(tmp_path: Path) -> None:
    """Ctrl-C as soon as the run folder exists: mostly lands while the local backend is imported
    (~0.5 s) or its processes start; the folder still gets a summary marked incomplete."""
    out = tmp_path / "out"
    cli = LocalCli(out)
    try:
        cli.wait_until("run folder", lambda: (cli.run_dir / "scenario.json").exists(), PROGRESS_TIMEOUT_S)
        os.killpg(cli.proc.pid, signal.SIGINT)
        rc = cli.wait_exit()
        err = cli.stderr()
        assert rc == 130, err
        assert "Traceback" not in err, err
        summary = json.loads((cli.run_dir / "summary.json").read_text())
        assert summary["complete"] is False and summary["incomplete_reason"] == "interrupted", summary
        req = pd.read_parquet(cli.run_dir / "requests.parquet")
        assert req["status"].isin(STATUSES).all()
        assert json.loads((out / "suite.json").read_text())["complete"] is False
        assert_no_leftovers(cli, at_least=0)
    finally:
        cli.close()


def test_a_sigkilled_harness_takes_every_child_with_it(tmp_path: Path) -> None:
    """SIGKILL leaves the harness no chance to clean up (no handler, no atexit): before, its engines, router,
    Prometheus and Locust kept listening, each in its own session. Each is started with PR_SET_PDEATHSIG
    (harness/run/interrupts.py die_with_parent), so the kernel SIGKILLs it when the harness dies."""
    out = tmp_path / "out"
    cli = LocalCli(out)
    try:
        cli.wait_for_progress()
        cli.track()
        assert len(cli.seen) >= 4, [_cmdline(pid) for pid, _ in cli.seen]  # Prometheus, router, engine, Locust
        os.kill(cli.proc.pid, signal.SIGKILL)  # the main process only: its children are in sessions of their own
        assert cli.wait_exit() == -signal.SIGKILL
        assert_no_leftovers(cli)
    finally:
        cli.close()
