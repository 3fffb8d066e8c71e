"""Tuning: objectives and targets as the CLI reads them, the Pareto front on known points, bad input."""
from __future__ import annotations

import json
from pathlib import Path

import optuna
import pytest
from optuna.distributions import FloatDistribution
from optuna.trial import create_trial

from scalearena.contracts.errors import UserError
from scalearena.harness.run.outcome import RunOutcome
from scalearena.harness.tuning.objectives import check_target, cost_axis, parse_objectives
from scalearena.harness.tuning.outputs import front_numbers
from scalearena.reports.tune import study_points, study_verdict
from scalearena.reports.verdict import Point
from tests.unit.harness.cli.test_cli import scalearena

PHYSICAL = str(Path(__file__).resolve().parents[4] / "workloads" / "scenarios" / "physical-validation.yaml")


def _study(points: list[tuple[float, float]], constraints: list[float] | None = None) -> optuna.Study:
    study = optuna.create_study(directions=["minimize", "maximize"])
    for i, (cost, att) in enumerate(points):
        system = {} if constraints is None else {"constraints": [constraints[i]]}
        study.add_trial(create_trial(values=[cost, att], params={"x": float(i)},
                                     distributions={"x": FloatDistribution(0, 10)}, system_attrs=system))
    return study


def test_pareto_front_of_known_points() -> None:
    # (cost, attainment): 0 (1, .5); 1 (2, .9); 2 (2, .6) worse than 1 at the same cost; 3 (3, .9) dearer
    # than 1 for the same attainment; 4 (0.5, .1) cheapest. Front: 4 -> 0 -> 1.
    study = _study([(1, .5), (2, .9), (2, .6), (3, .9), (0.5, .1)])
    assert front_numbers(study) == {0, 1, 4}


def test_a_trial_breaking_the_constraint_is_off_the_front() -> None:
    # trial 1 (2, .9) is infeasible (constraint 0.05 > 0). Among the rest nothing dominates 2 (2, .6) any
    # more (0 is cheaper but attains less, 3 attains more but costs more): front 4 -> 0 -> 2 -> 3
    study = _study([(1, .5), (2, .9), (2, .6), (3, .9), (0.5, .1)], constraints=[-1, 0.05, -1, -1, -1])
    assert front_numbers(study) == {0, 2, 3, 4}


def test_verdict_over_study_points_picks_the_cheapest_meeting_the_target() -> None:
    import pandas as pd

    trials = pd.DataFrame([
        {"label": "trial-0000", "state": "complete", "cost": 3.0, "gpu_hours": 1.2, "slo_attainment": 0.97},
        {"label": "trial-0001", "state": "complete", "cost": 2.0, "gpu_hours": 0.8, "slo_attainment": 0.96},
        {"label": "trial-0002", "state": "complete", "cost": 1.0, "gpu_hours": 0.4, "slo_attainment": 0.50},
        {"label": "trial-0003", "state": "failed", "cost": None, "gpu_hours": None, "slo_attainment": None}])
    refs = {"default": {"ok": True, "metrics": {"cost": 0.9, "gpu_hours": 0.36, "slo_attainment": 0.99}},
            "oracle": {"ok": True, "metrics": {"cost": 1.5, "gpu_hours": 0.6, "slo_attainment": 0.98}}}
    # the oracle frontier of the study: the floor (0.2 GPU-h at 0.30) and the oracle at u=1.25 (0.5 at 0.90)
    floor = Point("floor", 0.5, 0.2, 0.30, bound=True, floor=True, frontier=True)
    u125 = Point("oracle u=1.25", 1.25, 0.5, 0.90, bound=True, frontier=True)
    v = study_verdict(study_points(trials, refs, "cost"), 0.95, [floor, u125])
    # meeting 95 %: trial-0000 (3.0), trial-0001 (2.0); the default (0.9) is a reference, not a candidate
    assert v.pick is not None and v.pick.name == "trial-0001"
    assert v.runner_up is not None and v.runner_up.name == "trial-0000"
    assert v.bound is not None and v.bound.name == "oracle"
    # hull (attainment, GPU-h): (0.30, 0.2) -> (0.90, 0.5) -> (0.98, 0.6), the oracle's own run on top.
    # trial-0001 at 0.96: 0.5 + (0.6 - 0.5) x (0.96 - 0.90) / (0.98 - 0.90) = 0.575 -> regret 0.8 - 0.575 = 0.225
    assert v.regret["trial-0001"].gpu_hours == pytest.approx(0.225)
    # trial-0002 at 0.50: 0.2 + 0.3 x (0.50 - 0.30) / 0.60 = 0.3 -> 0.4 - 0.3 = 0.1
    assert v.regret["trial-0002"].gpu_hours == pytest.approx(0.1)
    # trial-0000 at 0.97 <= 0.98: 0.5 + 0.1 x 0.07 / 0.08 = 0.5875 -> 1.2 - 0.5875 = 0.6125
    assert v.regret["trial-0000"].gpu_hours == pytest.approx(0.6125)


def test_objectives_default_and_bad_names() -> None:
    assert [o.id for o in parse_objectives([])] == ["cost_usd", "slo_attainment"]  # USD, as the suite pages
    got = parse_objectives(["gpu_hours", "ttft_p99", "goodput_rps"])
    assert [o.direction for o in got] == ["minimize", "minimize", "maximize"]
    assert cost_axis(got).id == "gpu_hours" and cost_axis(parse_objectives(["ttft_p99"])).id == "cost_usd"
    with pytest.raises(UserError, match="--objective latency: no such objective"):
        parse_objectives(["latency"])
    with pytest.raises(UserError, match="did you mean 'goodput_rps'"):
        parse_objectives(["goodput"])
    with pytest.raises(UserError, match="given twice"):
        parse_objectives(["cost", "cost"])
    with pytest.raises(UserError, match="no such objective"):
        parse_objectives(["requests_total"])  # a count without a direction: nothing to optimise
    assert check_target(0.0) == 0.0 and check_target(1.0) == 1.0
    with pytest.raises(UserError, match=r"--min-attainment 1.5: outside \[0, 1\]"):
        check_target(1.5)


def test_default_objectives_are_usd_unless_the_folder_holds_a_study_begun_otherwise(tmp_path: Path) -> None:
    from scalearena.harness.tuning.objectives import default_objectives

    assert default_objectives(tmp_path) == ("cost_usd", "slo_attainment")  # no study yet
    (tmp_path / "tune.json").write_text(json.dumps({"objectives": ["cost", "slo_attainment"]}))
    assert default_objectives(tmp_path) == ("cost", "slo_attainment")  # begun under the old default: continues
    (tmp_path / "tune.json").write_text(json.dumps({"objectives": ["nope"]}))
    assert default_objectives(tmp_path) == ("cost_usd", "slo_attainment")  # unreadable: the default
    (tmp_path / "tune.json").write_text("{")
    assert default_objectives(tmp_path) == ("cost_usd", "slo_attainment")


@pytest.mark.parametrize(("args", "message"), [
    (["--objective", "nope"], "error: --objective nope: no such objective"),
    (["--min-attainment", "1.5"], "error: --min-attainment 1.5: outside [0, 1]"),
    (["--min-attainment", "-0.1"], "error: --min-attainment -0.1: outside [0, 1]"),
    (["--param", "tau_kv=0.5:1.5"], "error: --param tau_kv=0.5:1.5: wva refuses tau_kv = 1.5: Input should be "
                                     "less than or equal to 1"),
    (["--param", "nope=1:2"], "error: --param nope=1:2: wva has no parameter 'nope'"),
    (["--trials", "0"], "error: --trials 0: must be at least 1"),
    (["--seeds", "0"], "error: --seeds 0: must be at least 1"),
    (["--seeds", str(2**63)], "error: --seeds 9223372036854775808: at most 1,000"),  # was a MemoryError
    (["--jobs", "0"], "error: --jobs 0: must be at least 1"),  # was taken as "all cores"
])
def test_bad_tune_input_is_one_line_and_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    r = scalearena("tune", PHYSICAL, "--autoscaler", "wva", "--out", str(tmp_path / "o"), *args)
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().splitlines() == [r.stderr.strip()] and r.stderr.startswith(message), r.stderr
    assert not (tmp_path / "o" / "study.db").exists()  # refused before any study exists


def test_an_out_folder_holding_another_study_is_refused(tmp_path: Path) -> None:
    from scalearena.harness.tuning import study as st
    from scalearena.harness.tuning.objectives import parse_objectives as po

    out = tmp_path / "o"
    out.mkdir()
    optuna.create_study(storage=st.storage_url(out), study_name=st.STUDY_NAME, directions=["minimize", "maximize"]
                        ).set_user_attr("setup", {"scenario": "other", "autoscaler": "hpa"})
    assert po([])  # the CLI's defaults: a two-objective study, like the stored one
    r = scalearena("tune", PHYSICAL, "--autoscaler", "wva", "--out", str(out), "--trials", "1")
    assert r.returncode == 2
    # stored setup: scenario "other", autoscaler "hpa", no kind/objectives/seeds/space/fixed; target is None on
    # both sides (slo_attainment is an objective of the CLI's default, so no constraint): not listed
    assert r.stderr.startswith(f"error: --out {out}: holds a study whose autoscaler, fixed, kind, objectives, "
                               "scenario, seeds, space differ (hpa on other)"), r.stderr


def test_a_trial_whose_run_went_again_after_a_lost_worker_is_marked() -> None:
    from types import SimpleNamespace

    from scalearena.harness.tuning.outputs import trials_frame
    from scalearena.harness.tuning.study import _tell
    from scalearena.harness.tuning.trials import outcome

    def run(seed: int, attainment: float, attempts: int = 1) -> RunOutcome:
        return RunOutcome(f"trials/trial-0000/seed-{seed}", "ok", attempts=attempts,
                          summary={"cost": 1.0, "cost_usd": 2.0, "slo_attainment": {"both": attainment}})

    # seed 2's run took 2 attempts (harness/run/executor_ray.py marks it); attainment mean (0.9 + 0.8) / 2 = 0.85
    res = outcome([run(1, 0.9), run(2, 0.8, attempts=2)], parse_objectives([]))
    assert res.attempts == 2 and res.metrics["slo_attainment"] == pytest.approx(0.85)
    assert outcome([run(1, 0.9)], parse_objectives([])).attempts == 1
    t = SimpleNamespace(objectives=parse_objectives([]), constrained=False, target=0.8)
    study = optuna.create_study(directions=["minimize", "maximize"])
    for r in (res, outcome([run(1, 0.9)], parse_objectives([]))):
        trial = study.ask()
        trial.set_user_attr("values", {})
        _tell(study, t, trial, r)  # type: ignore[arg-type]
    frame = trials_frame(study, t)  # type: ignore[arg-type]
    assert list(frame["attempts"]) == [2, 1] and list(frame["state"]) == ["complete", "complete"]
