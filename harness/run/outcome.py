"""What one run came to, as every executor hands it on: the runner's verdict on a plan, never an exception.

The suite's progress lines, suite.json, the oracle frontier, tuning and the exit code all read it; it
crosses a process (or a Ray task) by pickling, so it holds plain values only.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Status = Literal["ok", "bad_input", "failed"]


@dataclass
class RunOutcome:
    dir: str  # the run's folder under OUT (RunPlan.rel_dir)
    status: Status  # ok: a summary; bad_input: a UserError (exit 2); failed: anything else (exit 1)
    wall_s: float = 0.0
    summary: dict[str, Any] | None = None  # summary.json's content when ok
    error: str | None = None  # the one-line message when not ok
    attempts: int = 1  # how many times it ran (Ray runs a plan again when its worker is lost)

    @property
    def ok(self) -> bool:
        return self.status == "ok"
