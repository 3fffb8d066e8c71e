"""--executor ray on a local Ray instance (2 CPUs): a small suite and a 10-trial study run as Ray tasks.

The suite's summaries must be byte-identical to the same suite run locally (a run is a function of its
plan, wherever it runs), and one task whose worker dies (SCALEARENA_RAY_CRASH_ONCE) is run again and
marked with its attempts in suite.json. An unreachable --address is one error line, exit 2.
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from tests.unit.harness.cli.test_cli import scalearena

pytest.importorskip("ray")
HERE = Path(__file__).parent
SUITE, TINY = HERE / "tune_suite.yaml", HERE / "tune_tiny.yaml"
pytestmark = pytest.mark.slow


def _summaries(out: Path) -> dict[str, bytes]:
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("summary.json"))}


def test_suite_and_study_on_local_ray(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    local = scalearena("suite", str(SUITE), "--out", str(tmp_path / "local"), "--jobs", "1")
    assert local.returncode == 0, local.stderr
    monkeypatch.setenv("SCALEARENA_RAY_CRASH_ONCE", str(tmp_path / "crashed"))
    ray = scalearena("suite", str(SUITE), "--out", str(tmp_path / "ray"), "--executor", "ray", "--jobs", "2")
    assert ray.returncode == 0, ray.stderr
    assert (tmp_path / "crashed").is_file()  # one worker died mid-task ...
    rows = json.loads((tmp_path / "ray" / "suite.json").read_text())["runs"]
    assert [r["status"] for r in rows] == ["ok", "ok"]
    assert sorted(r.get("attempts", 1) for r in rows) == [1, 2]  # ... and its run went again, marked
    assert _summaries(tmp_path / "ray") == _summaries(tmp_path / "local") != {}
    monkeypatch.delenv("SCALEARENA_RAY_CRASH_ONCE")
    r = scalearena("tune", str(TINY), "--autoscaler", "kpa", "--trials", "10", "--out", str(tmp_path / "study"),
                   "--executor", "ray", "--jobs", "2", "--no-report")
    assert r.returncode == 0, r.stderr
    trials = pd.read_parquet(tmp_path / "study" / "trials.parquet")
    assert list(trials["number"]) == list(range(10)) and set(trials["state"]) == {"complete"}
    assert len(list((tmp_path / "study" / "trials").glob("trial-*/seed-1/summary.json"))) == 10


def test_unreachable_address_is_exit_2_naming_it(tmp_path: Path) -> None:
    r = scalearena("suite", str(SUITE), "--out", str(tmp_path / "o"), "--executor", "ray", "--address",
                   "127.0.0.1:1")
    assert r.returncode == 2
    assert r.stderr.strip() == ("error: --address 127.0.0.1:1: cannot reach the Ray cluster: Connection refused "
                                "(expected a running Ray cluster (ray://HOST:10001, HOST:6379 or auto))")
