"""Scaling KPIs against the oracle's schedule and SLO recovery after a load step, worked by hand.

reports/provisioning.py (under/over-provisioned GPU-seconds), reports/recovery.py (load steps,
time to recover), controllers/oracle.py ``Oracle.capacity_plan`` (the schedule itself).
"""
from __future__ import annotations

import numpy as np
import pytest

from scalearena.contracts.records import TimeseriesRecord
from scalearena.controllers.base import ArrivalForecast
from scalearena.controllers.oracle import Oracle, OracleConfig
from scalearena.reports.provisioning import vs_oracle
from scalearena.reports.recovery import load_steps, slo_recovery, time_to_recover
from scalearena.reports.results import timeseries_frame
from tests.unit.viewkit import variant

# -- the oracle's schedule -------------------------------------------------------------------------
# One slot per replica (max_num_seqs 1, no KV size) and 1 s per request (TTFT 1000 ms, ITL 0):
# one replica serves 1 req/s.
ONE_RPS = {"max_num_seqs": 1, "latency": {"kind": "constant", "ttft_ms": 1000, "itl_ms": 0}}


def test_capacity_plan_is_the_oracles_allocation_per_window_clamped_to_bounds():
    # window 0 [0, 30): 30 arrivals = 1 req/s -> 1 replica of the cheaper a100 (cost 1 < 2.5)
    # window 1 [30, 60): 90 arrivals = 3 req/s -> a100 up to its max 2 (2 req/s), 1 req/s left -> 1 h100
    arrivals = tuple(k * 1.0 for k in range(30)) + tuple(30 + k / 3 for k in range(90))
    fc = ArrivalForecast("m", arrivals, (10,) * 120, (1,) * 120)
    a = variant("a100", engine=ONE_RPS, cost=1.0, min_replicas=1, max_replicas=2)
    h = variant("h100", engine=ONE_RPS, cost=2.5, min_replicas=0, max_replicas=4)
    plan = Oracle(OracleConfig()).capacity_plan([a, h], [fc], until_s=60.0)
    assert plan == {"window_s": 30.0, "replicas": {"a100": [1, 2], "h100": [0, 1]},
                    "floor": {"a100": 1, "h100": 0}}


def test_capacity_plan_without_a_forecast_for_a_model_is_none():
    a = variant("a100", engine=ONE_RPS)
    assert Oracle(OracleConfig()).capacity_plan([a], [], until_s=60.0) is None


# -- under / over-provisioned GPU-seconds ----------------------------------------------------------
def _ts(t, v, ready, pending=0, terminating=0):
    return TimeseriesRecord(t_s=t, variant=v, model="m", spec_replicas=ready, ready_replicas=ready,
                            pending_replicas=pending, terminating_replicas=terminating, kv_usage_mean=None,
                            kv_usage_max=None, waiting=0, running=0, gpu_util_mean=None, offered_rps=0.0,
                            completed_rps=0.0, router_queue=0)


META = {"sample_interval_s": 10.0,
        "variants": [{"name": "a100", "model": "m", "gpus_per_replica": 1},
                     {"name": "h100", "model": "m", "gpus_per_replica": 2}],
        "oracle_plan": {"window_s": 30.0, "replicas": {"a100": [2, 1], "h100": [0, 1]},
                        "floor": {"a100": 1, "h100": 0}}}
T = [10, 20, 30, 40, 50, 60, 70]
TS = ([_ts(t, "a100", r, p) for t, r, p in zip(T, [1, 1, 2, 2, 2, 2, 2], [1, 1, 0, 0, 0, 0, 0], strict=True)]
      + [_ts(t, "h100", r, p, x) for t, r, p, x in zip(T, [0, 0, 0, 0, 1, 1, 0], [0, 0, 0, 1, 0, 0, 0],
                                                        [0, 0, 0, 0, 0, 0, 1], strict=True)])


def test_under_and_over_provisioned_gpu_seconds_by_hand():
    # every sample stands for 10 s; windows of t - eps: 10, 20, 30 -> 0; 40, 50, 60 -> 1; 70 -> past the plan
    # need GPUs: window 0: 2 x 1 + 0 x 2 = 2; window 1: 1 x 1 + 1 x 2 = 3; past the plan: floors 1 x 1 + 0 = 1
    #   -> [2, 2, 2, 3, 3, 3, 1]
    # ready GPUs (a100 + 2 x h100): [1, 1, 2, 2, 4, 4, 2]
    # billed GPUs (+ pending, terminating): [2, 2, 2, 2 + 2, 4, 4, 2 + 2] = [2, 2, 2, 4, 4, 4, 4]
    # under = max(0, need - ready) = [1, 1, 0, 1, 0, 0, 0] -> 3 x 10 = 30 GPU-s
    # over = max(0, billed - need) = [0, 0, 0, 1, 1, 1, 3] -> 6 x 10 = 60 GPU-s
    # oracle = (2 + 2 + 2 + 3 + 3 + 3 + 1) x 10 = 160 GPU-s
    got = vs_oracle(timeseries_frame(TS), META)
    assert got == {"under_provisioned_gpu_s": pytest.approx(30.0), "over_provisioned_gpu_s": pytest.approx(60.0),
                   "oracle_gpu_s": pytest.approx(160.0), "window_s": 30.0}


def test_matching_the_plan_exactly_is_neither_under_nor_over():
    plan = {"window_s": 30.0, "replicas": {"a100": [2, 2]}, "floor": {"a100": 1}}
    ts = timeseries_frame([_ts(t, "a100", 2) for t in (30, 60)])
    got = vs_oracle(ts, {"sample_interval_s": 30.0, "variants": [{"name": "a100", "model": "m"}],
                         "oracle_plan": plan})
    # two samples of 30 s, need 2 = ready 2 = billed 2: oracle 2 x 60 = 120 GPU-s
    assert (got["under_provisioned_gpu_s"], got["over_provisioned_gpu_s"], got["oracle_gpu_s"]) == (0.0, 0.0, 120.0)


def test_no_plan_gives_nulls():
    got = vs_oracle(timeseries_frame(TS), {**META, "oracle_plan": None})
    assert got == {"under_provisioned_gpu_s": None, "over_provisioned_gpu_s": None, "oracle_gpu_s": None,
                   "window_s": None}


# -- load steps and recovery -----------------------------------------------------------------------
def _arrivals(counts, window=30.0):
    """Evenly spaced arrivals: counts[b] of them in window b."""
    return np.array([b * window + k * window / n for b, n in enumerate(counts) for k in range(n)])


def test_a_staircase_step_is_found_and_noise_is_not():
    # 60 -> 60: no rise; 60 -> 150: +90 > max(25 % of 60 = 15, 3 sqrt(210) = 43.5) -> step at 60 s
    assert load_steps(_arrivals([60, 60, 150, 150]), 120.0) == [
        {"t_s": 60.0, "rate_before_rps": 2.0, "rate_after_rps": 5.0}]
    # 150 -> 170: +20 < max(37.5, 3 sqrt(320) = 53.7): noise, not a step
    assert load_steps(_arrivals([150, 170, 160]), 90.0) == []


def test_a_ramp_of_rising_windows_is_one_step():
    # 30 -> 60: +30 > max(7.5, 3 sqrt(90) = 28.5); 60 -> 120: +60 > max(15, 3 sqrt(180) = 40.2): one ramp from 30 s
    assert load_steps(_arrivals([30, 60, 120, 120]), 120.0) == [
        {"t_s": 30.0, "rate_before_rps": 1.0, "rate_after_rps": 4.0}]


def test_time_to_recover_by_hand():
    # one arrival per second from 60 to 119; those before 80 s miss the SLO
    arr = np.arange(60.0, 120.0)
    good = arr >= 80.0
    # [60, 90): 10/30 good; [70, 100): 20/30; [80, 110): 30/30 >= 0.9 -> 20 s after the step
    assert time_to_recover(arr, good, 60.0, 120.0, 0.9) == 20.0
    assert time_to_recover(arr, np.ones_like(good), 60.0, 120.0, 0.9) == 0.0  # the step never hurt
    assert time_to_recover(arr, np.zeros_like(good), 60.0, 120.0, 0.9) is None  # never recovered


def test_slo_recovery_summary():
    arr = _arrivals([60, 60, 150, 150])  # one step at 60 s (2 -> 5 req/s)
    good = ~((arr >= 60.0) & (arr < 75.0))  # the first 15 s after the step miss the SLO
    # windows from 60 s every 10 s, 150 arrivals each (5 req/s): [60, 90) misses those in [60, 75), 75 -> 0.5;
    # [70, 100) misses [70, 75), 25 -> 0.833; [80, 110) misses none -> 1.0 >= 0.95: recovered 20 s after the step
    got = slo_recovery(arr, good, 120.0, 0.95)
    assert got["steps"] == [{"t_s": 60.0, "rate_before_rps": 2.0, "rate_after_rps": 5.0, "recover_s": 20.0}]
    assert got["recover_s"] == {"max": 20.0, "mean": 20.0} and got["unrecovered"] == 0
    assert (got["target"], got["window_s"], got["resolution_s"]) == (0.95, 30.0, 10.0)
