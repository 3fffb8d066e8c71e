"""benchmarks/sim_vs_real.py's comparison: scale steps read from the desired replicas, paired across backends."""
from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from scalearena.harness.config.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("sim_vs_real", ROOT / "benchmarks" / "sim_vs_real.py")
assert _spec is not None and _spec.loader is not None
svr = importlib.util.module_from_spec(_spec)
sys.modules["sim_vs_real"] = svr  # its dataclasses look their module up
_spec.loader.exec_module(svr)


def test_steps_are_changes_of_the_desired_replicas_inside_the_window() -> None:
    # 1 -> 2 seen at t = 10; 2 -> 1 at t = 20 lies past an 18 s window
    assert svr.steps_of([0.0, 5.0, 10.0, 15.0, 20.0], [1, 1, 2, 2, 1], 18.0) == [(10.0, 1)]
    # a two-replica jump is one step of size 2
    assert svr.steps_of([0.0, 5.0], [1, 3], 60.0) == [(5.0, 2)]


def test_each_sim_step_pairs_with_the_nearest_real_step_of_its_direction_within_tolerance() -> None:
    sim = [(10.0, 1), (40.0, 1), (100.0, -1)]
    real = [(22.0, 1), (45.0, 2), (200.0, -1)]
    # 10 -> 22 (12 s; 45 is 35 s away), 40 -> 45 (5 s); 100 has no scale-down within 30 s (200 is 100 s away),
    # and the real scale-down at 200 s joins no move: both stay unmatched
    assert svr.match(sim, real, 30.0) == [([0], [0]), ([1], [1])]
    # a step in the other direction never pairs, however close
    assert svr.match([(10.0, 1)], [(11.0, -1)], 30.0) == []


def test_one_move_taken_in_two_steps_is_one_move() -> None:
    # the simulator's +4 at 105 s; the real HPA went +2 at 114 s and +2 at 129 s (24 s after 105): sums 4 = 4
    assert svr.match([(105.0, 4)], [(114.0, 2), (129.0, 2)], 30.0) == [([0], [0, 1])]
    # ... and the other way round
    assert svr.match([(105.0, 2), (120.0, 2)], [(110.0, 4)], 30.0) == [([0, 1], [0])]
    # a second real step that overshoots the simulator's move (2 + 4 = 6 > 4) is not part of it
    assert svr.match([(105.0, 4)], [(114.0, 2), (129.0, 4)], 30.0) == [([0], [0])]
    # nor one beyond the tolerance (140 is 35 s from 105)
    assert svr.match([(105.0, 4)], [(114.0, 2), (140.0, 2)], 30.0) == [([0], [0])]


def test_a_step_near_the_windows_end_without_a_partner_is_censored_not_missed() -> None:
    # WVA's scale-down at 210 s of a 220 s window, tolerance 60 s: the real one may come at up to 270 s, unseen
    sim, real = [(90.0, 1), (150.0, 1), (210.0, -1)], [(89.0, 1), (149.0, 1)]
    groups = svr.match(sim, real, 60.0)
    assert groups == [([0], [0]), ([1], [1])]
    assert svr.censored(sim, real, groups, 220.0 - 60.0) == 1  # 210 > 160
    # the same step at 150 s would be a miss: the real side had 70 s of window left to show it
    assert svr.censored([(90.0, 1), (150.0, -1)], [(89.0, 1)], [([0], [0])], 160.0) == 0


def test_tolerance_is_one_sync_period_plus_one_scrape_interval() -> None:
    sc = load_scenario(ROOT / "workloads" / "scenarios" / "sim-vs-real.yaml")
    scrape = sc.metrics.scrape_interval_s  # 15 s
    assert svr.tolerance_s(sc.autoscaler("hpa"), scrape) == 15.0 + 15.0  # the HPA's sync + the scrape
    assert svr.tolerance_s(sc.autoscaler("wva"), scrape) == 30.0 + 15.0 + 15.0  # WVA's period before its HPA
    # objects with their own PromQL run unscaled on kwok; the presets at the benchmark's time scale
    assert svr.time_scale_of(sc.autoscaler("hpa-object"), 2.0) == 1.0
    assert svr.time_scale_of(sc.autoscaler("llmd-slo"), 2.0) == 1.0
    assert svr.time_scale_of(sc.autoscaler("keda"), 2.0) == 2.0


def test_real_runs_are_read_back_from_the_committed_raw_figures() -> None:
    path = ROOT / "benchmarks" / "data" / "sim_vs_real.json"
    raw = json.loads(path.read_text())
    stored = svr.stored_real(path)
    # one run per autoscaler and seed of the kwok side, as the file lists them
    assert len(stored) == sum(len(row["real"]) for row in raw["rows"]) > 0
    first = raw["rows"][0]["real"][0]
    run = stored[(raw["rows"][0]["autoscaler"], int(first["seed"]))]
    assert run.replica_s == first["replica_s"] and run.steps == [tuple(x) for x in first["steps"]]


def test_real_from_a_missing_file_is_bad_input(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "argv", ["sim_vs_real.py", "--real-from", str(tmp_path / "none.json")])
    assert svr.main() == 2
    assert "--real-from" in capsys.readouterr().err


def test_the_simulator_runs_in_each_real_runs_conditions_and_the_lead_is_read_back(tmp_path: Path) -> None:
    """The simulator's side takes the conditions the kube run measured: its loops' phases (the controllers' lead,
    the event control_lead; the scrape and rule offsets of its Prometheus) and its engines' mean ITL; nothing
    else of the real run reaches it."""
    sc_path = ROOT / "workloads" / "scenarios" / "sim-vs-real.yaml"
    real = svr.Run(seed=1, time_scale=1.0, window_s=220.0, replica_s=0.0, max_ready=1, steps=[], goodput=0.0,
                   failures={}, ttft={}, itl={"mean": 25.0}, complete=True, control_lead_s=39.5,
                   phases={"engine_scrape_s": 2.5, "gateway_scrape_s": 8.0, "rules_s": {"model-queue": 5.5},
                           "kube_state_scrape_s": 11.0, "sync_lag_s": 0.04},
                   ttft_floor_ms=206.5, start_lag_s=0.25)
    svr.run_sim(sc_path, ["hpa"], [1], {("hpa", 1): real}, tmp_path, "sim", phases=True, itl=True)
    run = tmp_path / "sim" / "sim-vs-real" / "hpa" / "seed-1"
    scen = json.loads((run / "scenario.json").read_text())
    assert scen["phases"] == {"control_lead_s": 39.5, "decide_lead_s": None, "engine_scrape_s": 2.5,
                              "gateway_scrape_s": 8.0, "keda_query_grid_s": None, "kube_state_scrape_s": 11.0,
                              "published_scrape_s": None,
                              "pod_scrape_s": {}, "rules_s": {"model-queue": 5.5}, "sync_lag_s": 0.04}
    assert scen["cluster"]["variants"][0]["startup_s"] == 20.25  # the scenario's 20 s + the measured start lag
    assert scen["cluster"]["variants"][0]["engine"]["latency"]["itl_ms"] == 25.0
    assert scen["cluster"]["variants"][0]["engine"]["latency"]["ttft_ms"] == 206.5  # the real TTFT floor
    svr.run_sim(sc_path, ["hpa"], [1], {("hpa", 1): real}, tmp_path, "slower", phases=True, itl=True, itl_factor=1.01)
    slower = json.loads((tmp_path / "slower" / "sim-vs-real" / "hpa" / "seed-1" / "scenario.json").read_text())
    assert slower["cluster"]["variants"][0]["engine"]["latency"]["itl_ms"] == 25.25  # 25 x 1.01
    rows = [json.loads(x) for x in (run / "decisions.jsonl").read_text().splitlines()]
    # created at -39.5, synced every 15.04 s: -39.5 + 3 x 15.04 = 5.62, then every 15.04 s
    assert [r["t_s"] for r in rows][:3] == pytest.approx([5.62, 20.66, 35.7])
    assert svr.load_run(run).control_lead_s is None  # the simulator applies no objects
    summary = json.loads((run / "summary.json").read_text())  # as a kube run records it (kube/sampling.py)
    summary["events"].append({"t_s": -39.5, "kind": "control_lead", "control_lead_s": 39.5})
    (run / "summary.json").write_text(json.dumps(summary))
    assert svr.load_run(run).control_lead_s == 39.5
    svr.run_sim(sc_path, ["hpa"], [1], {("hpa", 1): real}, tmp_path, "nominal", phases=False, itl=False)
    scen = json.loads((tmp_path / "nominal" / "sim-vs-real" / "hpa" / "seed-1" / "scenario.json").read_text())
    assert scen["phases"]["control_lead_s"] == 0.0 and scen["phases"]["engine_scrape_s"] is None
    assert scen["cluster"]["variants"][0]["engine"]["latency"]["itl_ms"] == 20.0
    assert scen["cluster"]["variants"][0]["startup_s"] == 20.0  # the start lag goes with the measured phases


def test_engine_times_are_tpot_and_the_ttft_floor_of_the_records(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    # four served requests and one that timed out; TTFT floor: the fastest is 206, so 10 % above is 226.6:
    # 206, 208 and 220 qualify (median 208), 1,500 (queued) does not
    rows = {"status": ["ok", "ok", "ok", "ok", "timeout"],
            "ttft_ms": [206.0, 208.0, 220.0, 1500.0, None],
            "e2e_ms": [206.0 + 127 * 21.0, 208.0 + 9 * 20.0, 220.0 + 99 * 22.0, 1500.0, None],
            "output_tokens": [128, 10, 100, 1, 0]}
    pq.write_table(pa.table(rows), tmp_path / "requests.parquet")
    itl, floor = svr.engine_times(tmp_path)
    # per request (e2e - TTFT) / (tokens - 1): 21.0, 20.0, 22.0 (one-token requests have none)
    assert itl["mean"] == pytest.approx(21.0)
    assert itl["p50"] == pytest.approx(21.0)
    assert itl["p99"] == pytest.approx(21.0 + 0.98 * 1.0)  # numpy's linear: 21 + (0.99 * 2 - 1) x (22 - 21)
    assert floor == pytest.approx(208.0)


def _run(seed: int, goodput: float, replica_s: float) -> Any:
    return svr.Run(seed=seed, time_scale=1.0, window_s=220.0, replica_s=replica_s, max_ready=2, steps=[],
                   goodput=goodput, failures={}, ttft={"p50": None, "p99": None},
                   itl={"mean": None, "p50": None, "p99": None}, complete=True)


def test_a_goodput_miss_within_the_engine_speed_band_is_said_so() -> None:
    row = svr.Row("keda", 30.0)
    # seeds 1, 2: the simulator as measured 1.10 and 1.30 (mean 1.20), 1 % slower 0.98 / 1.10 (mean 1.04),
    # 1 % faster 1.20 / 1.40 (1.30); real 1.00 and 1.16: mean 1.08, 10 % below 1.20 and inside [1.04, 1.30]
    row.sim = [_run(1, 1.10, 600.0), _run(2, 1.30, 640.0)]
    row.slower = [_run(1, 0.98, 610.0), _run(2, 1.10, 650.0)]
    row.faster = [_run(1, 1.20, 600.0), _run(2, 1.40, 620.0)]
    row.real = [_run(1, 1.00, 700.0), _run(2, 1.16, 700.0)]
    svr.judge(row)
    assert row.goodput_miss == "goodput -10.0 %"  # (1.08 - 1.20) / 1.20
    assert svr.in_band(row, "goodput") is True
    # replica-s: band 610 .. 630 (means 630, 620, 610); the real 700 lies outside
    assert svr.in_band(row, "replica_s") is False
    assert "Of the goodput misses, 1 lie within" in svr.summary_line([row]) and ": keda." in svr.summary_line([row])
    assert "| keda | 1.04 / 1.20 / 1.30 | 1.08 | yes | 630 / 620 / 610 | 700 | no | 2/2 / 2/2 |" in svr.band_table([row])
    # without the band's runs there is nothing to say
    assert svr.in_band(svr.Row("hpa", 30.0), "goodput") is None


def test_a_trajectory_miss_met_within_the_engine_speed_band_is_said_so() -> None:
    row = svr.Row("hpa", 30.0)
    # replica-s: the simulator 600 per seed, the real 700: +16.7 %, past the 10 % target; 1 % faster the simulator
    # holds 650: (700 - 650) / 650 = +7.7 %, met; 1 % slower 590: +18.6 %; in the real phases at the nominal ITL
    # 610: +14.8 %
    row.sim = [_run(1, 1.0, 600.0), _run(2, 1.0, 600.0)]
    row.faster = [_run(1, 1.0, 650.0), _run(2, 1.0, 650.0)]
    row.slower = [_run(1, 1.0, 590.0), _run(2, 1.0, 590.0)]
    row.at_phases = [_run(1, 1.0, 610.0), _run(2, 1.0, 610.0)]
    row.real = [_run(1, 1.0, 700.0), _run(2, 1.0, 700.0)]
    svr.judge(row)
    assert row.misses and row.goodput_miss is None
    line = svr.summary_line([row])
    assert "Of the trajectory misses, 1 meet every trajectory target with the simulator's engines 1 % slower or " \
           "faster: hpa." in line
    assert "In the real phases at the nominal ITL: 0 of 1." in line
    assert "goodput misses" not in line  # none missed it: nothing to say of them
    row.faster = [_run(1, 1.0, 600.0), _run(2, 1.0, 600.0)]
    assert "Of the trajectory misses, 0 meet" in svr.summary_line([row])


def test_a_staircase_scan_counts_the_autoscaler_seeds_whose_outcome_moves_with_engine_speed(tmp_path: Path) -> None:
    sc_path = ROOT / "workloads" / "scenarios" / "sim-vs-real.yaml"
    engine = svr.engine_of(ROOT / "benchmarks" / "data" / "sim_vs_real.json")
    assert 20.0 < engine.itl["mean"] < 22.0 and 200.0 < (engine.ttft_floor_ms or 0) < 215.0  # measured, as stored
    result = svr.scan(sc_path, ["static", "hpa"], [1], [(1.0, 1.5, 5.0, 1.0)], engine, tmp_path, factors=(1.0, 1.02))
    (x,) = result
    assert x["staircase"] == [1.0, 1.5, 5.0, 1.0] and x["of"] == 2  # two autoscaler-seeds
    assert x["outcomes"]["static/1"] == [(1, 0), (1, 0)]  # one replica, never a move, at either speed
    for i, f in enumerate((1.0, 1.02)):  # each outcome is the run's own maximum and number of moves
        run = tmp_path / "scan" / "1-1.5-5-1" / f"x{f:g}" / "sim-vs-real" / "hpa" / "seed-1"
        scen = json.loads((run / "scenario.json").read_text())
        assert [s["rate_rps"] for s in scen["workload"][0]["arrivals"]["steps"]] == [1.0, 1.5, 5.0, 1.0]
        assert scen["cluster"]["variants"][0]["engine"]["latency"]["itl_ms"] == pytest.approx(
            round(engine.itl["mean"] * f, 3))
        r = svr.load_run(run)
        assert r is not None and x["outcomes"]["hpa/1"][i] == (r.max_ready, len(r.steps))
    assert x["changed"] == (["hpa seed 1"] if len(set(x["outcomes"]["hpa/1"])) > 1 else [])
    assert "| 1 → 1.5 → 5 → 1 | " in svr.scan_table(result, (1.0, 1.02))


def test_a_scan_candidate_of_the_wrong_shape_is_bad_input(monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    for bad in ("1,2,3", "1,2,x,4", "1,0,3,4", "1,2,3,4;5"):
        monkeypatch.setattr(sys, "argv", ["sim_vs_real.py", "--scan", bad])
        assert svr.main() == 2
        err = capsys.readouterr().err
        assert err.startswith("error: --scan") and "expected 4 comma-separated rates above 0" in err
    assert svr.parse_staircases("1,1.5,5,1; 1,3,6,1.5", 4) == [(1.0, 1.5, 5.0, 1.0), (1.0, 3.0, 6.0, 1.5)]
    assert svr.parse_factors("0.97,1,1.03") == (0.97, 1.0, 1.03)
    for bad in ("1", "1,x", "1,3"):
        with pytest.raises(ValueError, match="expected two or more comma-separated factors"):
            svr.parse_factors(bad)


def test_the_first_scale_ups_pods_count_the_held_requests_they_took(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pods = [{"pod": "p0", "created_s": 0.0, "ready_s": 0.0},  # the initial replica: not a scale-up
            {"pod": "a", "created_s": 100.0, "ready_s": 120.0},
            {"pod": "b", "created_s": 100.2, "ready_s": 120.5},  # within a second of a: the same scale-up
            {"pod": "c", "created_s": 120.0, "ready_s": 140.0},  # the next scale-up
            {"pod": "d", "created_s": 150.0, "ready_s": None}]  # never ready
    (tmp_path / "pods.jsonl").write_text("".join(json.dumps(p) + "\n" for p in pods))
    # held when their pod turned ready: a's 110 and 119.9, b's 120.2 (b ready at 120.5); not a's 125 (after),
    # c's 130 (a later scale-up) nor p0's; a request that never reached a pod has none: 3
    rows = {"pod": ["p0", "a", "a", "a", "b", "c", None], "arrival_s": [50.0, 110.0, 119.9, 125.0, 120.2, 130.0, 90.0]}
    pq.write_table(pa.table(rows), tmp_path / "requests.parquet")
    assert svr.first_take_of(tmp_path) == 3
    (tmp_path / "pods.jsonl").write_text(json.dumps(pods[0]) + "\n")
    assert svr.first_take_of(tmp_path) is None  # no pod was added


def _at(seed: int, max_ready: int, replica_s: float, take: int | None = None) -> Any:
    run = _run(seed, 1.0, replica_s)
    run.max_ready, run.first_take = max_ready, take
    return run


def test_a_repeated_real_run_is_judged_against_the_first_by_the_same_targets(tmp_path: Path) -> None:
    row = svr.Row("llmd-queue-guard", 30.0)
    for sim, real in zip([_at(1, 6, 600.0, 14), _at(2, 6, 600.0, 100), _at(3, 6, 600.0, 89)],
                         [_at(1, 6, 580.0, 91), _at(2, 5, 520.0, 18), _at(3, 6, 630.0, 89)], strict=True):
        svr.add_pair(row, sim, real)
    svr.judge(row)
    assert row.misses == ["seed 2: max 6 vs 5"]
    # repeated seeds 2 and 3 only (seed 1's repeat incomplete): maxima 6 and 5 against the real 5 and 6
    rep = [_at(2, 6, 580.0, 96), _at(3, 5, 520.0, 20), _at(1, 6, 655.0)]
    rep[2].complete = False
    svr.add_repeat([row], {("llmd-queue-guard", r.seed): r for r in rep})
    svr.add_repeat([row], {("hpa", 2): _at(2, 5, 520.0)})  # another autoscaler's: nothing for this row
    assert [[r.seed for r in runs] for runs in row.repeats] == [[2, 3]]
    # replica-s: repeat (580 + 520) / 2 = 550 against the real 575 of the same seeds: (575 - 550) / 550 = +4.5 %
    line = svr.repeat_table([row]).splitlines()[-1]
    assert line == ("| llmd-queue-guard | 1 | 2 | 6/5 / 5/6 / 6/6 | 550 / 575 (+4.5 %) | 1.00 / 1.00 (+0.0 %) | "
                    "96/20 / 18/89 / 100/89 | missed: seed 2: max 6 vs 5; seed 3: max 5 vs 6 | "
                    "missed: seed 2: max 6 vs 5 | n/a |")  # no simulator run in the repeat's conditions yet
    # the simulator in the repeat's own conditions: maxima 6 and 5, the repeat's (replica-s 560 / 530 against
    # 580 / 520: mean 545 against 550, +0.9 %): met against the repeat, though not against the first real runs
    row.repeat_sims = [[_at(2, 6, 560.0), _at(3, 5, 530.0)]]
    assert svr.repeat_table([row]).splitlines()[-1].endswith("| missed: seed 2: max 6 vs 5 | met |")
    # maxima: the repeat 6/5 against the real 5/6 (2 of 2 seeds differ); the simulator 6/6/6 against the real
    # 6/5/6 (1 of 3) and 6/5 in the repeat's conditions against the repeat's 6/5 (0 of 2): 1 of 5
    assert ("Run again on kwok (1 repetition of llmd-queue-guard), the real stack met every trajectory target "
            "against its own first runs in 0 of 1 (another maximum in 2 of 2 seeds); the simulator, in each "
            "repetition's measured conditions, met them against that repetition in 1 of 1 (another maximum than "
            "the real run's, the first runs included, in 1 of 5 seeds).") in svr.summary_line([row])
    # the raw figures keep the repeats, and --real-from reads them back
    path = tmp_path / "raw.json"
    path.write_text(json.dumps({"rows": [svr.asdict(row)]}))
    back = svr.stored_repeats(path)["llmd-queue-guard"]
    assert [[r.seed for r in runs] for runs in back] == [[2, 3]] and back[0][1].first_take == 20


def test_a_missing_repeat_folder_is_bad_input(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "argv", ["sim_vs_real.py", "--compare-only", "--repeat", str(tmp_path / "none")])
    assert svr.main() == 2
    assert capsys.readouterr().err.startswith(f"error: --repeat {tmp_path / 'none'}: no such folder")
