"""`scalearena tune` end to end on a tiny scenario: a known best, determinism, resume, the snippet, the report."""
from __future__ import annotations

import contextlib
import json
import sqlite3
from pathlib import Path

import optuna
import pandas as pd
import pytest
import yaml

from scalearena.harness.config.scenario import load_scenario
from scalearena.harness.config.suite import plans_for_scenario
from scalearena.harness.run.runner import run_plan
from tests.unit.harness.cli.test_cli import scalearena

TINY = Path(__file__).with_name("tune_tiny.yaml")


def tune(out: Path, *args: str) -> str:
    r = scalearena("tune", str(TINY), "--out", str(out), "--jobs", "1", "--no-report", *args)
    assert r.returncode == 0, r.stderr + r.stdout
    return r.stdout


def test_single_objective_study_finds_the_cheapest_static_fleet_meeting_the_target(tmp_path: Path) -> None:
    out = tmp_path / "static"
    tune(out, "--autoscaler", "static", "--param", "replicas=1:4", "--objective", "cost", "--min-attainment", "0.9",
         "--trials", "6", "--sampler", "random")
    trials = pd.read_parquet(out / "trials.parquet")
    assert len(trials) == 6 and set(trials["state"]) == {"complete"}
    assert trials.loc[0, "params.replicas"] == 2 and trials.loc[0, "default"]  # the scenario's own replicas: 2
    assert 1 in set(trials["params.replicas"])  # random sampler, seed 0: replicas 1 is among the trials
    # n replicas cost n x 2.0 x 60 s / 3600 = n / 30; every fleet serves all requests in the SLO
    for r in trials.to_dict("records"):
        assert r["cost"] == pytest.approx(r["params.replicas"] / 30, rel=1e-9)
        assert r["slo_attainment"] == 1.0
    best = yaml.safe_load((out / "best.yaml").read_text())
    assert best == [{"kind": "static", "name": "static-tuned", "replicas": 1}]
    assert "attainment 100.0% (target 90.0%), goodput" in (out / "best.yaml").read_text()
    assert "req/s; seed 1.\n" in (out / "best.yaml").read_text()  # one seed: no mean
    meta = json.loads((out / "tune.json").read_text())
    assert meta["constrained"] and meta["references"]["default"]["metrics"]["cost"] == pytest.approx(2 / 30)
    # a single-objective front is the best trial(s): the fleets of one replica
    front = pd.read_parquet(out / "front.parquet")
    assert set(front["params.replicas"]) == {1}
    # the bound: the oracle frontier on the study's seed (u=1 is the oracle reference run) and #1499's number;
    # the floor (1 replica, the minimum) serves everything here, as one replica does: 1 x 60 s = 1/60 GPU-h
    bound = meta["frontier"]
    assert [p["setting"] for p in bound["points"]] == ["floor", "u=2", "u=1.25", "u=1", "u=0.9", "u=0.75", "u=0.5"]
    floor = bound["points"][0]["summary"]
    assert floor["slo_attainment"]["both"] == 1.0 and floor["gpu_hours"] == pytest.approx(1 / 60, rel=1e-9)
    assert len(bound["perfect_system"]) == 1


def test_study_is_deterministic_and_a_rerun_resumes_it(tmp_path: Path) -> None:
    args = ("--autoscaler", "kpa", "--trials", "3", "--sampler", "tpe")
    tune(tmp_path / "a", *args)
    tune(tmp_path / "a", "--autoscaler", "kpa", "--trials", "4", "--sampler", "tpe")  # resume: 1 more
    tune(tmp_path / "b", "--autoscaler", "kpa", "--trials", "4", "--sampler", "tpe")  # uninterrupted
    a, b = (pd.read_parquet(tmp_path / d / "trials.parquet") for d in ("a", "b"))
    assert list(a["number"]) == [0, 1, 2, 3]
    cols = [c for c in a.columns if c.startswith("params.")] + ["cost", "slo_attainment", "goodput_rps"]
    pd.testing.assert_frame_equal(a[cols], b[cols])  # same samples, same numbers
    assert sorted(p.name for p in (tmp_path / "a").glob("study.db*")) == ["study.db"]  # WAL merged on exit
    with contextlib.closing(sqlite3.connect(tmp_path / "a" / "study.db")) as db:
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)  # commits without a sync each
    study = optuna.load_study(study_name="tune", storage=f"sqlite:///{tmp_path / 'a' / 'study.db'}")
    assert len(study.trials) == 4  # one study, resumed: not two
    again = tune(tmp_path / "a", "--autoscaler", "kpa", "--trials", "4", "--sampler", "tpe")  # complete: runs none
    assert len(pd.read_parquet(tmp_path / "a" / "trials.parquet")) == 4 and "study:" in again


def test_best_snippet_loads_and_reproduces_the_trial(tmp_path: Path) -> None:
    out = tmp_path / "hpa"
    tune(out, "--autoscaler", "hpa", "--trials", "5", "--min-attainment", "0.5", "--set",
         "workload.arrivals.rate_rps=12")
    meta = json.loads((out / "tune.json").read_text())
    assert meta["best_trial"] is not None
    entry = yaml.safe_load((out / "best.yaml").read_text())
    data = yaml.safe_load(TINY.read_text())
    data["autoscalers"] = entry
    data["workload"]["arrivals"]["rate_rps"] = 12
    scenario = tmp_path / "with-best.yaml"
    scenario.write_text(yaml.safe_dump(data))
    sc = load_scenario(scenario)
    (plan,) = plans_for_scenario(sc, ["hpa-tuned"])
    got = run_plan(plan, tmp_path / "rerun", "sim").summary
    trial = json.loads((out / "trials" / f"trial-{meta['best_trial']:04d}" / "seed-1" / "summary.json").read_text())
    for key in ("requests_total", "requests_ok", "cost", "gpu_hours", "goodput_rps", "slo_attainment", "replicas",
                "ttft_ms", "scaling_actions"):
        assert got[key] == trial[key], key


def test_a_recipe_trial_runs_its_sampled_placeholders_and_its_snippet_reproduces_it(tmp_path: Path) -> None:
    # llmd-slo's THETA_UP / THETA_DN reach its objects through ${VAR}: each trial's objects must be read again
    # with the sampled values (they kept the recipe's 0.55 / 0.40, so every trial ran the default)
    out = tmp_path / "slo"
    tune(out, "--autoscaler", "llmd-slo", "--param", "env.THETA_UP=0.3:0.5", "--param", "env.THETA_DN=0.1:0.2",
         "--trials", "2", "--sampler", "random", "--no-frontier", "--set", "workload.arrivals.rate_rps=12")
    for n in (0, 1):
        run = json.loads((out / "trials" / f"trial-000{n}" / "seed-1" / "scenario.json").read_text())["autoscalers"][0]
        up, dn = run["env"]["THETA_UP"], run["env"]["THETA_DN"]
        assert 0.3 <= float(up) <= 0.5 and 0.1 <= float(dn) <= 0.2  # sampled from the --param ranges
        assert [(i["THETA_UP"], i["THETA_DN"]) for i in run["instances"]] == [(up, dn)]  # one variant, va
    default = json.loads((out / "default" / "seed-1" / "scenario.json").read_text())["autoscalers"][0]
    assert [(i["THETA_UP"], i["THETA_DN"]) for i in default["instances"]] == [("0.55", "0.40")]
    entry = yaml.safe_load((out / "best.yaml").read_text())
    # as one writes it: no compiled targets, rules or instances, the recipe's own objects
    assert [sorted(e) for e in entry] == [["env", "kind", "name"]]
    data = yaml.safe_load(TINY.read_text())
    data["autoscalers"] = entry
    data["workload"]["arrivals"]["rate_rps"] = 12
    scenario = tmp_path / "with-best.yaml"
    scenario.write_text(yaml.safe_dump(data))
    (plan,) = plans_for_scenario(load_scenario(scenario), ["llmd-slo-tuned"])
    got = run_plan(plan, tmp_path / "rerun", "sim").summary
    best = json.loads((out / "tune.json").read_text())["best_trial"]
    trial = json.loads((out / "trials" / f"trial-{best:04d}" / "seed-1" / "summary.json").read_text())
    for key in ("requests_total", "requests_ok", "cost", "slo_attainment", "replicas", "scaling_actions"):
        assert got[key] == trial[key], key


def test_a_study_of_the_oracle_says_its_pick_is_a_bound(tmp_path: Path) -> None:
    tune(tmp_path / "o", "--autoscaler", "oracle", "--trials", "1", "--no-frontier")
    head = (tmp_path / "o" / "best.yaml").read_text().splitlines()[1]
    assert head == "# The oracle reads the future arrival schedule: a hindsight bound, not a deployable configuration."


def test_report_renders_the_study(tmp_path: Path) -> None:
    out = tmp_path / "kpa"
    printed = tune(out, "--autoscaler", "kpa", "--trials", "3")
    # cost in USD by default, as the suite pages show it (the tiny scenario's GPU has a price): the last lines
    # and the page; tune.json records the cost axis
    assert " USD at " in printed and "variantCost" not in printed, printed
    assert json.loads((out / "tune.json").read_text())["cost_metric"] == "cost_usd"
    r = scalearena("report", str(out))
    assert r.returncode == 0, r.stderr
    html = (out / "report.html").read_text()
    assert "VERDICT" in html and "Pareto front" in html and 'id="fig-scatter-tiny"' in html
    assert '"label": "trial' in html or '"label":"trial' in html  # the trials drawn as their own datasets
    assert html.index("VERDICT") < html.index("Cost against SLO attainment")  # the answer first
    assert "<th>cost (USD)</th>" in html
