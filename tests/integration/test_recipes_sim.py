"""llm-d recipes run in the simulator as a scenario names them (``--autoscaler llmd-slo``): their PromQL and
recording rules read the simulator's native series, and they scale a pool through a load step.

The scenario is llm-d's stack as the recipes' guides deploy it: EPP flow control on (the queue and saturation
signals come from it), one variant at 1..6 replicas, 1 rps then 8 rps of short requests.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from scalearena.harness.config.scenario import scenario_from_data
from scalearena.harness.objects.recipes import SIM_SERIES
from scalearena.harness.sim.backend import SimBackend
from scalearena.harness.sim.loop import Simulation
from scalearena.reports.results import RunWriter
from scalearena.workloads.generate import build_requests

SCENARIO: dict[str, Any] = {
    "name": "recipes", "duration_s": 420, "drain_s": 60, "seed": 4,
    "cluster": {"variants": [{
        "name": "va", "model": "m", "gpu": "H100-SXM", "min_replicas": 1, "max_replicas": 6, "startup_s": 30,
        "engine": {"max_num_seqs": 4, "kv_cache_blocks": 2048, "block_size": 16,
                   "latency": {"kind": "constant", "ttft_ms": 300, "itl_ms": 40}}}]},
    "router": {"admission": {"kind": "flow_control", "queue_threshold": 2, "kv_threshold": 0.8,
                             "queue_limit": 5000}},
    "workload": {"arrivals": {"kind": "stepped", "steps": [{"duration_s": 120, "rate_rps": 1},
                                                             {"duration_s": 300, "rate_rps": 8}]},
                 "input_tokens": {"kind": "fixed", "value": 500}, "output_tokens": {"kind": "fixed", "value": 50}},
    "slo": {"ttft_ms": 1000, "itl_ms": 60},
    "metrics": {"scrape_interval_s": 5, "sample_interval_s": 5},
}


def run(name: str, out: Path, admission: str = "flow_control",
        slo: dict[str, float] | None = None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    data = {**SCENARIO, "router": {"admission": {**SCENARIO["router"]["admission"], "kind": admission}},
            "slo": slo or SCENARIO["slo"]}
    sc = scenario_from_data(data, "<test>")
    w = RunWriter(out, {"scenario": sc.name, "autoscaler": name, "duration_s": sc.duration_s,
                        "slo": sc.slo.model_dump(mode="json")})
    cfg = sc.autoscaler(name)
    for setting, how in getattr(cfg, "derived", {}).items():  # as harness/run/runner.py does
        w.add_event(0.0, "derived_setting", setting=setting, value=how)
    SimBackend().run(sc, cfg, w, None)
    summary = w.finish()
    return summary, [json.loads(x) for x in (out / "decisions.jsonl").read_text().splitlines()]


# the token-aware guide's backlog is the prompts dispatched to the engines (the EPP's in-flight tokens), so it
# runs with every request dispatched (no flow control holding them at the gateway). The SLO-aware recipe reads
# latency over the SLO: this constant-ITL engine's NTPOT is 40 ms at any load, its P90 in the EPP's bucket
# (0.02, 0.05] is 0.02 + 0.9 x 0.03 = 0.047 s; over the scenario's 60 ms that is 0.78 > theta_up 0.55 before any
# load (the recipe would climb at 1 rps), over 100 ms it is 0.47, inside the 0.40..0.55 hold band, so only the
# TTFT of requests held at the gateway after the step moves it
@pytest.mark.parametrize(("name", "admission", "slo"), [
    ("llmd-queue", "flow_control", None), ("llmd-queue-guard", "flow_control", None), ("llmd-token", "none", None),
    ("llmd-slo", "flow_control", {"ttft_ms": 1000, "itl_ms": 100})])
def test_each_recipe_scales_out_after_the_step(name: str, admission: str, slo: dict | None, tmp_path: Path) -> None:
    summary, decisions = run(name, tmp_path, admission, slo)
    # 1 rps of 0.3 + 49 x 0.04 = 2.26 s requests keeps ~2.3 in flight on one 4-slot replica; 8 rps needs ~18
    before = max(d["desired_replicas"] for d in decisions if d["t_s"] < 120)
    after = max(d["desired_replicas"] for d in decisions if d["t_s"] >= 120)
    assert before <= 2 < after, (before, after)
    assert summary["requests_ok"] + sum(summary["failures"].values()) == summary["requests_total"]
    # every decision names its object and carries the numbers its triggers read
    trig = [r for d in decisions for r in d["reasons"] if r["rule"] in ("trigger", "trigger_error")]
    assert trig and all(r["values"]["triggers"] for r in trig)
    assert decisions[0]["reasons"][0]["message"].startswith("decided by ")


def test_the_saturation_recipe_is_capped_by_its_pool_level_max(tmp_path: Path) -> None:
    """max(pool saturation) is one pool-wide ratio, not a sum over replicas: under flow control it sits at the
    detector's boundary 1.0, so the AverageValue trigger asks ceil(1 / 0.7) = 2 at most, and the 300 s scale-up
    window takes the lowest proposal of the last 5 minutes (the readings drop to 0.5 between refreshes). With
    4-slot engines the running-requests trigger (16 per replica) never binds: the recipe holds one replica."""
    _, decisions = run("llmd-saturation", tmp_path)
    readings = [r["values"]["triggers"]["pool-saturation"]["value"] for d in decisions for r in d["reasons"]
                if r["rule"] == "trigger" and d["t_s"] >= 150]
    proposals = [r["values"]["proposal"] for d in decisions for r in d["reasons"]
                 if r["rule"] == "metric" and r["values"]["metric"] == "external:pool-saturation" and d["t_s"] >= 150]
    assert max(readings) == 1.0 and max(proposals) == 2
    assert max(d["desired_replicas"] for d in decisions) == 1


def test_the_token_recipes_report_their_computed_peak_prefill(tmp_path: Path) -> None:
    summary, _ = run("llmd-token", tmp_path, "none")
    (event,) = [e for e in summary["events"] if e["kind"] == "derived_setting"]
    # constant model: 4 slots x 500 tokens / TTFT 0.3 s = 6,667 tokens/s
    assert event["setting"] == "PEAK_PREFILL_TPS[va]" and event["value"].startswith("6667 tokens/s: computed from")


def test_the_simulator_writes_every_series_it_declares(tmp_path: Path) -> None:
    """SIM_SERIES (what check_series lets a recipe read on --cluster sim) is what a run writes."""
    sc = scenario_from_data(SCENARIO, "<test>")
    cfg = sc.autoscaler("llmd-slo")
    sim = Simulation(sc, cfg, RunWriter(tmp_path, {}), build_requests(sc))
    sim.run()
    sim.metrics.flush_native()
    written = {s.label_map["__name__"] for s in sim.metrics.tsdb.series()}
    families = {n.removesuffix("_bucket").removesuffix("_sum").removesuffix("_count") for n in written}
    assert SIM_SERIES <= families | written, sorted(SIM_SERIES - families - written)
