"""llm-d-autoscaling #1499's perfect system (harness/sizing/perfect_system.py), worked out by hand.

The engine: constant latency (TTFT 100 ms, ITL 10 ms), KV 1024 x 16 = 16,384 tokens, max_num_seqs 256;
the router's default admission (llm-d flow control, a pod saturated at KV 0.8). Requests of 1000 + 1000
tokens hold ctx = 1000 + 1000 / 2 = 1500 tokens on average, so a replica's batch is bounded by
max_num_seqs - 1 = 255, the KV cache floor((16384 - 1000) / 1500) = 10 and the admission
ceil(0.8 x 16384 / 1500) - 1 = ceil(8.74) - 1 = 8; TTFT 0.1 s <= 1 s and ITL 10 ms <= 50 ms at every batch, so b = 8 and one replica serves
8 / (0.1 + 999 x 0.01) = 8 / 10.09 = 0.7929 req/s.
"""
from __future__ import annotations

import copy
from types import SimpleNamespace
from typing import Any

import pytest

from scalearena.harness.config.scenario import scenario_from_data
from scalearena.harness.control.view import scenario_variants
from scalearena.harness.sizing.perfect_system import perfect_system, plan
from tests.integration.test_frontier_sim import SCENARIO


def _scenario(**changes: Any) -> Any:
    data = copy.deepcopy(SCENARIO)
    data.update(changes)
    return scenario_from_data(data, "steady.yaml")


def _requests(rps: float, start: float, end: float, model: str = "m") -> list[SimpleNamespace]:
    n = round((end - start) * rps)
    return [SimpleNamespace(model=model, arrival_s=start + k / rps, input_tokens=1000, output_tokens=1000)
            for k in range(n)]


def test_constant_load_needs_ceil_of_rate_over_replica_capacity() -> None:
    # 2 req/s / 0.7929 = 2.52 -> 3 replicas in each of the 120 s / 30 s = 4 windows; 3 x 120 s = 0.1 GPU-h
    r = perfect_system(_scenario())
    assert r["replicas"] == {"va": [3, 3, 3, 3]}
    assert (r["gpu_hours"], r["peak_gpus"], r["mean_gpus"], r["windows_over_max"]) == (pytest.approx(0.1), 3, 3, 0)
    assert r["cost"] == pytest.approx(0.1)  # variantCost 1.0 per replica-hour
    assert r["cost_usd"] == pytest.approx(0.1 * 6.88)  # the catalog's H100-SXM: 6.88 USD per GPU-hour


def test_a_short_last_window_counts_its_width_only() -> None:
    # 100 s: windows of 30, 30, 30 and 10 s; the last holds 20 arrivals in 10 s, 2 req/s like the rest (not
    # 20 / 30 s), so 3 replicas each: 3 x 100 s / 3600 = 0.08333 GPU-h
    r = perfect_system(_scenario(duration_s=100))
    assert r["windows"] == 4 and r["gpu_hours"] == pytest.approx(300 / 3600)


def test_idle_windows_hold_the_minimum_and_overload_is_counted_at_the_max() -> None:
    variants = list(scenario_variants(_scenario()))
    small = [SimpleNamespace(**{**vars(variants[0]), "max_replicas": 4})]
    # window 0: 2 req/s -> 3; window 1: nothing arrives -> min_replicas 1; window 2: 4 req/s needs
    # ceil(4 / 0.7929) = ceil(5.04) = 6 > max 4 -> 4, and it is counted
    reqs = _requests(2, 0, 30) + _requests(4, 60, 90)
    reps, over = plan(small, reqs, 1000, 50, 90)  # type: ignore[arg-type]
    assert reps == {"va": [3, 1, 4]} and over == 1


def test_the_cheapest_capacity_is_filled_first() -> None:
    v = scenario_variants(_scenario())[0]
    cheap = SimpleNamespace(**{**vars(v), "name": "cheap", "cost": 1.0, "max_replicas": 2})
    dear = SimpleNamespace(**{**vars(v), "name": "dear", "cost": 2.5, "min_replicas": 0})
    # 2 req/s: cheap serves 2 x 0.7929 = 1.586, the rest 0.414 / 0.7929 = 0.52 -> 1 replica of dear
    reps, _ = plan([dear, cheap], _requests(2, 0, 30), 1000, 50, 30)  # type: ignore[list-item]
    assert reps == {"cheap": [2], "dear": [1]}


def test_a_tighter_slo_lowers_the_batch() -> None:
    # ITL target 5 ms < the engine's 10 ms: even batch 1 misses it; as Dynamo's planner, the rate at b = 1
    # is used: 1 / 10.09 = 0.0991 req/s -> ceil(2 / 0.0991) = 21 > max 10: capped at 10, every window counted
    reps, over = plan(list(scenario_variants(_scenario())), _requests(2, 0, 60), 1000, 5, 60)
    assert reps == {"va": [10, 10]} and over == 2
