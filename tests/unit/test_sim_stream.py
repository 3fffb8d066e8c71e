"""The simulator streams a run's requests from the generator instead of holding them (issue 18 item 1).

From a stream, offered load is counted as requests arrive and the oracle's forecast is generated
again from the scenario when it first reads it; from a list, both come from the list. The two
must give the same run, file for file.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml

from scalearena.controllers.base import ArrivalForecast
from scalearena.harness.backends.sim import SimBackend, Simulation
from scalearena.harness.control.view import LazyForecast
from scalearena.harness.scenario import scenario_from_data
from scalearena.reports.results import RunWriter
from scalearena.workloads.generate import build_requests

ROOT = Path(__file__).resolve().parents[2]


def _files(out: Path) -> tuple[str, str, pd.DataFrame, pd.DataFrame]:
    return ((out / "summary.json").read_text(), (out / "decisions.jsonl").read_text(),
            pd.read_parquet(out / "requests.parquet"), pd.read_parquet(out / "timeseries.parquet"))


@pytest.mark.parametrize("label", ["wva", "oracle"])
def test_a_streamed_run_is_the_run_from_a_list(tmp_path: Path, label: str) -> None:
    data = yaml.safe_load((ROOT / "workloads/scenarios/exp1-staircase.yaml").read_text())
    data.update(duration_s=240, drain_s=60, autoscalers=[{"kind": label}])  # the staircase's ~2 RPS step
    sc = scenario_from_data(data, "exp1")
    cfg = sc.autoscalers[0]
    streamed = RunWriter(tmp_path / "stream", {})
    SimBackend().run(sc, cfg, streamed, None)  # iter_requests: never a list
    listed = RunWriter(tmp_path / "list", {})
    listed.meta["workload_generation"] = None  # set by SimBackend only; equalised below
    Simulation(sc, cfg, listed, build_requests(sc)).run()
    listed.meta["workload_generation"] = streamed.meta["workload_generation"]
    streamed.finish()
    listed.finish()
    a, b = _files(tmp_path / "stream"), _files(tmp_path / "list")
    assert a[0] == b[0] and a[1] == b[1]
    pd.testing.assert_frame_equal(a[2], b[2])
    pd.testing.assert_frame_equal(a[3], b[3])  # offered_rps counted as requests came == from the schedule
    assert a[3]["offered_rps"].sum() > 0
    assert streamed.meta["workload_generation"]["requests"] == [len(a[2])]


def test_the_forecast_is_made_only_when_a_policy_reads_it() -> None:
    made = []

    def requests() -> list[Any]:
        made.append(True)
        return [type("R", (), {"model": m, "arrival_s": t, "input_tokens": 10, "output_tokens": 5})()
                for m, t in (("a", 0.5), ("b", 1.0), ("a", 2.0))]

    fc = LazyForecast(requests, ["a", "b"])
    assert len(fc) == 2 and not made and not fc.made  # its length is the models', known without generating
    assert fc[0] == ArrivalForecast("a", (0.5, 2.0), (10, 10), (5, 5))
    assert [f.model for f in fc] == ["a", "b"] and fc[1].arrival_s == (1.0,)
    assert made == [True]  # generated once
