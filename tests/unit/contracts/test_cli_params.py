"""--jobs and --out are bounded the same way in every command (contracts/cli_params.py, issue 31 item 2/3)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.unit.harness.cli.test_cli import scalearena

ROOT = Path(__file__).resolve().parents[3]
SCENARIO = str(ROOT / "workloads" / "scenarios" / "exp1-staircase.yaml")
CAP = 4 * (os.cpu_count() or 1)  # JOBS_PER_CORE x the cores of this machine


@pytest.mark.parametrize("args", [
    ("run", SCENARIO), ("suite", str(ROOT / "workloads/suites/paper.yaml")), ("tune", SCENARIO, "--autoscaler", "hpa"),
    ("report", str(ROOT / "baselines/sim")),
])
def test_jobs_beyond_four_per_core_is_refused_before_anything_runs(args: tuple[str, ...], tmp_path: Path) -> None:
    r = scalearena(*args, "--jobs", str(CAP + 1), cwd=tmp_path)
    assert r.returncode == 2
    assert f"{CAP + 1} is outside 1..{CAP} (4 per core, {os.cpu_count() or 1} cores here)" in r.stderr + r.stdout
    assert list(tmp_path.iterdir()) == []  # nothing written


@pytest.mark.parametrize("command", ["suite", "tune"])
def test_with_ray_the_cap_is_the_clusters(command: str, tmp_path: Path) -> None:
    """suite and tune can send runs to a Ray cluster's CPUs: there --jobs may exceed this machine's cap, up to
    4096 (checked before Ray is imported or anything runs)."""
    target = (SCENARIO, "--autoscaler", "hpa") if command == "tune" else (str(ROOT / "workloads/suites/paper.yaml"),)
    r = scalearena(command, *target, "--executor", "ray", "--jobs", "100000", cwd=tmp_path)
    # suite bounds it in the option's type; tune in the command (its option errors are one error: line)
    assert r.returncode == 2 and "100000 is outside 1..4096" in r.stderr + r.stdout
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", ["run", "suite", "tune"])
def test_an_empty_out_is_refused(command: str, tmp_path: Path) -> None:
    target = SCENARIO if command != "suite" else str(ROOT / "workloads/suites/paper.yaml")
    r = scalearena(command, target, *(("--autoscaler", "hpa") if command == "tune" else ()), "--out", "", cwd=tmp_path)
    assert r.returncode == 2
    assert "an empty path; name the results folder" in r.stderr + r.stdout
    assert list(tmp_path.iterdir()) == []


def test_jobs_within_the_cap_is_taken() -> None:
    from scalearena.contracts.cli_params import JOBS

    assert JOBS.convert(str(CAP), None, None) == CAP and JOBS.convert(1, None, None) == 1


def test_an_out_folder_of_another_scenario_is_refused_the_same_one_reused(tmp_path: Path) -> None:
    """run --out into the folder of another scenario mixed the two (issue 31 item 3); rerunning the same
    scenario (or suite) into its own folder is how make bench works and stays allowed."""
    out = tmp_path / "o"
    short = ("--set", "duration_s=30", "--autoscaler", "hpa", "--out", str(out))
    assert scalearena("run", SCENARIO, *short).returncode == 0
    assert scalearena("run", SCENARIO, *short).returncode == 0  # the same scenario again
    r = scalearena("run", str(ROOT / "workloads/scenarios/exp2-cost-aware.yaml"), *short)
    assert r.returncode == 2
    assert "holds the results of 'exp1-staircase'; writing 'exp2-cost-aware' there would mix the two" in r.stderr
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == ["exp1-staircase"]


def test_key_values_one_parser_for_every_key_value_flag():
    from scalearena.contracts.cli_params import key_values
    from scalearena.contracts.errors import UserError

    assert key_values(["a=1", " b = x ", "a=2", "c="], "--x", "K=V") == {"a": "2", "b": " x ", "c": ""}
    assert key_values([" b = x "], "--x", "K=V", strip=True) == {"b": "x"}
    for bad, kw in (("noeq", {}), ("=v", {}), ("k=", {"empty": False}), ("k= ", {"empty": False})):
        with pytest.raises(UserError, match=f"--x '{bad}'"):
            key_values([bad], "--x", "K=V", **kw)
