"""The host Locust launch shared by local and kube (harness/backends/locust_process.py)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from scalearena.harness.backends.locust_process import LocustProcess
from scalearena.workloads import load_handoff as load
from scalearena.workloads.base import RequestSpec


def test_schedule_env_and_argv_then_start_and_stop(tmp_path: Path) -> None:
    seen: dict[str, object] = {}

    def spawn(argv: list[str], env: dict[str, str]) -> subprocess.Popen:
        seen["argv"], seen["env"] = argv, env
        return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)

    lp = LocustProcess(tmp_path, "http://127.0.0.1:1", end_s=90.0, timeout_s=30.0, time_scale=4.0,
                       options={load.ENV_API: "chat"}, spawn=spawn, wall=lambda: 1000.0)
    reqs = [RequestSpec(i, "m", float(i), 10, 5) for i in range(3)]
    assert lp.start(reqs, lead_s=2.5) == 1002.5  # t0 = wall 1000 + lead 2.5
    env = seen["env"]
    assert isinstance(env, dict)
    assert env[load.ENV_T0] == "1002.5" and env[load.ENV_TIME_SCALE] == "4.0" and env[load.ENV_END_S] == "90.0"
    assert env[load.ENV_TIMEOUT_S] == "30.0" and env[load.ENV_API] == "chat"
    assert env[load.ENV_RECORDS] == str(tmp_path / "records-{worker}.jsonl")
    assert [s.request_id for s in load.read_schedule(Path(env[load.ENV_SCHEDULE]))] == [0, 1, 2]
    assert seen["argv"] == [sys.executable, "-m", "scalearena.workloads.locust_user", "--host",
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
