"""``scalearena suite --tuned`` (harness/tuning/tuned_suite.py): every tunable autoscaler tuned on a training
seed the suite does not run, then run on the suite's own seed as <label>-tuned beside its defaults."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import yaml

from scalearena.contracts.tunable import Tunable
from scalearena.harness.tuning.tuned_suite import TRAIN_OFFSET, position
from tests.unit.harness.cli.test_cli import scalearena

ROOT = Path(__file__).resolve().parents[2]


def test_position_in_the_range_worked_by_hand() -> None:
    t = Tunable("tau_kv", "float", 0.8, 0.5, 0.95)
    assert position(t, 0.62) == "0.62 (27% of 0.5..0.95)"  # (0.62 - 0.5) / 0.45 = 0.267
    assert position(t, 0.95).endswith("(100% of 0.5..0.95) (at an end of the range: widen it to search further)")
    assert position(Tunable("mode", "categorical", "a", choices=("a", "b")), "b") == "'b' (of 'a', 'b')"


def test_each_tunable_autoscaler_runs_tuned_on_held_out_seeds(tmp_path: Path) -> None:
    suite = {"name": "tiny", "autoscalers": ["hpa", "keda", "llmd-queue", "static", "static-peak", "oracle"],
             "runs": [{"scenario": str(ROOT / "workloads/scenarios/exp1-staircase.yaml"),
                       "set": ["duration_s=240", "router.admission.kind=flow_control"]}]}
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(suite))
    out = tmp_path / "out"
    r = scalearena("suite", str(path), "--out", str(out), "--tuned", "3", "--jobs", "2")
    assert r.returncode == 0, r.stderr
    runs = {p.name for p in (out / "exp1-staircase").iterdir()}
    # static pools and the oracle have nothing to tune (fixed pools, a bound); the others run twice
    assert runs == {"hpa", "hpa-tuned", "keda", "keda-tuned", "llmd-queue", "llmd-queue-tuned", "static",
                    "static-peak", "oracle"}
    listed = {row["dir"] for row in json.loads((out / "suite.json").read_text())["runs"]}
    assert {"exp1-staircase/hpa-tuned", "exp1-staircase/keda-tuned"} <= listed
    for label in ("hpa", "keda"):
        study = out / "tuning" / "exp1-staircase" / label
        # trained on the scenario's seed (1) + 1000, three trials; judged on seed 1
        assert sorted(p.name for p in (study / "trials").iterdir()) == ["trial-0000", "trial-0001", "trial-0002"]
        assert {p.name for p in (study / "trials" / "trial-0000").iterdir()} == {f"seed-{1 + TRAIN_OFFSET}"}
        s = json.loads((out / "exp1-staircase" / f"{label}-tuned" / "summary.json").read_text())
        assert s["seed"] == 1 and s["autoscaler"] == f"{label}-tuned"
        notes = {e["setting"]: e["value"] for e in s["events"] if e.get("kind") == "derived_setting"}
        assert notes["tuned on"].startswith(f"seed {1 + TRAIN_OFFSET} (the suite's own seeds held out), 3 trials")
        assert any(k.startswith("tuned ") and "% of " in v for k, v in notes.items() if k != "tuned on")
    # a recipe's tuned env reaches its objects: the held-out run holds the env of the study's pick (no trial
    # meets 95 % in 240 s here, so the pick is the trial with the highest attainment, the cheaper on a tie)
    trials = pd.read_parquet(out / "tuning" / "exp1-staircase" / "llmd-queue" / "trials.parquet")
    best = trials.sort_values(["slo_attainment", "gpu_hours"], ascending=[False, True]).iloc[0]
    ran = json.loads((out / "exp1-staircase" / "llmd-queue-tuned" / "scenario.json").read_text())["autoscalers"][0]
    assert {k: float(v) for k, v in ran["env"].items()} == {
        c.removeprefix("params.env."): float(best[c]) for c in trials.columns if c.startswith("params.env.")}
    # the report covers the suite's runs and leaves the studies' trials out
    assert (out / "report.html").is_file() and "hpa-tuned" in (out / "report.html").read_text()
