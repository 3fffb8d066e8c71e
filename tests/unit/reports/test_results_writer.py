"""RunWriter: files appear atomically as the run goes; an aborted run is marked incomplete."""
from __future__ import annotations

import json

import pandas as pd

from scalearena.contracts.records import RequestRecord
from scalearena.controllers.base import Decision, Reason
from scalearena.reports.results import RunWriter

META = {
    "scenario": "s", "autoscaler": "static", "cluster": "sim", "seed": 1, "duration_s": 10.0,
    "slo": {"ttft_ms": 1000.0, "itl_ms": 50.0}, "sample_interval_s": 5.0, "scrape_interval_s": 15.0,
    "variants": [{"name": "v", "model": "m", "gpu": "A100-80GB", "gpus_per_replica": 1, "cost": 1.0,
                  "tdp_w": 400.0, "price_per_hour": 2.0}],
}


def _req(i: int, status: str = "ok") -> RequestRecord:
    return RequestRecord(request_id=i, model="m", arrival_s=float(i), first_token_s=i + 0.1, end_s=i + 1.0,
                         input_tokens=10, output_tokens=5, status=status, http_status=200 if status == "ok" else 429,
                         variant="v", pod="v-0", ttft_ms=100.0, itl_ms=20.0, e2e_ms=1000.0)


def test_abort_keeps_measurements_marked_incomplete(tmp_path):
    w = RunWriter(tmp_path / "run", META)
    w.add_request(_req(0))
    w.add_request(_req(1, "rejected"))
    w.add_decision(3.0, "static", Decision("v", 1, 2, (Reason("static", "fixed at 2"),)))
    w.abort("interrupted")
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["complete"] is False
    assert summary["incomplete_reason"] == "interrupted"
    assert summary["requests_total"] == 2
    assert summary["failures"]["rejected"] == 1
    df = pd.read_parquet(tmp_path / "run" / "requests.parquet")
    assert list(df["request_id"]) == [0, 1]
    lines = (tmp_path / "run" / "decisions.jsonl").read_text().splitlines()
    assert json.loads(lines[0])["action"] == "scale_up"


def test_checkpoint_is_rate_limited_and_finish_marks_complete(tmp_path):
    w = RunWriter(tmp_path / "run", META, checkpoint_wall_s=3600)
    w.add_request(_req(0))
    w.checkpoint()  # within the wall-time budget: nothing written yet
    assert not (tmp_path / "run" / "summary.json").exists()
    w.checkpoint(force=True)
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["complete"] is False
    s = w.finish()
    assert s["complete"] is True
    assert not [p.name for p in (tmp_path / "run").iterdir() if p.name.startswith(".")]  # no temp files left


def test_summary_reports_clipped_trace_requests(tmp_path):
    meta = {**META, "workload_generation": {"requests": [1], "clipped": 3, "traces": [{"path": "t.csv", "clipped": 3}]}}
    w = RunWriter(tmp_path / "run", meta)
    w.add_request(_req(0))
    s = w.finish()
    assert s["workload"]["clipped_requests"] == 3
    assert s["workload"]["traces"] == [{"path": "t.csv", "clipped": 3}]


def test_decisions_reach_the_disk_within_a_second_and_at_the_end(tmp_path, monkeypatch):
    """decisions.jsonl is flushed at a decision or sample a second (DECISIONS_FLUSH_S) or more after the last
    flush, not at every decision (a system call each: a simulated run decides dozens of times in 0.1 s)."""
    from scalearena.reports import results

    clock = [1000.0]
    monkeypatch.setattr(results.time, "monotonic", lambda: clock[0])
    w = RunWriter(tmp_path / "run", META, checkpoint_wall_s=3600)
    path = tmp_path / "run" / "decisions.jsonl"

    def decide(t: float) -> None:
        w.add_decision(t, "static", Decision("v", 1, 1, (Reason("static", "fixed at 1"),)))

    decide(0.0)  # 0 s after the writer opened the file: held
    assert path.read_text() == ""
    clock[0] += 1.0
    decide(30.0)  # 1 s after: both written
    assert len(path.read_text().splitlines()) == 2
    decide(60.0)  # 0 s after that flush: held, and so after a sample 0.5 s later
    w.checkpoint()
    clock[0] += 0.5
    w.checkpoint()
    assert len(path.read_text().splitlines()) == 2
    clock[0] += 0.5  # a sample 1 s after the last flush writes it
    w.checkpoint()
    assert [json.loads(line)["t_s"] for line in path.read_text().splitlines()] == [0.0, 30.0, 60.0]
    decide(90.0)
    w.finish()  # and the end writes what is held
    assert len(path.read_text().splitlines()) == 4
