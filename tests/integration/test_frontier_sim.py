"""`scalearena suite --frontier` on the simulator: the oracle frontier's runs, what they reuse and cache,
frontier.json, and the bound on the report page. The scenario is the one whose plan is worked out by hand
in tests/unit/harness/sizing/test_frontier_runs.py: 2 req/s of 1000 + 1000 tokens on a constant-latency engine (TTFT
100 ms, ITL 10 ms), so the oracle plans ceil(3.3633 / u) replicas per window at utilization u."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from tests.unit.harness.cli.test_cli import scalearena

SCENARIO: dict[str, Any] = {
    "name": "steady",
    "duration_s": 120,
    "seed": 5,
    "cluster": {"variants": [{
        "name": "va", "model": "m", "gpu": "H100-SXM", "cost": 1.0, "min_replicas": 1, "max_replicas": 10,
        "startup_s": 10,
        "engine": {"max_num_seqs": 256, "kv_cache_blocks": 1024, "block_size": 16,
                   "latency": {"kind": "constant", "ttft_ms": 100, "itl_ms": 10}}}]},
    "workload": {"arrivals": {"kind": "constant", "rate_rps": 2},
                 "input_tokens": {"kind": "fixed", "value": 1000}, "output_tokens": {"kind": "fixed", "value": 1000}},
    "autoscalers": [{"kind": "static", "replicas": 1}, {"kind": "oracle"}],
    "slo": {"ttft_ms": 1000, "itl_ms": 50},
}


def _suite(tmp_path: Path) -> Path:
    (tmp_path / "steady.yaml").write_text(yaml.safe_dump(SCENARIO))
    suite = {"name": "frontier-test", "autoscalers": ["static", "oracle"], "runs": [{"scenario": "steady.yaml"}],
             "frontier": {"utilization": [1.25, 1.0, 0.5]}}
    path = tmp_path / "suite.yaml"
    path.write_text(yaml.safe_dump(suite))
    return path


def test_suite_runs_caches_and_reports_the_frontier(tmp_path: Path) -> None:
    suite, out = _suite(tmp_path), tmp_path / "out"
    r = scalearena("suite", str(suite), "--out", str(out), "--jobs", "1", "--frontier")
    assert r.returncode == 0, r.stderr
    # floor, u=1.25 and u=0.5 ran; u=1 is the suite's own oracle run
    assert "4 points (3 run, 0 cached, 1 from the suite's oracle runs)" in " ".join(r.stderr.split())
    doc = json.loads((out / "frontier.json").read_text())
    rows = {p["setting"]: p["summary"] for p in doc["points"]}
    assert list(rows) == ["floor", "u=1.25", "u=1", "u=0.5"]
    static = json.loads((out / "steady" / "static" / "summary.json").read_text())
    oracle = json.loads((out / "steady" / "oracle" / "summary.json").read_text())
    # the floor (static at 0, clamped to min_replicas 1) is the same plan as static at 1: the same run
    assert (rows["floor"]["gpu_hours"], rows["floor"]["slo_attainment"]) == (static["gpu_hours"],
                                                                             static["slo_attainment"])
    assert rows["u=1"]["gpu_hours"] == oracle["gpu_hours"]
    # the plan's replicas reach ceil(3.3633 / u): 3 at u=1.25, 4 at u=1, 7 at u=0.5; the floor stays at 1
    assert [rows[s]["replicas"]["max"] for s in rows] == [1, 3, 4, 7]
    gpu = [rows[s]["gpu_hours"] for s in rows]
    assert gpu == sorted(gpu) and len(set(gpu)) == 4
    # #1499's perfect system beside it (tests/unit/harness/sizing/test_perfect_system.py: 3 replicas a window, 0.1 GPU-h)
    (perfect,) = doc["perfect_system"]
    assert perfect["summary"]["replicas"] == {"va": [3, 3, 3, 3]} and perfect["seed"] == 5
    page = (out / "report.html").read_text()
    assert "bound (oracle frontier)" in page and "bound: the oracle frontier (4 hindsight runs" in page
    assert "perfect system (#1499): 0.69 USD (0.100 GPU-h), peak 3 GPUs" in page  # H100-SXM: 6.88 USD/GPU-h

    again = scalearena("suite", str(suite), "--out", str(out), "--jobs", "1", "--frontier")
    assert again.returncode == 0, again.stderr
    assert "4 points (0 run, 3 cached, 1 from the suite's oracle runs)" in " ".join(again.stderr.split())
    assert json.loads((out / "frontier.json").read_text()) == doc  # cached points read back as they ran

    off = scalearena("suite", str(suite), "--out", str(out), "--jobs", "1", "--no-frontier")
    assert off.returncode == 0 and not (out / "frontier.json").exists()  # no stale bound beside new runs
    assert "run the oracle frontier" in (out / "report.html").read_text()
