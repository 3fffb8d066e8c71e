"""The oracle frontier's runs (harness/sizing/frontier.py, harness/sizing/frontier_cache.py): the oracle's plan at each
headroom worked out by hand, which runs a suite adds, what is reused and cached, frontier.json, and the
frontier's points as the report averages them (reports/suite_decide.py)."""
from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from scalearena.controllers.base import ArrivalForecast
from scalearena.controllers.oracle import Oracle, OracleConfig
from scalearena.harness.config.frontier_spec import FrontierSpec
from scalearena.harness.config.scenario import scenario_from_data
from scalearena.harness.config.suite import RunPlan, plans_for_scenario
from scalearena.harness.run.outcome import RunOutcome
from scalearena.harness.sizing import frontier, frontier_cache
from scalearena.reports.bounds import frontier_points, perfect_reference
from scalearena.reports.catalog import BY_ID
from scalearena.reports.suite_decide import perfect_text
from tests.conftest import SMALL_SCENARIO
from tests.unit.viewkit import variant

ENGINE = {"kv_cache_blocks": 1024, "block_size": 16, "max_num_seqs": 256,
          "latency": {"kind": "constant", "ttft_ms": 100, "itl_ms": 10}}


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(frontier_cache.CACHE_ENV, str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.mark.parametrize(("u", "replicas"), [(4.0, 1), (2.0, 2), (1.25, 3), (1.0, 4), (0.9, 4), (0.75, 5), (0.5, 7)])
def test_the_oracles_plan_at_each_headroom_by_hand(u: float, replicas: int) -> None:
    # constant 2 req/s of 1000 + 1000 tokens: a request holds ceil(2000 / 16) = 125 blocks, floor(0.8 x 1024 / 125)
    # = 6 slots, S = 100 ms + 999 x 10 ms = 10.09 s, one replica serves mu = 6 / 10.09 = 0.5946 req/s.
    # Replicas per 30 s window = ceil(2 / (mu x u)) = ceil(3.3633 / u):
    # u=4: 0.84 -> 1; u=2: 1.68 -> 2; u=1.25: 2.69 -> 3; u=1: 3.36 -> 4; u=0.9: 3.74 -> 4; u=0.75: 4.48 -> 5;
    # u=0.5: 6.73 -> 7
    n = 1200
    fc = ArrivalForecast("m", tuple(k / 2.0 for k in range(n)), (1000,) * n, (1000,) * n)
    plan = Oracle(OracleConfig(utilization=u)).capacity_plan([variant(engine=ENGINE, max_replicas=30)], [fc], 600.0)
    assert plan is not None and plan["replicas"]["v"] == [replicas] * 20  # 600 s / 30 s windows, all alike


def test_utilization_beyond_four_is_refused() -> None:
    with pytest.raises(ValidationError):
        OracleConfig(utilization=4.5)


def test_spec_shorthand_defaults_and_bad_values() -> None:
    assert FrontierSpec.model_validate(True) == FrontierSpec(enabled=True)
    spec = FrontierSpec(enabled=True)
    assert spec.utilization == [2.0, 1.25, 1.0, 0.9, 0.75, 0.5] and spec.floor
    with pytest.raises(ValidationError, match="utilization.0"):
        FrontierSpec(utilization=[0])
    with pytest.raises(ValidationError):
        FrontierSpec(enabled=True, lookahead=3)  # type: ignore[call-arg]


def _plans(seeds: list[int] | None = None, autoscalers: list[str] | None = None) -> list[RunPlan]:
    sc = scenario_from_data(copy.deepcopy(SMALL_SCENARIO), "small.yaml")
    return plans_for_scenario(sc, autoscalers or ["static", "oracle"], ("rate", "workload.arrivals.rate_rps", 2),
                              seeds)


def test_a_suite_point_gets_the_floor_and_each_setting_once_per_seed() -> None:
    spec = FrontierSpec(enabled=True, utilization=[0.5, 1.0, 0.5])  # duplicates run once, highest u first
    runs = frontier.frontier_runs(_plans([1, 2]), spec)
    assert [(r.point, r.seed, r.setting) for r in runs] == [
        ("rate-2", 1, "floor"), ("rate-2", 1, "u=1"), ("rate-2", 1, "u=0.5"),
        ("rate-2", 2, "floor"), ("rate-2", 2, "u=1"), ("rate-2", 2, "u=0.5")]
    floor, u1, u05 = runs[:3]
    # the floor is static at 0, which the control plane clamps up to each variant's min_replicas
    assert (floor.plan.autoscaler.kind, floor.plan.autoscaler.replicas) == ("static", 0)
    assert (u05.plan.autoscaler.kind, u05.plan.autoscaler.utilization) == ("oracle", 0.5)
    assert [a.label for a in u05.plan.scenario.autoscalers] == ["frontier-u0.5"]  # the scenario holds the plan only
    # u=1 is the oracle the suite runs anyway (default settings but for the name): its run is the point
    assert (u1.reuse, floor.reuse, u05.reuse) == ("small/oracle/rate-2/seed-1", None, None)
    assert u05.plan.rel_dir == "small/rate-2/seed-1/u0.5"
    assert len({r.key for r in runs}) == 6  # every setting and seed its own cache entry
    assert [r.key for r in frontier.frontier_runs(_plans([1, 2]), spec)] == [r.key for r in runs]  # stable


def test_without_the_oracle_in_the_suite_every_setting_runs() -> None:
    runs = frontier.frontier_runs(_plans(autoscalers=["static"]), FrontierSpec(enabled=True, utilization=[1.0]))
    assert [(r.setting, r.reuse) for r in runs] == [("floor", None), ("u=1", None)]
    assert runs[0].seed == 7 and runs[0].point == "rate-2"  # the scenario's own seed


def test_the_key_follows_the_code_the_scenario_and_the_files_it_reads(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    sc, cfg = {"name": "s", "seed": 1}, {"kind": "oracle", "utilization": 1.0}
    key = frontier_cache.run_key(sc, cfg, "sim")
    assert key == frontier_cache.run_key(dict(sc), dict(cfg), "sim")
    assert key != frontier_cache.run_key({**sc, "seed": 2}, cfg, "sim")
    assert key != frontier_cache.run_key(sc, {**cfg, "utilization": 0.5}, "sim")
    trace = tmp_path / "trace.csv"
    trace.write_text("a\n")
    with_file = frontier_cache.run_key({**sc, "workload": [{"arrivals": {"path": str(trace)}}]}, cfg, "sim")
    trace.write_text("b\n")  # the same path with other bytes: another key
    assert with_file != frontier_cache.run_key({**sc, "workload": [{"arrivals": {"path": str(trace)}}]}, cfg, "sim")
    monkeypatch.setattr(frontier_cache, "code_digest", lambda: "edited")
    assert key != frontier_cache.run_key(sc, cfg, "sim")  # any edit of the simulator's code: a miss


def test_cache_round_trip_and_damaged_entries_are_misses(_cache: Path) -> None:
    assert frontier_cache.load("k1") is None
    frontier_cache.store("k1", {"gpu_hours": 1.5}, "test")
    assert frontier_cache.load("k1") == {"gpu_hours": 1.5}
    (_cache / "frontier" / "k2.json").write_text("{not json")
    (_cache / "frontier" / "k3.json").write_text(json.dumps({"key": "other", "summary": {}}))
    assert frontier_cache.load("k2") is None and frontier_cache.load("k3") is None


def _summary(gpu: float, att: float, complete: bool = True) -> dict[str, Any]:
    return {"complete": complete, "gpu_hours": gpu, "cost": gpu, "cost_usd": 2 * gpu,
            "slo_attainment": {"both": att}, "goodput_rps": 1.0, "requests_total": 100, "extra": "dropped"}


def test_run_reuses_the_suite_then_the_cache_then_runs_the_rest() -> None:
    spec = FrontierSpec(enabled=True, utilization=[1.0, 0.5])
    runs = frontier.frontier_runs(_plans(), spec)  # floor, u=1 (the suite's oracle), u=0.5
    suite = {"small/oracle/rate-2": RunOutcome("small/oracle/rate-2", "ok", summary=_summary(1.0, 0.9))}
    frontier_cache.store(runs[0].key, _summary(0.2, 0.1), "floor")  # the floor is cached from an earlier suite
    calls: list[tuple[list[str], Path]] = []

    def execute(plans: list[RunPlan], scratch: Path, landed: Any) -> None:
        calls.append(([p.rel_dir for p in plans], scratch))
        assert scratch.is_dir()
        for p in plans:
            landed(RunOutcome(p.rel_dir, "ok", summary=_summary(2.0, 0.97)))

    rows = frontier.run(runs, execute, suite)
    assert [c[0] for c in calls] == [["small/rate-2/seed-7/u0.5"]]  # only the missing point ran
    assert not calls[0][1].exists()  # its scratch folder is gone
    assert [(r["setting"], r["_source"]) for r in rows] == [
        ("floor", "cache"), ("u=1", "suite:small/oracle/rate-2"), ("u=0.5", "run")]
    assert rows[2]["summary"]["gpu_hours"] == 2.0 and "extra" not in rows[2]["summary"]
    assert frontier_cache.load(runs[2].key) is not None  # the new run is cached now
    again = frontier.run(runs, lambda *a: pytest.fail("nothing left to run"), suite)
    assert [r["_source"] for r in again] == ["cache", "suite:small/oracle/rate-2", "cache"]
    doc = frontier.document(spec, again)
    assert doc["settings"] == ["floor", "u=1", "u=0.5"] and all("_source" not in r for r in doc["points"])
    assert doc == frontier.document(spec, rows)  # the file does not depend on where a point came from


def test_a_failed_or_incomplete_run_is_recorded_and_not_cached() -> None:
    runs = frontier.frontier_runs(_plans(autoscalers=["static"]), FrontierSpec(enabled=True, utilization=[1.0]))

    def execute(plans: list[RunPlan], scratch: Path, landed: Any) -> None:
        landed(RunOutcome(plans[0].rel_dir, "failed", error="RuntimeError: boom"))
        landed(RunOutcome(plans[1].rel_dir, "ok", summary=_summary(1.0, 0.5, complete=False)))

    rows = frontier.run(runs, execute)
    assert rows[0]["error"] == "RuntimeError: boom" and rows[0]["summary"] == {}
    assert rows[1]["summary"]["complete"] is False
    assert frontier_cache.load(runs[0].key) is None and frontier_cache.load(runs[1].key) is None


def test_the_report_averages_each_setting_over_its_seeds() -> None:
    rows = [{"scenario": "s", "point": "rate-2", "seed": 1, "setting": "u=1", "summary": _summary(1.0, 0.8)},
            {"scenario": "s", "point": "rate-2", "seed": 2, "setting": "u=1", "summary": _summary(2.0, 0.9)},
            {"scenario": "s", "point": "rate-2", "seed": 1, "setting": "floor", "summary": _summary(0.2, 0.1)},
            {"scenario": "s", "point": "rate-3", "seed": 1, "setting": "u=1", "summary": _summary(9.0, 0.5)},
            {"scenario": "t", "point": "rate-2", "seed": 1, "setting": "u=1", "summary": _summary(9.0, 0.5)}]
    pts = frontier_points(rows, BY_ID["cost_usd"], "s", "rate-2")
    # u=1: GPU-hours (1 + 2) / 2 = 1.5, USD 2 x 1.5 = 3.0, attainment (0.8 + 0.9) / 2 = 0.85 over 2 seeds
    assert [(p.name, p.gpu_hours, p.cost, p.attainment, p.n, p.floor) for p in pts] == [
        ("floor", 0.2, 0.4, 0.1, 1, True), ("oracle u=1", 1.5, 3.0, pytest.approx(0.85), 2, False)]
    assert all(p.bound and p.frontier and p.complete for p in pts)
    assert len(frontier_points(rows, BY_ID["gpu_hours"])) == 2  # a tuning study's rows: one scenario, all rows


def test_the_perfect_system_is_averaged_over_seeds_and_worded() -> None:
    rows = [{"scenario": "s", "point": "", "seed": 1, "summary": {"gpu_hours": 1.0, "cost_usd": 7.0, "peak_gpus": 4,
                                                                   "windows": 20, "windows_over_max": 0}},
            {"scenario": "s", "point": "", "seed": 2, "summary": {"gpu_hours": 2.0, "cost_usd": 14.0, "peak_gpus": 6,
                                                                   "windows": 20, "windows_over_max": 3}}]
    p = perfect_reference(rows, BY_ID["cost_usd"], "s", "")
    # means: (1 + 2) / 2 = 1.5 GPU-h, 10.5 USD, peak (4 + 6) / 2 = 5, windows over max (0 + 3) / 2 = 1.5
    assert p is not None and (p.gpu_hours, p.cost, p.peak_gpus, p.windows_over_max, p.n) == (1.5, 10.5, 5, 1.5, 2)
    text = perfect_text(p, BY_ID["cost_usd"])
    assert text == "; perfect system (#1499): 10.50 USD (1.500 GPU-h), peak 5 GPUs, max_replicas too few in 1.5 of 20 windows"
    assert perfect_reference(rows, BY_ID["cost_usd"], "other", "") is None and perfect_text(None, BY_ID["cost"]) == ""
