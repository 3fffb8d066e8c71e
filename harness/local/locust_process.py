"""The host Locust process(es) of a run, once for local and kube: schedule in, env set, start, stop, records out.

Both wall-clock backends send the run's request stream from this host
(workloads/locust_user.py, the protocol in workloads/load_handoff.py); kube's
in-cluster distributed Locust keeps its Job specifics in kube/load.py and
shares the schedule and records format.

One process (``workers=1``, the default) runs the user in library mode.
Beyond one process's capacity (about 500 req/s here, docs/local.md)
``workers=N`` starts Locust's own master/worker mode on 127.0.0.1: one
``locust --master`` (bound to loopback, one user per worker, no load of its
own: it aggregates the stats into the CSV files) and N ``locust --worker``
processes, worker ``i`` with ``SCALEARENA_WORKER_INDEX=i``, so it sends the
requests with ``request_id % N == i`` and writes ``records-<i>.jsonl``. The
master quits when its last worker has quit (its share sent, the last
response in or timed out).

Start: a process imports Locust at its own pace (a second or two, several
on a loaded host), so scenario time 0 is not fixed at spawn time. Each
user says when it runs (a ready marker) and waits for one start file,
written ``lead_s`` before t0 once the last is ready; with a t0 fixed at
spawn, a slow import had made the first requests late (send lag p99 1.3 s
at 200 req/s on a loaded 2-core host, all of it the first second).

Every process gets its own session, so a stop reaches all its children (the
group is signalled). ``spawn(name, argv, env)`` is injectable: the local
backend hands its ``Supervisor`` (which also kills the groups on any
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

from scalearena.harness.local.supervisor import LOOPBACK, free_port
from scalearena.harness.run.interrupts import die_with_parent
from scalearena.workloads import load_handoff as load

Spawn = Callable[[str, list[str], dict[str, str]], subprocess.Popen]
START_FILE = "locust-start.json"


class LocustProcess:
    """One run's load generator: ``run_dir`` gets ``schedule.jsonl`` and the ``records-<worker>.jsonl`` files,
    ``log`` the (master) process output, each worker ``locust-worker-<i>.log`` beside it. Times: ``end_s`` /
    ``timeout_s`` in scenario seconds, ``t0`` epoch seconds."""

    def __init__(self, run_dir: Path, host: str, *, end_s: float, timeout_s: float, time_scale: float = 1.0,
                 options: dict[str, str] | None = None, log: Path | None = None, csv: Path | None = None,
                 spawn: Spawn | None = None, wall: Callable[[], float] = time.time, workers: int = 1,
                 ready_timeout_s: float = 120.0, sleep: Callable[[float], None] = time.sleep) -> None:
        self.run_dir, self.host, self.end_s, self.timeout_s = run_dir, host, end_s, timeout_s
        self.time_scale, self.options = time_scale, dict(options or {})  # e.g. load.ENV_API: "chat"
        self.log = log or run_dir / "logs" / "locust.log"
        self.csv = csv or self.log.parent / "locust"  # Locust's --csv prefix (its stats tables)
        self.spawn, self.wall, self.sleep = spawn or self._popen, wall, sleep
        self.workers, self.ready_timeout_s = int(workers), ready_timeout_s
        self.procs: dict[str, subprocess.Popen] = {}  # "locust" (library mode or the master), "locust-worker-<i>"
        self.t0 = 0.0
        self.master_port = 0

    @property
    def proc(self) -> subprocess.Popen | None:
        """The library-mode process, or the master."""
        return self.procs.get("locust")

    @property
    def start_file(self) -> Path:
        return self.run_dir / START_FILE

    def env(self, worker: int | None = None) -> dict[str, str]:
        """The SCALEARENA_* environment of the library-mode process or the master (``worker`` None) or a worker."""
        env = {load.ENV_SCHEDULE: str(self.run_dir / "schedule.jsonl"),
               load.ENV_RECORDS: str(self.run_dir / "records-{worker}.jsonl"),
               load.ENV_TIME_SCALE: repr(self.time_scale), load.ENV_TIMEOUT_S: repr(self.timeout_s),
               load.ENV_END_S: repr(self.end_s), **self.options}
        if worker is not None or self.workers == 1:
            env.update({load.ENV_WORKER_INDEX: str(worker or 0), load.ENV_WORKER_COUNT: str(self.workers),
                        load.ENV_START_FILE: str(self.start_file)})
        return env

    def argv(self) -> list[str]:
        return [sys.executable, "-m", "scalearena.workloads.locust_user", "--host", self.host,
                "--csv", str(self.csv)]

    def master_argv(self) -> list[str]:
        n = self.workers
        return [sys.executable, "-m", "locust", "-f", load.locustfile(), "--headless", "--master",
                f"--master-bind-host={LOOPBACK}", f"--master-bind-port={self.master_port}",
                f"--expect-workers={n}", f"--users={n}", f"--spawn-rate={n}", f"--host={self.host}",
                f"--csv={self.csv}", "--only-summary"]

    def worker_argv(self) -> list[str]:
        return [sys.executable, "-m", "locust", "-f", load.locustfile(), "--worker", f"--master-host={LOOPBACK}",
                f"--master-port={self.master_port}"]

    def start(self, requests: Sequence[Any], lead_s: float) -> float:
        """Write the schedule, start the load process(es), and once every user runs, set scenario time 0
        ``lead_s`` wall seconds ahead (the start file). Returns that ``t0``."""
        load.write_schedule(self.run_dir / "schedule.jsonl", requests)
        self.start_file.unlink(missing_ok=True)
        for i in range(self.workers):
            load.ready_marker(self.start_file, i).unlink(missing_ok=True)
        if self.workers == 1:
            self.procs["locust"] = self.spawn("locust", self.argv(), self.env())
        else:
            self.master_port = free_port()
            self.procs["locust"] = self.spawn("locust", self.master_argv(), self.env())
            for i in range(self.workers):
                self.procs[f"locust-worker-{i}"] = self.spawn(f"locust-worker-{i}", self.worker_argv(), self.env(i))
        self._wait_ready()
        self.t0 = self.wall() + lead_s
        load.write_start(self.start_file, self.t0)
        return self.t0

    def _wait_ready(self) -> None:
        """Until every worker's user runs; RuntimeError naming the logs when a process dies or time is up."""
        markers = [load.ready_marker(self.start_file, i) for i in range(self.workers)]
        deadline = self.wall() + self.ready_timeout_s
        while not all(m.exists() for m in markers):
            dead = [name for name, p in self.procs.items() if p.poll() is not None]
            if dead or self.wall() > deadline:
                self.stop(2.0)
                why = f"{', '.join(dead)} exited" if dead else f"not ready after {self.ready_timeout_s:g} s"
                raise RuntimeError(f"Locust start failed ({why}; ready: "
                                   f"{sum(m.exists() for m in markers)}/{self.workers}); see {self.log.parent}")
            self.sleep(0.05)

    def alive(self) -> bool:
        """The load is still going: any of its processes runs (the master ends after its last worker)."""
        return any(p.poll() is None for p in self.procs.values())

    def stop(self, grace_s: float) -> None:
        """SIGTERM to every process group, up to ``grace_s`` for them to flush their records, then SIGKILL."""
        live = [p for p in self.procs.values() if p.poll() is None]
        for p in live:
            _signal(p, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        for p in live:
            try:
                p.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _signal(p, signal.SIGKILL)
                p.wait(timeout=5.0)

    def record_files(self) -> list[Path]:
        return sorted(self.run_dir.glob("records-*.jsonl"), key=lambda p: (load.record_index(p), str(p)))

    def _popen(self, name: str, argv: list[str], env: dict[str, str]) -> subprocess.Popen:
        log = self.log if name == "locust" else self.log.parent / f"{name}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "ab") as out:
            return subprocess.Popen(argv, env={**os.environ, **env}, stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=die_with_parent())


def _signal(proc: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
