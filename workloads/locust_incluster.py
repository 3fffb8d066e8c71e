"""Entry point of the in-cluster Locust pods (manifests/load/locust): master and workers.

Why a wrapper rather than ``locust`` as the container command: the workers
must not start before they hold their share of the schedule and the run's
start time, and both arrive by ``kubectl cp`` after the pod is up (a ConfigMap
holds at most 1 MiB; a 600 s run at 1,000 req/s is ~40 MB of schedule). So a
worker waits for ``go.json`` in its work directory (written after
``schedule.jsonl``), turns it into the SCALEARENA_* environment the open-loop
user reads, runs ``locust --worker``, and then stays up (``--hold-s``) so the
backend can copy ``records-<index>.jsonl`` out; a finished container could not
be copied from. The master is plain ``locust --master`` with one user per
worker (each OpenLoopUser dispatches its worker's whole share).

Runs in the pod only; the harness never imports this module (it would import
nothing heavy, but it execs Locust).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from scalearena.workloads import load_handoff as load

GO_FILE = "go.json"
SCHEDULE_FILE = "schedule.jsonl"
DONE_FILE = "done"
COLLECTED_FILE = "collected"


def locustfile() -> str:
    try:
        return load.locustfile()
    except RuntimeError as e:  # the pod's entry point: one line, not a traceback
        raise SystemExit(f"{e} (this image)") from None


def wait_for_go(work: Path, wait_s: float, clock: Callable[[], float] = time.time,
                sleep: Callable[[float], None] = time.sleep) -> dict[str, float]:
    """The go file's content once it is complete JSON (a half-copied file is read again)."""
    deadline = clock() + wait_s
    while clock() < deadline:
        try:
            go = json.loads((work / GO_FILE).read_text())
            if isinstance(go, dict) and {"t0", "end_s", "timeout_s", "worker_count"} <= set(go):
                return go
        except (FileNotFoundError, json.JSONDecodeError):
            pass
        sleep(0.2)
    raise SystemExit(f"no complete {GO_FILE} in {work} after {wait_s:g} s")


def worker_env(work: Path, go: dict[str, float], index: int) -> dict[str, str]:
    """The SCALEARENA_* variables of workloads/locust_user.py for this worker."""
    return {load.ENV_SCHEDULE: str(work / SCHEDULE_FILE), load.ENV_RECORDS: str(work / "records-{worker}.jsonl"),
            load.ENV_T0: repr(float(go["t0"])), load.ENV_TIME_SCALE: "1.0",
            load.ENV_TIMEOUT_S: repr(float(go["timeout_s"])), load.ENV_END_S: repr(float(go["end_s"])),
            load.ENV_WORKER_INDEX: str(index), load.ENV_WORKER_COUNT: str(int(go["worker_count"]))}


def master_argv(workers: int, host: str, run_time_s: int, work: Path) -> list[str]:
    return [sys.executable, "-m", "locust", "-f", locustfile(), "--headless", "--master",
            f"--expect-workers={workers}", f"--users={workers}", f"--spawn-rate={workers}", f"--host={host}",
            f"--run-time={run_time_s}s", f"--csv={work / 'locust'}"]


def worker_argv(master_host: str) -> list[str]:
    return [sys.executable, "-m", "locust", "-f", locustfile(), "--worker", f"--master-host={master_host}"]


def hold(work: Path, hold_s: float, clock: Callable[[], float] = time.time,
         sleep: Callable[[float], None] = time.sleep) -> None:
    """Stay up until the backend has copied the records (it writes ``collected``) or hold_s passes."""
    deadline = clock() + hold_s
    while clock() < deadline and not (work / COLLECTED_FILE).exists():
        sleep(1.0)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="role", required=True)
    m = sub.add_parser("master")
    m.add_argument("--workers", type=int, required=True)
    m.add_argument("--host", required=True)
    m.add_argument("--run-time-s", type=int, required=True)
    m.add_argument("--dir", type=Path, default=Path("/work"))
    w = sub.add_parser("worker")
    w.add_argument("--master-host", required=True)
    w.add_argument("--dir", type=Path, default=Path("/work"))
    w.add_argument("--wait-s", type=float, default=1800.0, help="how long to wait for go.json")
    w.add_argument("--hold-s", type=float, default=900.0, help="how long to stay up for the records copy")
    args = ap.parse_args(argv)
    if args.role == "master":
        return subprocess.call(master_argv(args.workers, args.host, args.run_time_s, args.dir))
    go = wait_for_go(args.dir, args.wait_s)
    env = {**os.environ, **worker_env(args.dir, go, int(os.environ.get(load.ENV_WORKER_INDEX, "0")))}
    rc = subprocess.call(worker_argv(args.master_host), env=env)
    (args.dir / DONE_FILE).write_text(f"{rc}\n")
    hold(args.dir, args.hold_s)
    return rc


if __name__ == "__main__":
    sys.exit(main())
