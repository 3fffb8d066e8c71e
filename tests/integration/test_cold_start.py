"""Cold starts as phases in the simulator: scheduling, node provisioning, image pull (cached per node),
weight load, warm-up, sleep mode and warm buffer pods; every expected time worked by hand."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from scalearena.controllers.base import Decision, Reason
from scalearena.harness.config.scenario import scenario_from_data
from scalearena.harness.sim.loop import Simulation
from scalearena.reports.results import RunWriter

# 10 GB at 100 MB/s = 100 s pull; 20 GB at 1 GB/s = 20 s load; warm-up 30 s; scheduling 2 s
PHASES = {"scheduling_s": 2, "image_pull": {"size_gb": 10, "pull_mb_s": 100},
          "weight_load": {"model_gb": 20, "storage_gb_s": 1}, "warmup_s": 30}


def scenario(variant: dict[str, Any] | None = None, pools: list[dict[str, Any]] | None = None,
             duration_s: float = 600) -> Any:
    v = {"name": "va", "model": "m", "gpu": "H100-SXM", "min_replicas": 0, "max_replicas": 4,
         "startup_s": 20, "termination_grace_s": 30,
         "engine": {"kv_cache_blocks": 1024, "latency": {"kind": "constant", "ttft_ms": 100, "itl_ms": 10}},
         **(variant or {})}
    if "cold_start" in v:
        del v["startup_s"]  # derived from the phases
    return scenario_from_data({
        "name": "t", "duration_s": duration_s, "seed": 3,
        "cluster": {"variants": [v], "node_pools": pools or []},
        "router": {"admission": {"kind": "none"}},
        "workload": {"arrivals": {"kind": "constant", "rate_rps": 1},
                     "input_tokens": {"kind": "fixed", "value": 10}, "output_tokens": {"kind": "fixed", "value": 5}},
        "autoscalers": [{"kind": "static"}],
        "metrics": {"scrape_interval_s": 5, "sample_interval_s": 5},
    }, "<test>")


class Schedule:
    """A policy that sets the replicas a schedule names at each decision time (period 5 s)."""

    fast_period_s = None
    period_s = 5.0

    def __init__(self, wants: dict[float, int]) -> None:
        self.wants = wants

    def decide(self, now: float, view: Any) -> list[Decision]:
        v = view.variants[0]
        want = self.wants.get(now, v.spec_replicas)
        return [Decision(v.name, v.spec_replicas, want, (Reason("schedule", f"want {want}"),))]

    def decide_fast(self, now: float, view: Any) -> list[Decision]:
        return []


def run(tmp_path: Path, sc: Any, wants: dict[float, int]) -> tuple[dict[str, Any], dict[str, Any], Any]:
    w = RunWriter(tmp_path, {})
    Simulation(sc, sc.autoscalers[0], w, [], policy=Schedule(wants)).run()
    summary = w.finish()
    pods = {r["pod"]: r for r in map(json.loads, (tmp_path / "pods.jsonl").read_text().splitlines())}
    return summary, pods, w


def timeseries(run_dir: Path) -> dict[float, Any]:
    """timeseries.parquet rows by sample time (the writer streams them to disk)."""
    import pandas as pd

    return {float(r.t_s): r for r in pd.read_parquet(run_dir / "timeseries.parquet").itertuples()}


def phases(rec: dict[str, Any]) -> list[tuple[str, float, float]]:
    return [(p["phase"], p["start_s"], p["end_s"]) for p in rec["phases"]]


def test_a_pod_waits_for_a_new_node_then_pulls_loads_and_warms_up(tmp_path: Path) -> None:
    # va-0 is Ready at 0 on the one initial node (1 GPU per node). va-1, asked for at t=0, may be bound
    # from 2 (scheduling); the cluster autoscaler's next scan at 10 finds it unschedulable and asks for
    # a node (provisioning 300 s: Ready at 310); then pull 310-410, load 410-430, warm-up 430-460.
    sc = scenario({"initial_replicas": 1, "cold_start": PHASES},
                  [{"name": "n", "gpu": "H100-SXM", "gpus_per_node": 1, "max_nodes": 3, "provisioning_s": 300}])
    summary, pods, _ = run(tmp_path, sc, {0.0: 2})
    assert phases(pods["va-1"]) == [("scheduling", 0, 2), ("unschedulable", 2, 10), ("node_provisioning", 10, 310),
                                    ("image_pull", 310, 410), ("weight_load", 410, 430), ("warmup", 430, 460)]
    assert [p["stage"] for p in pods["va-1"]["phases"]] == ["Pending"] * 3 + ["ContainerCreating", "Running",
                                                                                "Running"]
    assert pods["va-1"]["ready_s"] == 460 and pods["va-1"]["node"] == "n-1"
    assert pods["va-0"]["start"] == "initial" and pods["va-0"]["phases"] == []
    # the scale-up decision at 0 is matched by the sample at 460 (ready 2)
    assert summary["scaling"]["decision_to_ready_lag_s"]["p50"] == 460
    # nodes billed: n-0 0-600, n-1 from its request at 10 to 600
    assert summary["node_pools"]["n"]["node_hours"] == pytest.approx((600 + 590) / 3600)
    assert summary["node_pools"]["n"]["nodes_max"] == 2


def test_a_node_keeps_its_image_for_the_next_pod(tmp_path: Path) -> None:
    # one 2-GPU node holding the warm va-0 (so it has the image): va-1 is bound at 2 and skips the pull:
    # load 2-22, warm-up 22-52
    sc = scenario({"initial_replicas": 1, "cold_start": PHASES},
                  [{"name": "n", "gpu": "H100-SXM", "gpus_per_node": 2, "max_nodes": 1}])
    _, pods, _ = run(tmp_path, sc, {0.0: 2})
    assert phases(pods["va-1"]) == [("scheduling", 0, 2), ("weight_load", 2, 22), ("warmup", 22, 52)]


def test_an_empty_node_goes_after_the_unneeded_time(tmp_path: Path) -> None:
    # two nodes, two replicas; at t=0 the policy asks for 1: va-1 (no requests) is deleted at 0, its node
    # n-1 is empty at the scan at 0 and removed at the scan at 600 (--scale-down-unneeded-time 10 min)
    sc = scenario({"initial_replicas": 2, "cold_start": PHASES},
                  [{"name": "n", "gpu": "H100-SXM", "gpus_per_node": 1, "max_nodes": 2}], duration_s=700)
    summary, pods, _ = run(tmp_path, sc, {0.0: 1})
    assert pods["va-1"]["end"] == "deleted" and pods["va-1"]["ended_s"] == 0
    assert {"t_s": 600.0, "kind": "node_removed", "pool": "n", "node": "n-1"} in summary["events"]
    assert summary["node_pools"]["n"]["node_hours"] == pytest.approx((700 + 600) / 3600)


def test_sleep_mode_keeps_the_gpu_and_wakes_in_seconds(tmp_path: Path) -> None:
    # 2 replicas; down to 1 at 5 (va-1 drained at once: it sleeps), up to 2 at 10: va-1 wakes in 3 s
    # (ready at 13) instead of a 20 s cold start. Asleep it is no replica but holds its GPU (standby).
    sc = scenario({"initial_replicas": 2, "sleep_mode": {"wake_s": 3}})
    summary, pods, w = run(tmp_path, sc, {5.0: 1, 10.0: 2})
    assert phases(pods["va-1"]) == [("asleep", 5, 10), ("wake", 10, 13)]
    rows = timeseries(tmp_path)
    assert (rows[5.0].ready_replicas, rows[5.0].standby_replicas) == (1, 1)
    assert (rows[10.0].ready_replicas, rows[10.0].pending_replicas, rows[10.0].standby_replicas) == (1, 1, 0)
    assert rows[15.0].ready_replicas == 2
    assert "va-2" not in pods  # no new pod
    assert summary["scaling"]["decision_to_ready_lag_s"]["p50"] == 5  # decision at 10, seen ready at 15
    # billed: 2 pods all the time (the slept one too): 2 x 600 s
    assert summary["replica_hours"] == pytest.approx(2 * 600 / 3600)


def test_sleep_mode_keeps_at_most_max_sleeping(tmp_path: Path) -> None:
    # 3 -> 1 at 5 with max_sleeping 1: va-2 (newest) sleeps, va-1 is deleted; back to 3 at 10: va-2 wakes
    # (ready 13), a new pod va-3 cold-starts (startup_s 20: ready 30)
    sc = scenario({"initial_replicas": 3, "sleep_mode": {"wake_s": 3, "max_sleeping": 1}})
    _, pods, _ = run(tmp_path, sc, {5.0: 1, 10.0: 3})
    assert pods["va-1"]["end"] == "deleted" and pods["va-1"]["ended_s"] == 5
    assert phases(pods["va-2"]) == [("asleep", 5, 10), ("wake", 10, 13)]
    assert phases(pods["va-3"]) == [("startup", 10, 30)]


def test_sleep_level_1_wake_from_the_weights(tmp_path: Path) -> None:
    # no wake_s: level 1 wakes in 0.17 s + weights per GPU / 12.7 GB/s; 20 GB on 1 GPU -> 0.17 + 1.5748 s
    sc = scenario({"initial_replicas": 2, "sleep_mode": {"level": 1}, "cold_start": PHASES})
    _, pods, _ = run(tmp_path, sc, {5.0: 1, 10.0: 2})
    wake = [p for p in pods["va-1"]["phases"] if p["phase"] == "wake"][0]
    assert wake["end_s"] - wake["start_s"] == pytest.approx(0.17 + 20 / 12.7, abs=1e-5)


def test_a_warm_buffer_pod_serves_at_once_and_a_new_one_starts_behind_it(tmp_path: Path) -> None:
    # warm_buffer 1: va-0 serves, va-1 waits Ready out of the router. Up to 2 at 10: va-1 is put into
    # service at once (ready 2 at the sample at 10), va-2 starts as the new buffer pod (Ready at 30)
    sc = scenario({"initial_replicas": 1, "warm_buffer": 1})
    summary, pods, w = run(tmp_path, sc, {10.0: 2})
    assert pods["va-1"]["start"] == "initial" and phases(pods["va-1"]) == [("promote", 10, 10)]
    assert pods["va-2"]["start"] == "buffer" and phases(pods["va-2"]) == [("startup", 10, 30)]
    rows = timeseries(tmp_path)
    assert (rows[5.0].ready_replicas, rows[5.0].standby_replicas) == (1, 1)
    assert (rows[10.0].ready_replicas, rows[10.0].pending_replicas, rows[10.0].standby_replicas) == (2, 0, 1)
    assert summary["scaling"]["decision_to_ready_lag_s"]["p50"] == 0
    # billed (GPUs held): va-0 + buffer va-1 until 10, then va-0, va-1 and the starting buffer pod va-2.
    # The sample at t stands for the 5 s before it (reports/usage.py): 2 pods x 5 s + 3 pods x 595 s
    assert summary["replica_hours"] == pytest.approx((2 * 5 + 3 * 595) / 3600)


def test_distributions_are_seeded_per_pod(tmp_path: Path) -> None:
    # the same scenario twice gives the same draws; two pods draw different warm-ups
    v = {"initial_replicas": 0, "cold_start": {**PHASES, "warmup_s": {"kind": "lognormal", "median_s": 30,
                                                                      "p95_s": 90}}}
    _, a, _ = run(tmp_path / "a", scenario(v), {0.0: 2})
    _, b, _ = run(tmp_path / "b", scenario(v), {0.0: 2})
    assert a == b
    warm = [[p for p in a[n]["phases"] if p["phase"] == "warmup"][0] for n in ("va-0", "va-1")]
    durations = [p["end_s"] - p["start_s"] for p in warm]
    assert durations[0] != durations[1] and all(d > 0 for d in durations)


def test_a_pod_deleted_while_starting_keeps_only_the_phases_it_went_through(tmp_path: Path) -> None:
    # up to 2 at 0 (va-1: scheduling 0-2, pull 2-102 on no node pool, load 102-122, warm-up 122-152), back to
    # 1 at 110: va-1 is deleted during its weight load (a ReplicaSet deletes a starting pod first)
    sc = scenario({"initial_replicas": 1, "cold_start": PHASES})
    _, pods, _ = run(tmp_path, sc, {0.0: 2, 110.0: 1})
    assert phases(pods["va-1"]) == [("scheduling", 0, 2), ("image_pull", 2, 102), ("weight_load", 102, 110)]
    assert (pods["va-1"]["ready_s"], pods["va-1"]["ended_s"], pods["va-1"]["end"]) == (None, 110, "deleted")
