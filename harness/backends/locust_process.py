"""The host Locust process of a run, once for local and kube: schedule in, env set, start, stop, records out.

Both wall-clock backends send the run's request stream with one Locust
process on this host (workloads/locust_user.py, the protocol in
workloads/load_handoff.py); kube's in-cluster distributed Locust keeps its
Job specifics in kube/load.py and shares the schedule and records format.
The process gets its own session so a stop reaches Locust's worker
processes too (the whole group is signalled). ``spawn`` is injectable: the
local backend hands its ``Supervisor`` (which also kills the group on any
teardown); tests hand a fake.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from scalearena.workloads import load_handoff as load

Spawn = Callable[[list[str], dict[str, str]], subprocess.Popen]


class LocustProcess:
    """One run's Locust: ``run_dir`` gets ``schedule.jsonl`` and the ``records-<worker>.jsonl`` files,
    ``log`` the process output. Times: ``end_s``/``timeout_s`` in scenario seconds, ``t0`` epoch seconds."""

    def __init__(self, run_dir: Path, host: str, *, end_s: float, timeout_s: float, time_scale: float = 1.0,
                 options: dict[str, str] | None = None, log: Path | None = None, csv: Path | None = None,
                 spawn: Spawn | None = None, wall: Callable[[], float] = time.time) -> None:
        self.run_dir, self.host, self.end_s, self.timeout_s = run_dir, host, end_s, timeout_s
        self.time_scale, self.options = time_scale, dict(options or {})  # e.g. load.ENV_API: "chat"
        self.log = log or run_dir / "logs" / "locust.log"
        self.csv = csv or self.log.parent / "locust"  # Locust's --csv prefix (its stats tables)
        self.spawn, self.wall = spawn or self._popen, wall
        self.proc: subprocess.Popen | None = None
        self.t0 = 0.0

    def env(self) -> dict[str, str]:
        return {load.ENV_SCHEDULE: str(self.run_dir / "schedule.jsonl"),
                load.ENV_RECORDS: str(self.run_dir / "records-{worker}.jsonl"), load.ENV_T0: repr(self.t0),
                load.ENV_TIME_SCALE: repr(self.time_scale), load.ENV_TIMEOUT_S: repr(self.timeout_s),
                load.ENV_END_S: repr(self.end_s), **self.options}

    def argv(self) -> list[str]:
        return [sys.executable, "-m", "scalearena.workloads.locust_user", "--host", self.host,
                "--csv", str(self.csv)]

    def start(self, requests: Sequence[Any], lead_s: float) -> float:
        """Write the schedule, start Locust with scenario time 0 ``lead_s`` wall seconds from now
        (it needs about a second to import and connect); returns that ``t0``."""
        load.write_schedule(self.run_dir / "schedule.jsonl", requests)
        self.t0 = self.wall() + lead_s
        self.proc = self.spawn(self.argv(), self.env())
        return self.t0

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, grace_s: float) -> None:
        """SIGTERM to the process group, up to ``grace_s`` to flush its records, then SIGKILL."""
        if not self.alive():
            return
        assert self.proc is not None
        self._signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            self._signal(signal.SIGKILL)
            self.proc.wait(timeout=5.0)

    def record_files(self) -> list[Path]:
        return sorted(self.run_dir.glob("records-*.jsonl"))

    def _signal(self, sig: int) -> None:
        assert self.proc is not None
        try:
            os.killpg(self.proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def _popen(self, argv: list[str], env: dict[str, str]) -> subprocess.Popen:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log, "ab") as out:
            return subprocess.Popen(argv, env={**os.environ, **env}, stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=subprocess.STDOUT, start_new_session=True)
