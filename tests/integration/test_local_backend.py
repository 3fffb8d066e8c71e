"""CLUSTER=local end to end: real engines, router, Prometheus and Locust on 127.0.0.1.

The scenario (local_step.yaml) steps from 1 to 6 rps at t=40 s; at time scale
5 each run takes about 30 s of wall time. For `wva` and `hpa` it checks that
replicas rise after the step and that every scheduled request is accounted
for exactly once.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from scalearena.harness.config.scenario import load_scenario
from scalearena.harness.local.backend import LocalBackend
from scalearena.reports.results import RunWriter
from scalearena.workloads.generate import build_requests

HERE = Path(__file__).parent
pytestmark = [
    pytest.mark.local,
    pytest.mark.skipif(shutil.which("prometheus") is None, reason="needs prometheus (scripts/ensure-prometheus.sh)"),
]
TIME_SCALE = 5.0


def run_local(scenario_path: Path, autoscaler: str, out: Path, overrides: list[str] | None = None):
    sc = load_scenario(scenario_path, overrides or [])
    return run_local_config(sc, sc.autoscaler(autoscaler), out)


def run_local_config(sc, cfg, out: Path, time_scale: float = TIME_SCALE):
    meta = {"scenario": sc.name, "autoscaler": cfg.label, "cluster": "local", "seed": sc.seed,
            "duration_s": sc.duration_s, "slo": sc.slo.model_dump(mode="json"), "variants": []}
    writer = RunWriter(out, meta)
    LocalBackend(time_scale=time_scale).run(sc, cfg, writer)
    summary = writer.finish()
    return sc, summary, pd.read_parquet(out / "requests.parquet"), pd.read_parquet(out / "timeseries.parquet")


def assert_accounted_once(sc, summary, req: pd.DataFrame) -> None:
    schedule = build_requests(sc)
    assert sorted(req["request_id"]) == [r.request_id for r in schedule]  # each id once, none missing
    assert summary["requests_total"] == len(schedule)
    assert summary["requests_ok"] + sum(summary["failures"].values()) == summary["requests_total"]


@pytest.mark.parametrize("autoscaler", ["wva", "hpa"])
def test_replicas_rise_after_the_step(autoscaler: str, tmp_path: Path) -> None:
    sc, summary, req, ts = run_local(HERE / "local_step.yaml", autoscaler, tmp_path / autoscaler)
    assert_accounted_once(sc, summary, req)
    # 40 s at 1 rps + 60 s at 6 rps, evenly spaced: 40 + 360 = 400 requests
    assert summary["requests_total"] == 400
    before = ts[ts["t_s"] < 40]["spec_replicas"].max()
    after = ts[ts["t_s"] > 70]["ready_replicas"].max()
    assert before == 1
    assert after >= 2, ts[["t_s", "spec_replicas", "ready_replicas", "kv_usage_mean"]].to_string()
    ok = req[req["status"] == "ok"]
    assert len(ok) > 0.6 * len(req)
    # TTFT of an idle replica is 200 ms of scenario time (constant model); measured through router + HTTP
    # it can only add to that. How close it stays, and the send lag, are wall-clock figures that a loaded
    # machine stretches: benchmarks/local_fidelity.py and benchmarks/locust_capacity.py print them.
    # a lower bound only: load can slow a real process down, never speed the engine's 200 ms up
    assert ok[ok["arrival_s"] < 35]["ttft_ms"].median() > 150
    assert summary["send_lag_ms"]["p99"] is not None
    # pods.jsonl: the initial pod started Ready; each scale-up's pod waited its 10 s start-up (one phase)
    # and was seen ready no earlier (process start and readiness polling add to it)
    import json

    pods = [json.loads(line) for line in (tmp_path / autoscaler / "pods.jsonl").read_text().splitlines()]
    assert pods[0]["start"] == "initial" and pods[0]["phases"] == []
    cold = [p for p in pods if p["start"] == "cold"]
    assert cold and all([ph["phase"] for ph in p["phases"]] == ["startup"] for p in cold)
    for p in cold:
        ph = p["phases"][0]
        # 10 s, unless the pod went while starting (the run's window ends, or a scale-down): then the phase
        # is clipped at the pod's end (harness/sim/startup_phases.py clip), as the simulator's pods.jsonl does
        ended = p["ended_s"] if p["ended_s"] is not None else float("inf")
        assert ph["end_s"] - ph["start_s"] == pytest.approx(min(10.0, ended - ph["start_s"]))
        assert p["ready_s"] is None or p["ready_s"] >= ph["end_s"] - 0.5  # 0.5 s: wall-clock axis rounding


def test_sim_and_local_bill_the_same_window(tmp_path: Path) -> None:
    """One scenario on both backends: each samples and integrates over [0, duration_s + drain_s]
    (Scenario.window_s), although the simulator has nothing in flight well before the end and the
    local run's load may overstay it."""
    from scalearena.harness.config.suite import RunPlan
    from scalearena.harness.run.runner import execute

    # 20 s at 1 rps (the step comes at 40 s, after the end) + 6 s of drain: a 26 s window
    sc = load_scenario(HERE / "local_step.yaml", ["duration_s=20", "drain_s=6"])
    plan = RunPlan(scenario=sc, autoscaler=sc.autoscaler("wva"), rel_dir="run")
    sim = execute(plan, tmp_path / "sim", "sim")
    local = execute(plan, tmp_path / "local", "local", backend_options={"time_scale": TIME_SCALE})
    for s in (sim, local):
        assert s["timeseries"]["window_s"] == 26.0
        # the samples cover the window to its end, not to the last request (sim) or past it (local: its
        # loop ends at or after 26 s and what lies past 26 s is clipped, reports/usage.py)
        assert s["timeseries"]["covered_s"] == pytest.approx(26.0, abs=1e-9)
    # one replica the whole window on both (1 rps needs no second): 26 replica-s = 26 / 3600 replica-hours
    assert sim["gpu_hours"] == pytest.approx(26.0 / 3600.0)
    assert local["gpu_hours"] == pytest.approx(26.0 / 3600.0)
