"""Run CLI invocations in a child process with a memory limit and a per-invocation time limit.

Why a child: a hostile input that escapes the schema could exhaust memory or
loop forever, and that must be observed (and counted) rather than take the
test run down. A fresh interpreter per example would cost seconds of imports
each, so one long-lived child (``python -m tests.adversarial.sandbox``) runs
the examples in-process through click's CliRunner, under ``RLIMIT_AS``; the
parent enforces the time limit by killing it, and starts a new one after a
hang or a crash. The report renderer is replaced by a no-op in the child: it
is not what is fuzzed here, and it would dominate the time of every run.

Outcomes: ``ok`` (exit 0), ``clean`` (exit 2 with exactly one ``error:`` line
and no traceback), ``internal`` (exit 3: the guard caught a bug), ``traceback``
(any other exit, or a traceback printed), ``hang`` (time limit), ``crash``
(the child died: memory limit, a signal).
"""
from __future__ import annotations

import json
import os
import resource
import select
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

MEMORY_LIMIT_BYTES = 3 * 1024**3  # address space; a plain `scalearena run` peaks near 1.7 GiB virtual
REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Outcome:
    kind: str  # ok | clean | internal | traceback | hang | crash
    exit_code: int | None
    output: str

    @property
    def acceptable(self) -> bool:
        return self.kind in ("ok", "clean")


def classify(exit_code: int, output: str) -> str:
    lines = [ln for ln in output.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("error: ")]
    if "Traceback" in output:
        return "traceback"
    if exit_code == 0:
        return "ok"
    if exit_code == 2 and len(errors) == 1:
        return "clean"
    if exit_code == 3:
        return "internal"
    return "traceback"


class Sandbox:
    """The parent side: ``invoke(args, timeout_s)`` -> Outcome."""

    def __init__(self, memory_limit: int = MEMORY_LIMIT_BYTES) -> None:
        self.memory_limit = memory_limit
        self.proc: subprocess.Popen[bytes] | None = None

    def _start(self) -> subprocess.Popen[bytes]:
        limit = self.memory_limit

        def limits() -> None:
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

        return subprocess.Popen([sys.executable, "-m", "tests.adversarial.sandbox"], cwd=REPO, preexec_fn=limits,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)

    def invoke(self, args: list[str], timeout_s: float) -> Outcome:
        if self.proc is None or self.proc.poll() is not None:
            self.proc = self._start()
        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            self.proc.stdin.write((json.dumps(args) + "\n").encode())
            self.proc.stdin.flush()
        except BrokenPipeError:  # it died before reading (e.g. its imports hit the memory limit)
            code = self.proc.wait()
            self.proc = None
            return Outcome("crash", code, "the sandbox died")
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout_s)
        if not ready:
            self.close()
            return Outcome("hang", None, f"no answer within {timeout_s:g} s")
        line = self.proc.stdout.readline()
        if not line:
            code = self.proc.wait()
            self.proc = None
            return Outcome("crash", code, "the sandbox died")
        answer = json.loads(line)
        return Outcome(classify(answer["exit_code"], answer["output"]), answer["exit_code"], answer["output"])

    def close(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None


def _serve() -> None:
    """The child side: one JSON list of CLI arguments per stdin line, one JSON answer per stdout line."""
    from click.testing import CliRunner

    from scalearena.harness.cli import main as cli

    cli._write_report = lambda out: None  # not what is fuzzed (see the module docstring)
    out = os.fdopen(os.dup(1), "w")
    for line in sys.stdin:
        args = json.loads(line)
        try:
            r = CliRunner().invoke(cli.main, args)
            answer = {"exit_code": r.exit_code, "output": r.output}
            if r.exception is not None and not isinstance(r.exception, SystemExit):
                answer = {"exit_code": -1, "output": r.output + f"\nTraceback: {r.exception!r}"}
        except BaseException as e:  # noqa: BLE001 - reported to the parent, never swallowed silently
            answer = {"exit_code": -1, "output": f"Traceback: {type(e).__name__}: {e}"}
        out.write(json.dumps(answer) + "\n")
        out.flush()


if __name__ == "__main__":
    _serve()
