"""Process identity for records that outlive their starter (local/supervisor.py's start_ticks)."""
from __future__ import annotations

import os

from scalearena.harness.local.supervisor import start_ticks


def test_start_ticks_reads_proc() -> None:
    t = start_ticks(os.getpid())
    assert t is not None and t > 0
    assert start_ticks(2**22 + 12345) is None  # above pid_max's default ceiling: no such process
