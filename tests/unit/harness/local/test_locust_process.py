"""The host Locust launch shared by local and kube (harness/local/locust_process.py)."""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from scalearena.harness.local import locust_process
from scalearena.harness.local.locust_process import LocustProcess
from scalearena.workloads import load_handoff as load
from scalearena.workloads.base import RequestSpec


def test_schedule_env_and_argv_then_start_and_stop(tmp_path: Path) -> None:
    seen: dict[str, object] = {}
    wall = [1000.0]

    def spawn(name: str, argv: list[str], env: dict[str, str]) -> subprocess.Popen:
        seen["name"], seen["argv"], seen["env"] = name, argv, env
        marker = load.ready_marker(Path(env[load.ENV_START_FILE]), 0)  # the user says it runs (after 1 s here)
        wall[0] += 1.0
        code = f"import pathlib, time; pathlib.Path({str(marker)!r}).touch(); time.sleep(60)"
        return subprocess.Popen([sys.executable, "-c", code], start_new_session=True)

    lp = LocustProcess(tmp_path, "http://127.0.0.1:1", end_s=90.0, timeout_s=30.0, time_scale=4.0,
                       options={load.ENV_API: "chat"}, spawn=spawn, wall=lambda: wall[0], sleep=lambda s: time.sleep(0.02))
    reqs = [RequestSpec(i, "m", float(i), 10, 5) for i in range(3)]
    # t0 = the wall clock once the one process is ready (1000 + 1 s import) + lead 2.5 = 1003.5
    assert lp.start(reqs, lead_s=2.5) == 1003.5
    assert load.read_start(lp.start_file) == 1003.5
    env = seen["env"]
    assert isinstance(env, dict)
    assert env[load.ENV_TIME_SCALE] == "4.0" and env[load.ENV_END_S] == "90.0"
    assert env[load.ENV_TIMEOUT_S] == "30.0" and env[load.ENV_API] == "chat"
    assert env[load.ENV_RECORDS] == str(tmp_path / "records-{worker}.jsonl")
    assert [s.request_id for s in load.read_schedule(Path(env[load.ENV_SCHEDULE]))] == [0, 1, 2]
    assert (env[load.ENV_WORKER_INDEX], env[load.ENV_WORKER_COUNT]) == ("0", "1")  # library mode: all of it
    assert load.ENV_T0 not in env  # t0 comes from the start file
    assert seen["name"] == "locust" and seen["argv"] == [sys.executable, "-m", "scalearena.workloads.locust_user", "--host",
                            "http://127.0.0.1:1", "--csv", str(tmp_path / "logs" / "locust")]
    assert lp.alive()
    lp.stop(5.0)
    assert not lp.alive() and lp.proc is not None and lp.proc.returncode == -15  # SIGTERM reached it
    (tmp_path / "records-1.jsonl").write_text("")
    (tmp_path / "records-0.jsonl").write_text("")
    assert lp.record_files() == [tmp_path / "records-0.jsonl", tmp_path / "records-1.jsonl"]


def test_not_started_is_not_alive_and_stop_is_a_no_op(tmp_path: Path) -> None:
    lp = LocustProcess(tmp_path, "http://127.0.0.1:1", end_s=1.0, timeout_s=1.0)
    assert not lp.alive()
    lp.stop(1.0)


def test_master_and_workers_start_together_from_one_start_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(locust_process, "free_port", lambda: 5599)  # no socket in a unit test
    started: dict[str, tuple[list[str], dict[str, str]]] = {}
    wall = [1000.0]

    def spawn(name: str, argv: list[str], env: dict[str, str]) -> subprocess.Popen:
        started[name] = (argv, env)
        code = "import time; time.sleep(60)"
        if load.ENV_START_FILE in env:  # a worker: its user says it runs, as locust_user does
            marker = load.ready_marker(Path(env[load.ENV_START_FILE]), int(env[load.ENV_WORKER_INDEX]))
            code = f"import pathlib, time; pathlib.Path({str(marker)!r}).touch(); time.sleep(60)"
        return subprocess.Popen([sys.executable, "-c", code], start_new_session=True)

    def sleep(s: float) -> None:
        wall[0] += s
        time.sleep(0.02)

    lp = LocustProcess(tmp_path, "http://127.0.0.1:1", end_s=30.0, timeout_s=10.0, spawn=spawn, workers=3,
                       wall=lambda: wall[0], sleep=sleep)
    t0 = lp.start([RequestSpec(i, "m", float(i), 10, 5) for i in range(7)], lead_s=1.0)
    assert set(started) == {"locust", "locust-worker-0", "locust-worker-1", "locust-worker-2"}
    master, _ = started["locust"]
    assert master[1:4] == ["-m", "locust", "-f"] and "--master" in master and "--headless" in master
    assert "--expect-workers=3" in master and "--users=3" in master and "--master-bind-host=127.0.0.1" in master
    port = 5599
    for i in range(3):
        argv, env = started[f"locust-worker-{i}"]
        assert "--worker" in argv and f"--master-port={port}" in argv and "--master-host=127.0.0.1" in argv
        assert (env[load.ENV_WORKER_INDEX], env[load.ENV_WORKER_COUNT]) == (str(i), "3")
    # t0 is set once every worker is ready: lead 1 s after the wall clock at that moment, and in the start file
    assert t0 > 1001.0 and load.read_start(lp.start_file) == t0
    # the share each worker reads from the one schedule: ids 0..6 split by id % 3
    shares = [[s.request_id for s in load.read_schedule(tmp_path / "schedule.jsonl", i, 3)] for i in range(3)]
    assert shares == [[0, 3, 6], [1, 4], [2, 5]]
    assert lp.alive()
    lp.stop(5.0)
    assert not lp.alive()


def test_a_worker_that_dies_before_it_is_ready_fails_the_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(locust_process, "free_port", lambda: 5599)
    def spawn(name: str, argv: list[str], env: dict[str, str]) -> subprocess.Popen:
        code = "raise SystemExit(3)" if name == "locust-worker-1" else "import time; time.sleep(60)"
        return subprocess.Popen([sys.executable, "-c", code], start_new_session=True)

    lp = LocustProcess(tmp_path, "http://127.0.0.1:1", end_s=30.0, timeout_s=10.0, spawn=spawn, workers=2)
    with pytest.raises(RuntimeError, match="locust-worker-1 exited"):
        lp.start([RequestSpec(0, "m", 0.0, 10, 5)], lead_s=1.0)
    assert not lp.alive()  # the others were stopped


def test_records_of_several_workers_merge_once_each_in_worker_order(tmp_path: Path) -> None:
    def rows(*ids: int) -> str:
        return "".join(json.dumps({"request_id": i, "status": "ok"}) + "\n" for i in ids)

    (tmp_path / "records-10.jsonl").write_text(rows(10))
    (tmp_path / "records-2.jsonl").write_text(rows(2, 12) + '{"request_id": 22, "sta')  # torn last line
    (tmp_path / "records-0.jsonl").write_text(rows(0, 12))  # 12 twice: a load-generator defect, reported
    lp = LocustProcess(tmp_path, "http://127.0.0.1:1", end_s=1.0, timeout_s=1.0)
    files = lp.record_files()
    assert [f.name for f in files] == ["records-0.jsonl", "records-2.jsonl", "records-10.jsonl"]
    merged, dup = load.merge_records(files)
    assert sorted(merged) == [0, 2, 10, 12] and dup == [12]
