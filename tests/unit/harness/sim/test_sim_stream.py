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
from hypothesis import given, settings, strategies as st

from scalearena.controllers.base import ArrivalForecast
from scalearena.harness.config.scenario import scenario_from_data
from scalearena.harness.control.view import (
    LazyForecast,
    OraclePlanStream,
    VariantInfo,
    forecast_from_requests,
    oracle_plan,
)
from scalearena.harness.sim.backend import SimBackend, Simulation
from scalearena.reports.results import RunWriter
from scalearena.workloads.base import RequestSpec
from scalearena.workloads.generate import build_requests

ROOT = Path(__file__).resolve().parents[4]


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


# One replica serves 1 req/s of one slot (max_num_seqs 1, 1 s per request): the plan follows the window's
# arrival count, so windows of different size, empty windows and arrivals on the 30 s boundaries show.
ONE_RPS = {"max_num_seqs": 1, "latency": {"kind": "constant", "ttft_ms": 1000, "itl_ms": 0}}
VARIANTS = (VariantInfo("a100", "m", "A100-80GB", 1, 1.0, 1, 2, 30.0, ONE_RPS),
            VariantInfo("h100", "m", "H100-SXM", 1, 2.5, 0, 4, 30.0, ONE_RPS),
            VariantInfo("l4", "n", "L4", 1, 0.5, 0, 3, 30.0, ONE_RPS))
_arrival = st.one_of(st.floats(0.0, 200.0, allow_nan=False), st.integers(0, 6).map(lambda k: 30.0 * k),
                     st.integers(1, 6).map(lambda k: 30.0 * k - 1e-9))


@settings(max_examples=60, deadline=None)
@given(arrivals=st.lists(st.tuples(_arrival, st.sampled_from(["m", "n"]), st.integers(1, 50)), max_size=120))
def test_the_streamed_oracle_plan_is_the_plan_of_the_whole_schedule(arrivals: list[tuple[float, str, int]]) -> None:
    reqs = [RequestSpec(i, m, t, 10 * k, k) for i, (t, m, k) in enumerate(sorted(arrivals, key=lambda a: a[0]))]
    stream = OraclePlanStream(VARIANTS)
    for r in reqs:
        stream.add(r.model, r.arrival_s, r.input_tokens, r.output_tokens)
    assert stream.plan() == oracle_plan(VARIANTS, forecast_from_requests(reqs, ["m", "n"]))


def test_the_streamed_plan_by_hand() -> None:
    # model m: window 0 [0, 30) 30 arrivals = 1 req/s -> 1 a100; window 1 empty -> a100 at its floor 1;
    # window 2 [60, 90) 90 arrivals = 3 req/s -> a100 at its max 2 + 1 h100
    stream = OraclePlanStream(VARIANTS[:2])
    for t in [k * 1.0 for k in range(30)] + [60 + k / 3 for k in range(90)]:
        stream.add("m", t, 10, 1)
    assert stream.plan() == {"window_s": 30.0, "replicas": {"a100": [1, 1, 2], "h100": [0, 0, 1]},
                             "floor": {"a100": 1, "h100": 0}}
    assert OraclePlanStream(VARIANTS).plan() is None  # no arrival: no plan, as oracle_plan without one


def test_the_simulators_rows_are_request_records_in_field_order(tmp_path: Path) -> None:
    # record() hands the writer a tuple per request, in RequestRecord's field order; a value in the wrong
    # column would break one of these relations (worked from the field definitions in contracts/records.py)
    data = yaml.safe_load((ROOT / "workloads/scenarios/exp1-staircase.yaml").read_text())
    data.update(duration_s=120, drain_s=60, autoscalers=[{"kind": "static", "replicas": 1}])
    sc = scenario_from_data(data, "exp1")
    w = RunWriter(tmp_path / "run", {})
    SimBackend().run(sc, sc.autoscalers[0], w, None)
    w.finish()
    df = pd.read_parquet(tmp_path / "run" / "requests.parquet")
    ok = df[df["status"] == "ok"]
    assert len(ok) > 50 and (df["status"] != "ok").any()  # ~2 RPS on one replica: some served, some not
    assert sorted(df["request_id"]) == list(range(len(df)))
    assert set(df["model"]) == {"qwen3-0.6b"} and set(ok["variant"]) == {"va-qwen"}
    assert ok["pod"].str.startswith("va-qwen-").all() and df["prefill_pod"].isna().all()
    assert df["scheduled_s"].isna().all()  # simulated arrivals are their schedule
    assert (ok["http_status"] == 200).all() and (ok["output_tokens"] == ok["requested_output_tokens"]).all()
    assert ((ok["ttft_ms"] - (ok["first_token_s"] - ok["arrival_s"]) * 1000).abs() < 1e-6).all()
    assert ((df["e2e_ms"] - (df["end_s"] - df["arrival_s"]) * 1000).abs() < 1e-6).all()
    # constant latency, ITL 2 ms: (end - first token) / (tokens - 1) is 2 ms, more for a request preempted
    # (recomputed) on its way; never less; prompts are drawn in [10, 8192] tokens
    assert (ok["itl_ms"] >= 2.0 - 1e-9).all() and (ok["itl_ms"].round(6) == 2.0).mean() > 0.5
    assert ok["input_tokens"].between(10, 8192).all()
