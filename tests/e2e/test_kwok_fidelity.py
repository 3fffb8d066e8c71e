"""The CI's short version of benchmarks/sim_vs_real.py (docs/fidelity.md), on a control plane of its own at time
scale 2. Its kwok run is also the kwok tier's time-scale check.

Not in `make test`: `make fidelity-check` runs it alone, after the suite (.ci/run does both), because what it
measures, the real side's agreement with the simulator, moves when the host is busy with other tests (two runs
beside the parallel suite reached 3 and 4 replicas where the simulator and a quiet host reach 6)."""
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
    on kwok at time scale 2 (220 s of scenario: ~110 s of wall time plus set-up). One seed is noise-bound: three
    kwok runs of this same seed measured replica-seconds +7.9 %, +10.8 % and -14.7 % against the simulator (the
    real HPA's 15 s sync phase; one run also stopped at 5 replicas), so the targets (10 %, same maxima, every
    move paired) are judged by the full benchmark over three seeds, and this gates what one seed can show: both
    sides scale up, the maxima within one replica, replica-seconds within 25 %, the gateway queue in the kube
    timeseries.

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
    assert abs(sim["max_ready"] - real["max_ready"]) <= 1, r.stdout[-3000:]
    assert abs(real["replica_s"] - sim["replica_s"]) <= 0.25 * sim["replica_s"], r.stdout[-3000:]
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
