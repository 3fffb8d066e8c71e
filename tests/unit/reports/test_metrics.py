"""Metric definitions against small tables worked out by hand."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from scalearena.contracts.records import RequestRecord, TimeseriesRecord
from scalearena.reports.metrics import summarize
from scalearena.reports.results import requests_frame, timeseries_frame
from scalearena.reports.usage import integrate, sample_weights

META = {
    "scenario": "tiny",
    "autoscaler": "wva",
    "cluster": "sim",
    "seed": 7,
    "duration_s": 10.0,
    "sample_interval_s": 5.0,
    "slo": {"ttft_ms": 1000.0, "itl_ms": 50.0},
    "variants": [
        {"name": "a100", "model": "m", "gpu": "A100", "gpus_per_replica": 1, "cost": 1.0, "tdp_w": 400,
         "price_per_hour": 2.0},
        {"name": "h100", "model": "m", "gpu": "H100", "gpus_per_replica": 2, "cost": 2.5, "tdp_w": 700,
         "price_per_hour": None},
    ],
}


def _req(i, status, ttft, itl, e2e, variant, out, scheduled=None):
    return RequestRecord(
        request_id=i, model="m", arrival_s=float(i), first_token_s=None if ttft is None else i + ttft / 1000,
        end_s=i + e2e / 1000, input_tokens=100 * i, output_tokens=out, status=status,
        http_status=200 if status == "ok" else 429, variant=variant, pod=None, ttft_ms=ttft, itl_ms=itl,
        e2e_ms=e2e, scheduled_s=scheduled,
    )


def _ts(t, variant, ready, pending, term, util):
    return TimeseriesRecord(
        t_s=t, variant=variant, model="m", spec_replicas=ready + pending, ready_replicas=ready,
        pending_replicas=pending, terminating_replicas=term, kv_usage_mean=0.5, kv_usage_max=0.9, waiting=1,
        running=2, gpu_util_mean=util, offered_rps=0.4, completed_rps=0.3, router_queue=3,
    )


REQUESTS = [
    _req(1, "ok", 200.0, 20.0, 1000.0, "a100", 10),  # meets both
    _req(2, "ok", 1500.0, 30.0, 2000.0, "h100", 20),  # misses TTFT
    _req(3, "ok", 400.0, None, 400.0, "h100", 1),  # one output token: no ITL, meets both
    _req(4, "rejected", None, None, 5.0, None, 0),
]
TIMESERIES = [
    _ts(5.0, "a100", 1, 1, 0, 0.5), _ts(5.0, "h100", 1, 0, 0, None),
    _ts(10.0, "a100", 2, 0, 0, 1.0), _ts(10.0, "h100", 0, 0, 1, None),
]
DECISIONS = [
    {"action": "scale_up", "alerts": []}, {"action": "hold", "alerts": []},
    {"action": "scale_down", "alerts": []}, {"action": "alert", "alerts": ["p99 over 2x baseline"]},
]


@pytest.fixture()
def summary():
    return summarize(requests_frame(REQUESTS), timeseries_frame(TIMESERIES), DECISIONS, META)


def test_counts_throughput_goodput(summary):
    assert summary["requests_total"] == 4
    assert summary["requests_ok"] == 3
    assert summary["failures"] == {"rejected": 1, "killed": 0, "timeout": 0, "too_long": 0, "error": 0}
    assert summary["throughput_rps"] == pytest.approx(0.3)  # 3 ok / 10 s
    assert summary["goodput_rps"] == pytest.approx(0.2)  # requests 1 and 3 meet both / 10 s
    assert summary["failure_ratio"] == pytest.approx(0.25)  # 1 / 4
    # both: 2/4; TTFT: 200 and 400 <= 1000 -> 2/4; ITL: 20, 30 <= 50 and one null -> 3/4
    assert summary["slo_attainment"] == pytest.approx({"both": 0.5, "ttft": 0.5, "itl": 0.75})
    assert summary["output_tokens_per_s"] == pytest.approx(3.1)  # (10+20+1) / 10 s


def test_latency_percentiles(summary):
    # ok TTFTs sorted: 200, 400, 1500. mean 2100/3 = 700. p50 = 400.
    # p90: rank 0.9*(3-1) = 1.8 -> 400 + 0.8*(1500-400) = 1280; p99: rank 1.98 -> 400 + 0.98*1100 = 1478
    assert summary["ttft_ms"] == pytest.approx({"mean": 700.0, "p50": 400.0, "p90": 1280.0, "p99": 1478.0})
    # ITLs 20, 30 (null dropped): mean 25, p50 25, p90 20+0.9*10 = 29, p99 20+0.99*10 = 29.9
    assert summary["itl_ms"] == pytest.approx({"mean": 25.0, "p50": 25.0, "p90": 29.0, "p99": 29.9})


def test_replicas_cost_gpu_hours(summary):
    # weights: t=5 -> 5 s (first sample: min(5, interval 5)), t=10 -> 5 s.
    # ready total 2 at both times -> mean 2; a100 (1*5 + 2*5)/10 = 1.5; h100 (1*5 + 0*5)/10 = 0.5
    assert summary["replicas"]["mean"] == pytest.approx(2.0)
    assert summary["replicas"]["max"] == 2
    assert summary["replicas"]["by_variant"] == {
        "a100": {"mean": pytest.approx(1.5), "max": 2}, "h100": {"mean": pytest.approx(0.5), "max": 1}}
    # billed = ready+pending+terminating: a100 2,2 -> 20 replica-s; h100 1,1 -> 10 replica-s (2 GPUs each)
    # GPU-hours: (20*1 + 10*2) / 3600 = 40/3600; cost: (20*1.0 + 10*2.5) / 3600 = 45/3600
    assert summary["gpu_hours"] == pytest.approx(40 / 3600)
    assert summary["cost"] == pytest.approx(45 / 3600)
    assert summary["replica_hours"] == pytest.approx(30 / 3600)
    assert summary["billed_replicas"] == {"mean": pytest.approx(3.0), "max": 3}
    assert summary["cost_usd"] is None  # h100 has no price
    assert summary["variants"]["a100"]["cost_usd"] == pytest.approx(40 / 3600)  # 2.0 $/GPU-h x 20 GPU-s


def test_energy(summary):
    # nameplate: 400 W x 20 GPU-s + 700 W x 20 GPU-s = 22000 J = 22000/3.6e6 kWh
    assert summary["energy_kwh"] == pytest.approx(22000 / 3.6e6)
    e = summary["energy"]
    # busy GPU-s: a100 1*5*0.5 + 2*5*1.0 = 12.5 (x400 W = 5000 J); h100 util unknown -> busy: 1*2*5 = 10 (7000 J)
    assert e["busy_kwh"] == pytest.approx(12000 / 3.6e6)
    # idle GPU-s: a100 20-12.5 = 7.5 (0.3*400*7.5 = 900 J); h100 20-10 = 10 (0.3*700*10 = 2100 J)
    assert e["idle_kwh"] == pytest.approx(3000 / 3.6e6)
    assert e["estimated_kwh"] == pytest.approx(15000 / 3.6e6)
    assert e["util_known_share"] == pytest.approx(0.6)  # 15 known of 25 ready GPU-s


def test_decisions_and_timeseries_stats(summary):
    assert summary["scaling_actions"] == 2
    assert summary["alerts"] == 1
    # queue per time: waiting 1+1 + gateway 3 (one value per model) = 5
    assert summary["timeseries"]["queue_max"] == 5
    assert summary["timeseries"]["covered_s"] == pytest.approx(10.0)


def test_design_keys_present_and_json_clean(summary):
    keys = {"scenario", "autoscaler", "cluster", "seed", "duration_s", "requests_total", "requests_ok",
            "failures", "throughput_rps", "goodput_rps", "slo", "ttft_ms", "itl_ms", "e2e_ms", "replicas",
            "gpu_hours", "cost", "energy_kwh", "scaling_actions"}
    assert keys <= summary.keys()
    assert summary["requests_total"] == summary["requests_ok"] + sum(summary["failures"].values())
    json.dumps(summary, allow_nan=False)


def test_empty_frames_do_not_crash():
    s = summarize(requests_frame([]), timeseries_frame([]), [], META)
    assert s["requests_total"] == 0 and s["throughput_rps"] == 0.0
    assert s["ttft_ms"]["p99"] is None
    assert s["replicas"] == {"mean": 0.0, "max": 0, "by_variant": {}}
    json.dumps(s, allow_nan=False)
    s2 = summarize(pd.DataFrame(), None, [], {**META, "duration_s": 0})
    assert s2["throughput_rps"] is None


def test_send_lag_only_when_scheduled():
    recs = [_req(1, "ok", 100.0, 10.0, 500.0, "a100", 5, scheduled=0.99),
            _req(2, "ok", 100.0, 10.0, 500.0, "a100", 5, scheduled=1.97)]
    s = summarize(requests_frame(recs), timeseries_frame([]), [], META)
    # lags: 1 - 0.99 = 10 ms, 2 - 1.97 = 30 ms -> mean 20, max 30
    assert s["send_lag_ms"]["mean"] == pytest.approx(20.0)
    assert s["send_lag_ms"]["max"] == pytest.approx(30.0)
    assert "send_lag_ms" not in summarize(requests_frame(REQUESTS), timeseries_frame([]), [], META)


def test_sample_weights():
    # first sample at 0 stands for nothing; later ones for the gap since the previous sample
    assert sample_weights(np.array([0.0, 5.0, 10.0]), 5.0).tolist() == [0.0, 5.0, 5.0]
    # first sample at 7 with a 5 s interval stands for 5 s, not 7
    assert sample_weights(np.array([7.0, 12.0]), 5.0).tolist() == [5.0, 5.0]


def test_sample_weights_stop_at_the_run_window():
    # window 12 s: the sample at 15 stands only for 10..12 (2 s), the one at 20 for nothing
    t = np.array([0.0, 5.0, 10.0, 15.0, 20.0])
    assert sample_weights(t, 5.0, 12.0).tolist() == [0.0, 5.0, 5.0, 2.0, 0.0]
    # a window past the last sample changes nothing
    assert sample_weights(t, 5.0, 30.0).tolist() == sample_weights(t, 5.0).tolist()


def test_integrate_clips_an_overstaying_run_to_its_window():
    # a wall-clock run whose load overstayed its 12 s window: samples at 0, 5, 10, 15, 20
    ts = pd.DataFrame({"t_s": [0.0, 5.0, 10.0, 15.0, 20.0], "variant": ["a"] * 5, "ready_replicas": [1, 1, 2, 3, 9],
                       "pending_replicas": [0] * 5, "terminating_replicas": [0] * 5, "standby_replicas": [0] * 5,
                       "gpu_util_mean": [None] * 5})
    u = integrate(ts, {"sample_interval_s": 5.0, "window_s": 12.0})
    # ready: 1 x 5 + 2 x 5 + 3 x 2 + 9 x 0 = 21 replica-s over 12 s -> mean 1.75; the 9 at t = 20 is outside
    assert (u.covered_s, u.variants["a"].ready_replica_s, u.ready_mean, u.ready_max) == (12.0, 21.0, 1.75, 3)
    assert u.variants["a"].ready_max == 3
    # without a recorded window (a run written before it was) every sample counts: 5 + 10 + 3 x 5 + 9 x 5 = 75
    old = integrate(ts, {"sample_interval_s": 5.0})
    assert (old.covered_s, old.variants["a"].ready_replica_s, old.ready_max) == (20.0, 75.0, 9)


def test_integrate_groups_variants_and_sample_times():
    # rows out of variant order; samples at 5 and 10 s with a 5 s interval: each stands for 5 s
    ts = pd.DataFrame({
        "t_s": [5.0, 5.0, 10.0, 10.0], "variant": ["b", "a", "a", "b"],
        "ready_replicas": [1, 2, 3, 1], "pending_replicas": [1, 0, 0, 0], "terminating_replicas": [0, 0, 1, 0],
        "standby_replicas": [0, 1, 0, 0], "gpu_util_mean": [0.5, None, 2.0, 0.25]})
    u = integrate(ts, {"sample_interval_s": 5.0, "variants": [{"name": "a", "gpus_per_replica": 2}]})
    assert list(u.variants) == ["a", "b"] and u.covered_s == 10.0
    a, b = u.variants["a"], u.variants["b"]
    # a: ready 2, 3 -> 25 replica-s; billed 2 + 1 standby = 3, 3 + 1 terminating = 4 -> 35 replica-s;
    # busy: unknown util counts busy, 2.0 clips to 1: 2 x 2 GPUs x 5 s + 3 x 2 x 5 = 50 GPU-s, of which 30 measured
    assert (a.ready_replica_s, a.billed_replica_s, a.busy_gpu_s, a.util_known_gpu_s) == (25.0, 35.0, 50.0, 30.0)
    assert (a.ready_mean, a.ready_max, a.billed_mean, a.billed_max) == (2.5, 3, 3.5, 4)
    # b (1 GPU by default): ready 1, 1; billed 2 (1 pending), 1; busy 5 x 0.5 + 5 x 0.25 = 3.75
    assert (b.ready_replica_s, b.billed_replica_s, b.busy_gpu_s, b.util_known_gpu_s) == (10.0, 15.0, 3.75, 10.0)
    assert (b.billed_mean, b.billed_max) == (1.5, 2)
    # per sample time: ready 3, 4 -> mean 3.5, max 4; billed 5, 5
    assert (u.ready_mean, u.ready_max, u.billed_mean, u.billed_max) == (3.5, 4, 5.0, 5)
