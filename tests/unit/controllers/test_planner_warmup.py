"""Warm start from a trace: the trace's per-interval history (workloads/traces/intervals.py) read by the
harness into the planner's ``warmup_trace.points``; bad traces are one error naming the file and line."""
from __future__ import annotations

from pathlib import Path

import pytest

from scalearena.contracts.errors import UserError
from scalearena.controllers.planner import Planner, PlannerConfig, WarmupPoint, WarmupTrace
from scalearena.harness.config.scenario import load_scenario
from scalearena.workloads.traces.intervals import IntervalLoad, interval_history
from tests.conftest import write_yaml
from tests.unit.controllers.test_planner import traffic, v_prof
from tests.unit.harness.cli.test_cli import scalearena
from tests.unit.viewkit import view

HEADER = "TIMESTAMP,ContextTokens,GeneratedTokens\n"


def azure(path: Path, rows: list[tuple[float, int, int]]) -> Path:
    """An Azure-format trace with rows at the given seconds after 2023-11-16 18:00:00."""
    lines = [f"2023-11-16 18:{int(t // 60):02d}:{t % 60:09.6f},{i},{o}\n" for t, i, o in rows]
    path.write_text(HEADER + "".join(lines))
    return path


ROWS = [(0.0, 100, 10), (10.0, 200, 20), (25.0, 300, 30), (61.0, 1000, 5), (70.0, 3000, 15), (130.0, 50, 1)]


def test_intervals_count_and_average_and_drop_the_last_partial_one(tmp_path: Path) -> None:
    p = azure(tmp_path / "t.csv", ROWS)
    # 30 s intervals: [0,30) 3 rows, ISL (100+200+300)/3 = 200, OSL 20; [30,60) none; [60,90) 2 rows,
    # ISL 2000, OSL 10; [90,120) none; [120,150) holds the row at 130 but the trace ends inside it:
    # floor(130 / 30) = 4 complete intervals
    assert interval_history(str(p), "azure", 30) == [
        IntervalLoad(3, 200.0, 20.0), IntervalLoad(0, None, None), IntervalLoad(2, 2000.0, 10.0),
        IntervalLoad(0, None, None)]
    # time_scale 2: times 0, 5, 12.5, 30.5, 35, 65 -> [0,30) 3, [30,60) 2; 65 s ends inside the third
    assert interval_history(str(p), "azure", 30, time_scale=2) == [
        IntervalLoad(3, 200.0, 20.0), IntervalLoad(2, 2000.0, 10.0)]
    # window [10, 70): rows at 10, 25, 61 -> times 0, 15, 51 from the window's first row; the window
    # spans (70 - 10) = 60 s -> 2 complete intervals: [0,30) ISL (200+300)/2 = 250, OSL 25; [30,60) 1000
    assert interval_history(str(p), "azure", 30, start_s=10, window_s=60) == [
        IntervalLoad(2, 250.0, 25.0), IntervalLoad(1, 1000.0, 5.0)]


def test_a_trace_shorter_than_one_interval_is_an_error(tmp_path: Path) -> None:
    p = azure(tmp_path / "short.csv", ROWS[:3])  # 25 s of trace
    with pytest.raises(UserError) as e:
        interval_history(str(p), "azure", 30)
    assert e.value.where == str(p) and "spans 25.0 s" in e.value.message


def test_the_shipped_azure_trace_in_minutes() -> None:
    path = Path(__file__).resolve().parents[3] / "workloads" / "data" / "azure_code_2023_sample.csv"
    hist = interval_history(str(path), "azure", 60)
    # its first minute: 63 requests (counted in the file: rows before 18:18:03.98, 60 s after the first);
    # the hour holds 57 complete minutes
    assert len(hist) == 57 and hist[0].requests == 63 and sum(h.requests for h in hist) <= 8819


def scenario_with_trace(tmp_path: Path, scenario_dict: dict, trace: str, **tr) -> Path:
    scenario_dict["autoscalers"] = [{"kind": "planner", "throughput_adjustment_interval_s": 30,
                                     "warmup_trace": {"path": trace, "format": "azure", **tr}}]
    return write_yaml(tmp_path / "s.yaml", scenario_dict)


def test_the_harness_reads_the_trace_relative_to_the_scenario(tmp_path: Path, scenario_dict: dict) -> None:
    (tmp_path / "traces").mkdir()
    azure(tmp_path / "traces" / "day.csv", ROWS)
    sc = load_scenario(scenario_with_trace(tmp_path, scenario_dict, "traces/day.csv"))
    (cfg,) = sc.autoscalers
    assert cfg.warmup_trace.path == str((tmp_path / "traces" / "day.csv").resolve())
    assert [(p.requests, p.isl, p.osl) for p in cfg.warmup_trace.points] == [
        (3, 200.0, 20.0), (0, None, None), (2, 2000.0, 10.0), (0, None, None)]


def test_a_bad_trace_row_names_the_file_and_line(tmp_path: Path, scenario_dict: dict) -> None:
    p = azure(tmp_path / "bad.csv", ROWS)
    p.write_text(p.read_text().replace(",3000,", ",-5,"))  # the row at 70 s is line 6 (header is line 1)
    s = scenario_with_trace(tmp_path, scenario_dict, "bad.csv")
    r = scalearena("validate", str(s))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert f"{p}:6" in r.stderr and "ContextTokens" in r.stderr and "autoscalers.0" in r.stderr
    r = scalearena("validate", str(scenario_with_trace(tmp_path, scenario_dict, "missing.csv")))
    assert r.returncode == 2 and "trace file not found" in r.stderr and "missing.csv" in r.stderr


def test_planner_forecasts_from_the_trace_history_at_its_first_interval() -> None:
    # five intervals of 600 requests (ISL 4096, OSL 1024) as the harness would read them: arima has its
    # 5 points, so the first interval's forecast is arima's (a flat series -> its value 600 + the new 600)
    pts = [WarmupPoint(requests=600, isl=4096, osl=1024)] * 5
    cfg = PlannerConfig(throughput_adjustment_interval_s=60,
                        warmup_trace=WarmupTrace(path="day.csv", format="azure", points=pts))
    p = Planner(cfg)
    p.decide(0.0, view(0.0, v_prof(), metrics=traffic(600)))
    (d,) = p.decide(60.0, view(60.0, v_prof(), metrics=traffic(600)))
    # 10 req/s at 0.8905 req/s per replica (batch 2) -> 12, and no fallback
    assert d.desired_replicas == 12 and d.reasons[0].values["predictor"] == "arima"
    assert not [r for r in d.reasons if r.rule == "predictor_fallback"]


def test_empty_intervals_feed_the_request_series_only() -> None:
    pts = [WarmupPoint(requests=60, isl=1000, osl=100), WarmupPoint(requests=0)]
    p = Planner(PlannerConfig(warmup_trace=WarmupTrace(path="t.csv", format="azure", points=pts)))
    st = p._state("m")
    assert st.req.values == [60, 0] and st.isl.values == [1000] and st.osl.values == [100]


def test_an_unread_trace_and_two_histories_are_refused() -> None:
    with pytest.raises(ValueError, match="was not read"):
        Planner(PlannerConfig(warmup_trace=WarmupTrace(path="t.csv", format="azure")))
    with pytest.raises(ValueError, match="give one history"):
        PlannerConfig(warmup=[WarmupPoint(requests=1, isl=1, osl=1)],
                      warmup_trace=WarmupTrace(path="t.csv", format="azure"))
