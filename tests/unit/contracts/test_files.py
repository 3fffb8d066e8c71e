"""contracts/files.py's folder_lock: one holder at a time across processes of this host."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from scalearena.contracts.files import folder_lock


def test_a_second_process_waits_for_the_holder(tmp_path: Path) -> None:
    """While this process holds the lock, another's non-blocking try fails; once released it succeeds."""
    probe = ("import fcntl, sys; f = open(sys.argv[1], 'a')\n"
             "try:\n    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB); print('free')\n"
             "except BlockingIOError:\n    print('held')")
    lockfile = tmp_path / "cache" / ".lock"

    def other() -> str:
        return subprocess.run([sys.executable, "-c", probe, str(lockfile)], capture_output=True, text=True,
                              check=True, timeout=60).stdout.strip()

    with folder_lock(tmp_path / "cache"):  # the folder is made with the lock
        assert other() == "held"
    assert other() == "free"
