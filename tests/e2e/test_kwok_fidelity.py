"""The CI's short version of benchmarks/sim_vs_real.py (docs/fidelity.md), on a control plane of its own at time
scale 2. Its kwok run is also the kwok tier's time-scale check.

Not in `make test`: `make fidelity-check` runs it alone, after the suite (.ci/run does both): it measures the
real stack's timing against the simulator's, and a 2-core host busy with other tests slows the real engines
and the gateway (docs/fidelity.md, the per-token overshoot)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.kwokkit import ROOT

pytestmark = [pytest.mark.e2e, pytest.mark.kwok, pytest.mark.fidelity]


def test_sim_vs_real_short_version_meets_the_targets(tools_built: None, tmp_path: Path) -> None:
    """hpa (the real HPA controller on prometheus-adapter), seed 1, the sim-vs-real staircase on the simulator and
    on kwok at time scale 2 (220 s of scenario: ~110 s of wall time plus set-up).

    What one seed can show is the timing of the moves: every scale step of the simulator paired with one of the
    real HPA within one sync period plus one scrape interval, and none of the real HPA's left over (the
    trajectory target's third part), both sides scaling up at least twice, the gateway queue in the kube
    timeseries. Not the maximum or the replica-seconds: the real HPA syncs at its creation plus multiples of
    15 s, so its phase against the load is the run's lead from applying the objects to the load's start
    (docs/fidelity.md), which moves by seconds from run to run; with the staircase's 3 req/s step at one
    replica's capacity, a first step some seconds sooner means no queue and fewer replicas. Runs of this seed
    alone on this host measured a real maximum of 3, 5 and 6 (the simulator's: 6; the runs of 2026-12-05 had
    every move paired), so the maxima and replica-seconds are judged by the full benchmark over three seeds.

    The kwok run, at time scale 2, also shows that every component ran twice as fast (kube/timescale.py) while
    the results stay in scenario seconds: the sim's 200 ms TTFT runs as 100 ms and Locust records it times 2, so
    the fastest request's TTFT is 200 ms plus twice the stack's overhead (a few ms at scale 1); unscaled it would
    be 2 x 200 = 400 ms."""
    import pyarrow.parquet as pq

    env = {**os.environ, "SCALEARENA_KWOK_DIR": str(tmp_path / "kwok")}  # its own control plane
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "sim_vs_real.py"), "--autoscalers", "hpa",
                        "--seeds", "1", "--time-scale", "2", "--out", str(tmp_path / "out"), "--no-diagnostic"],
                       env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    out = tmp_path / "out"
    row = json.loads((out / "sim_vs_real.json").read_text())["rows"][0]
    (sim,), (real,) = row["sim"], row["real"]
    assert row["sim_steps"] >= 2 and row["real_steps"] >= 2, r.stdout[-3000:]  # both scaled up on the staircase
    assert min(sim["max_ready"], real["max_ready"]) >= 3, r.stdout[-3000:]  # one replica to three or more
    # every move paired, on both sides (benchmarks/sim_vs_real.py: what the table calls "unmatched")
    unmatched = row["sim_steps"] - row["matched"] + row["real_steps"] - row["real_matched"] - row["censored"]
    assert unmatched == 0, r.stdout[-3000:]
    run = out / "kwok-ts2" / "sim-vs-real" / "hpa" / "seed-1"
    # the gateway's flow-control queue reaches a kube run's timeseries (it holds requests at 6 req/s)
    ts = pq.read_table(run / "timeseries.parquet").to_pydict()
    assert max(q for q in ts["router_queue"] if q is not None) > 0
    ttft = pq.read_table(run / "requests.parquet").to_pandas().query("status == 'ok'")["ttft_ms"]
    assert 200 <= ttft.min() < 300, ttft.describe()
    # the preset HPA at 2: upstream's 15 s policy periods -> 7.5 s -> 8 s wall (16 s of scenario time), three
    # per HPA, one HPA for the one variant; 300 s stabilisation -> 150 s and the 15 s scrape -> 7.5 s are exact
    events = json.loads((run / "summary.json").read_text())["events"]
    notes = [e["note"] for e in events if e["kind"] == "time_scale_rounding"]
    assert len(notes) == 3 and all("15 s is 8 s wall, 16 s of scenario time" in n for n in notes), notes
