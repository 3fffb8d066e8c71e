"""The Locust open-loop user sends the simulator's request sequence, request for request.

For one seed the simulator's arrival list (``build_requests``) and what the
Locust process actually sent must be the same sequence: same ids in the same
order of scheduled time, same prompt length (as the engine counted it from
the words it received, echoed in usage.prompt_tokens), same max_tokens.
Real processes: one serve-engine (zero latency) and the Locust user; then
Locust's master with 2 workers (harness/local/locust_process.py, as the
local backend starts it with ``locust_workers=2``), whose records together
hold the same sequence, each request once, split by ``request_id % 2``.
"""
from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from scalearena.harness.config.scenario import scenario_from_data
from scalearena.harness.local.locust_process import LocustProcess
from scalearena.harness.local.supervisor import Supervisor
from scalearena.workloads import load_handoff as load
from scalearena.workloads.generate import build_requests

pytestmark = pytest.mark.local


def printed_port(child: Any, timeout_s: float = 30.0) -> int:
    """The port a server started with ``--port 0`` printed (``NAME: listening on http://127.0.0.1:PORT``)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and child.proc.poll() is None:
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", child.log_path.read_text(errors="replace"))
        if m:
            return int(m.group(1))
        time.sleep(0.05)
    raise AssertionError(f"no listening line within {timeout_s:.0f} s:\n{child.log_tail()}")


def test_locust_sends_the_simulators_sequence(tmp_path: Path, scenario_dict: dict) -> None:
    scenario_dict["duration_s"] = 6
    scenario_dict["workload"] = {
        "arrivals": {"kind": "poisson", "rate_rps": 10},
        "input_tokens": {"kind": "bounded_normal", "min": 10, "max": 300, "mean": 120, "sd": 60},
        "output_tokens": {"kind": "uniform", "min": 1, "max": 8},
    }
    sc = scenario_from_data(scenario_dict, "test")
    specs = build_requests(sc)
    assert 30 < len(specs) < 100  # Poisson(60) draws for seed 7
    schedule = tmp_path / "schedule.jsonl"
    load.write_schedule(schedule, specs)
    with Supervisor(tmp_path / "logs") as sup:
        # --port 0: the engine binds a port the kernel picks and prints it, so no other process can race us to it
        eng = sup.start("engine", [sys.executable, "-m", "scalearena.harness.local.cli", "engine",
                                   "--model", "m", "--port", "0", "--max-num-seqs", "256"])
        port = printed_port(eng)
        env = {load.ENV_SCHEDULE: str(schedule), load.ENV_RECORDS: str(tmp_path / "records-{worker}.jsonl"),
               load.ENV_T0: repr(time.time() + 1.5), load.ENV_TIMEOUT_S: "10", load.ENV_END_S: "20"}
        loc = sup.start("locust", [sys.executable, "-m", "scalearena.workloads.locust_user", "--host",
                                   f"http://127.0.0.1:{port}", "--csv", str(tmp_path / "locust")], env=env)
        loc.proc.wait(timeout=60)
        assert loc.returncode() == 0, loc.log_tail()
    rows = load.read_records([tmp_path / "records-0.jsonl"])
    sent = sorted(rows.values(), key=lambda r: (r["arrival_s"], r["request_id"]))
    assert [r["request_id"] for r in sent] == [s.request_id for s in specs]  # same order of sending
    for s in specs:
        r = rows[s.request_id]
        assert r["status"] == "ok", r
        assert r["scheduled_s"] == s.arrival_s
        assert r["server_prompt_tokens"] == s.input_tokens  # words the engine counted
        assert r["output_tokens"] == s.output_tokens
        # time scale 1: arrival - scheduled = sent - due (wall), which is the lag; how large it gets is a
        # wall-clock figure for benchmarks/locust_capacity.py, not a test
        assert abs((r["arrival_s"] - r["scheduled_s"]) * 1000.0 - r["lag_ms"]) < 1e-3
    assert (tmp_path / "locust_stats.csv").read_text().count("\n") >= 2  # Locust's own CSV stats
    assert not os.path.exists(tmp_path / "records-1.jsonl")


def run_two_workers(tmp_path: Path, specs: list[Any]) -> tuple[LocustProcess, Supervisor]:
    """Locust's master + 2 workers (as the local backend starts them) against one zero-latency engine, to the end."""
    with Supervisor(tmp_path / "logs") as sup:
        eng = sup.start("engine", [sys.executable, "-m", "scalearena.harness.local.cli", "engine",
                                   "--model", "m", "--port", "0", "--max-num-seqs", "256"])
        port = printed_port(eng)
        lp = LocustProcess(tmp_path, f"http://127.0.0.1:{port}", end_s=20.0, timeout_s=10.0, workers=2,
                           csv=tmp_path / "locust", spawn=lambda name, argv, env: sup.start(name, argv, env=env).proc)
        lp.start(specs, lead_s=0.5)
        deadline = time.monotonic() + 90.0  # a bound on a hang, not a timing assertion
        while lp.alive() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not lp.alive(), "the master did not end after its last worker quit: " + sup.get("locust").log_tail()
        for name in ("locust", "locust-worker-0", "locust-worker-1"):
            assert sup.get(name).returncode() == 0, sup.get(name).log_tail()
    return lp, sup


def test_master_and_two_workers_send_the_simulators_sequence_once(tmp_path: Path, scenario_dict: dict) -> None:
    scenario_dict["duration_s"] = 5
    scenario_dict["seed"] = 11
    scenario_dict["workload"] = {
        "arrivals": {"kind": "poisson", "rate_rps": 8},
        "input_tokens": {"kind": "uniform", "min": 10, "max": 200},
        "output_tokens": {"kind": "uniform", "min": 1, "max": 6},
    }
    sc = scenario_from_data(scenario_dict, "test")
    specs = build_requests(sc)
    assert 20 < len(specs) < 70  # Poisson(40) draws
    lp, _ = run_two_workers(tmp_path, specs)
    files = lp.record_files()
    assert [f.name for f in files] == ["records-0.jsonl", "records-1.jsonl"]
    for i, f in enumerate(files):  # each worker sent exactly its share, in schedule order
        assert sorted(load.read_records([f])) == [s.request_id for s in specs if s.request_id % 2 == i]
    rows, duplicates = load.merge_records(files)
    assert duplicates == []  # no request went out twice (Locust re-dispatches a quitting worker's user)
    assert sorted(rows) == [s.request_id for s in specs]  # and every one went out
    for i in (0, 1):
        sent = sorted((r for r in rows.values() if r["request_id"] % 2 == i), key=lambda r: r["arrival_s"])
        assert [r["request_id"] for r in sent] == [s.request_id for s in specs if s.request_id % 2 == i]
    for s in specs:
        r = rows[s.request_id]
        assert r["status"] == "ok", r
        assert r["scheduled_s"] == s.arrival_s  # the simulator's arrival offsets
        assert r["server_prompt_tokens"] == s.input_tokens
        assert r["output_tokens"] == s.output_tokens
    stats = (tmp_path / "locust_stats.csv").read_text()  # the master aggregated both workers' stats
    counts = {tuple(line.split(",")[:2]): int(line.split(",")[2]) for line in stats.splitlines()[1:]}
    assert counts[("SSE", "stream ok")] == len(specs)  # one finished stream per request, final reports included


def test_a_worker_that_finishes_first_makes_no_request_go_out_twice(tmp_path: Path) -> None:
    # worker 0's share (even ids) is sent by 0.4 s, worker 1's (odd ids) runs to 4 s: when worker 0 quits,
    # Locust's master re-dispatches its user to worker 1, whose second user must not send the share again
    from scalearena.workloads.base import RequestSpec

    specs = sorted([RequestSpec(2 * k, "m", 0.1 * k, 10, 2) for k in range(5)]
                   + [RequestSpec(2 * k + 1, "m", 0.5 + 0.35 * k, 10, 2) for k in range(11)], key=lambda s: s.arrival_s)
    lp, sup = run_two_workers(tmp_path, specs)
    rows, duplicates = load.merge_records(lp.record_files())
    assert duplicates == [] and sorted(rows) == sorted(s.request_id for s in specs)
    lines = (tmp_path / "records-1.jsonl").read_text().splitlines()
    assert len(lines) == 11  # worker 1 wrote each of its 11 requests once
