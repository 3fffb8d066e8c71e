"""Faults on CLUSTER=local: a Prometheus outage and an engine SIGKILL (local_faults.yaml).

Prometheus is killed at t=30 s and restarted at t=60 s while the load steps
from 1 to 5 rps at t=35 s: `wva` and `hpa` must hold their replicas while
metrics are missing (upstream: WVA keeps the last state, the HPA skips a
missing metric) and scale once metrics are back. At t=95 s one engine gets
SIGKILL: its in-flight requests are recorded as `error` and the variant gets
its capacity back (a new pod replaces it). Every request is accounted for.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from .test_local_backend import HERE, assert_accounted_once, run_local

pytestmark = [
    pytest.mark.local,
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("prometheus") is None, reason="needs prometheus (scripts/ensure-prometheus.sh)"),
]


@pytest.mark.parametrize("autoscaler", ["wva", "hpa"])
def test_outage_holds_then_crash_recovers(autoscaler: str, tmp_path: Path) -> None:
    out = tmp_path / autoscaler
    sc, summary, req, ts = run_local(HERE / "local_faults.yaml", autoscaler, out)
    assert_accounted_once(sc, summary, req)
    decisions = [json.loads(line) for line in (out / "decisions.jsonl").read_text().splitlines()]
    during = [d for d in decisions if 31 <= d["t_s"] < 60]
    assert during, "the autoscaler was not consulted during the outage"
    for d in during:  # metrics missing: hold, whatever the load does
        assert d["desired_replicas"] == d["current_replicas"], d
    spec_in_outage = ts[(ts["t_s"] > 31) & (ts["t_s"] < 60)]["spec_replicas"]
    assert spec_in_outage.nunique() == 1
    # after the outage the step is seen and replicas rise
    assert ts[ts["t_s"] > 60]["spec_replicas"].max() > spec_in_outage.iloc[0]
    # the crash: requests in flight on the killed pod fail as error, and capacity comes back
    events = json.loads((out / "local.json").read_text())["events"]
    crash = [e for e in events if e["kind"] == "pod_crash"]
    assert crash and crash[0]["pod"], events
    killed_pod = crash[0]["pod"]
    on_killed = req[(req["pod"] == killed_pod) & (req["end_s"] >= 95)]
    assert (on_killed["status"] == "error").any(), on_killed[["request_id", "status", "end_s"]].to_string()
    assert not (on_killed["status"] == "ok").any() or on_killed[on_killed["status"] == "ok"]["end_s"].max() < 96
    crash_t = crash[0]["t_s"]
    before = ts[ts["t_s"] < crash_t]["ready_replicas"].iloc[-1]
    assert ts[ts["t_s"] > crash_t + 12]["ready_replicas"].max() >= before
