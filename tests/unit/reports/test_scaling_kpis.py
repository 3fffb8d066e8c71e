"""Scaling and efficiency KPIs (reports/scaling.py) on small tables worked out by hand."""
from __future__ import annotations

import json

import pytest

from scalearena.contracts.records import RequestRecord, TimeseriesRecord
from scalearena.reports.compare import compare
from scalearena.reports.metrics import summarize
from scalearena.reports.results import requests_frame, timeseries_frame
from scalearena.reports.scaling import efficiency_kpis, scaling_kpis


def _dec(t, variant, cur, want):
    action = "scale_up" if want > cur else "scale_down" if want < cur else "hold"
    return {"t_s": t, "variant": variant, "current_replicas": cur, "desired_replicas": want, "action": action}


def _ts(t, variant, ready):
    return TimeseriesRecord(t_s=t, variant=variant, model="m", spec_replicas=ready, ready_replicas=ready,
                            pending_replicas=0, terminating_replicas=0, kv_usage_mean=None, kv_usage_max=None,
                            waiting=0, running=0, gpu_util_mean=None, offered_rps=0.0, completed_rps=0.0,
                            router_queue=0)


def _req(i, status, inp, out):
    return RequestRecord(request_id=i, model="m", arrival_s=float(i), first_token_s=None, end_s=i + 1.0,
                         input_tokens=inp, output_tokens=out, status=status, http_status=200, variant="a100",
                         pod=None, ttft_ms=10.0, itl_ms=1.0, e2e_ms=1000.0)


DECISIONS = [
    _dec(0, "a100", 1, 3),    # up, step 2
    _dec(30, "a100", 3, 3),   # hold: not a change
    _dec(100, "a100", 3, 2),  # down, step 1; reversal 100 s after the up -> oscillation 1
    _dec(500, "a100", 2, 4),  # up, step 2; reversal 400 s after the down > 300 s -> none
    _dec(520, "a100", 4, 1),  # down, step 3; reversal 20 s after the up -> oscillation 2
    _dec(10, "h100", 1, 2),   # up, step 1
    _dec(50, "h100", 2, 3),   # up, step 1; same direction -> no oscillation
]
TIMESERIES = [_ts(t, "a100", r) for t, r in [(0, 1), (20, 1), (40, 3), (60, 3), (120, 2), (500, 2), (520, 2),
                                             (540, 1)]] + \
             [_ts(t, "h100", r) for t, r in [(0, 1), (20, 1), (40, 2), (60, 2), (80, 3)]]
REQUESTS = [_req(1, "ok", 1000, 3000), _req(2, "ok", 2000, 1000), _req(3, "killed", 500, 500),
            _req(4, "killed", 10, 0), _req(5, "rejected", 700, 0)]


def test_counts_steps_and_oscillations():
    k = scaling_kpis(requests_frame(REQUESTS), timeseries_frame(TIMESERIES), DECISIONS)
    # ups: a100 t=0, t=500; h100 t=10, t=50 -> 4; downs: a100 t=100, t=520 -> 2
    assert (k["scale_up_count"], k["scale_down_count"]) == (4, 2)
    assert k["largest_step"] == 3  # |1 - 4| at t=520
    assert k["oscillations"] == 2 and k["oscillation_window_s"] == 300.0
    assert k["by_variant"]["a100"] == {"scale_up_count": 2, "scale_down_count": 2, "largest_step": 3,
                                       "oscillations": 2}
    assert k["by_variant"]["h100"] == {"scale_up_count": 2, "scale_down_count": 0, "largest_step": 1,
                                       "oscillations": 0}
    assert k["requests_lost_to_scale_down"] == 2  # two killed requests


def test_decision_to_ready_lag_matching():
    k = scaling_kpis(requests_frame(REQUESTS), timeseries_frame(TIMESERIES), DECISIONS)
    # a100 up at 0 to 3: ready 3 first at t=40, before the down at 100 -> 40 s
    # a100 up at 500 to 4: never 4 ready -> unmatched
    # h100 up at 10 to 2: ready 2 at 40 -> 30 s; up at 50 to 3: ready 3 at 80 -> 30 s
    # lags sorted [30, 30, 40]: p50 = 30; p95: k+f = 0.95*2 = 1.9 -> 30 + 0.9*(40-30) = 39
    lag = k["decision_to_ready_lag_s"]
    assert lag["matched"] == 3 and lag["unmatched"] == 1
    assert lag["p50"] == pytest.approx(30.0) and lag["p95"] == pytest.approx(39.0)


def test_scale_up_overtaken_by_scale_down_is_unmatched():
    decisions = [_dec(0, "x", 1, 3), _dec(10, "x", 3, 1)]
    ts = timeseries_frame([_ts(0, "x", 1), _ts(20, "x", 3)])  # 3 ready at 20, after the down at 10
    k = scaling_kpis(requests_frame([]), ts, decisions)
    assert k["decision_to_ready_lag_s"] == {"p50": None, "p95": None, "matched": 0, "unmatched": 1}
    assert k["oscillations"] == 1  # up then down 10 s apart


def test_no_changes_gives_zero_counts_and_null_step():
    k = scaling_kpis(requests_frame([]), timeseries_frame([]), [_dec(0, "x", 2, 2)])
    assert (k["scale_up_count"], k["scale_down_count"], k["largest_step"], k["oscillations"]) == (0, 0, None, 0)
    assert k["by_variant"] == {} and k["requests_lost_to_scale_down"] == 0


def test_efficiency_counts_only_ok_tokens():
    e = efficiency_kpis(requests_frame(REQUESTS), cost=2.0, cost_usd=None, energy_kwh=0.7)
    # ok tokens: out 3000 + 1000 = 4000; total 4000 + 1000 + 2000 = 7000 (killed/rejected excluded)
    assert e["cost_per_1m_output_tokens"] == pytest.approx(2.0 / 4000 * 1e6)  # 500
    assert e["cost_per_1m_total_tokens"] == pytest.approx(2.0 / 7000 * 1e6)  # 285.71
    assert e["energy_kwh_per_1m_tokens"] == pytest.approx(0.7 / 7000 * 1e6)  # 100
    assert e["cost_usd_per_1m_output_tokens"] is None and e["cost_usd_per_1m_total_tokens"] is None
    none = efficiency_kpis(requests_frame([]), cost=2.0, cost_usd=1.0, energy_kwh=0.7)
    assert set(none.values()) == {None}  # no ok tokens: per-token figures undefined


def test_summary_carries_scaling_and_efficiency():
    meta = {"scenario": "s", "autoscaler": "hpa", "cluster": "sim", "seed": 1, "duration_s": 10.0,
            "sample_interval_s": 5.0, "slo": {"ttft_ms": 1000.0, "itl_ms": 50.0},
            "variants": [{"name": "a100", "model": "m", "gpu": "A100", "gpus_per_replica": 1, "cost": 1.0,
                          "tdp_w": 400, "price_per_hour": 2.0}]}
    ts = [_ts(0, "a100", 1), _ts(5, "a100", 1), _ts(10, "a100", 1)]
    s = summarize(requests_frame([_req(1, "ok", 100, 900)]), timeseries_frame(ts), [_dec(5, "a100", 1, 2)], meta)
    # weights 0, 5, 5 -> 10 replica-seconds: cost = 1.0*10/3600 = 1/360; cost_usd = 2.0*10/3600 = 1/180;
    # energy = 400 W * 10 s / 3.6e6 = 1/900 kWh; ok tokens: 900 out, 1000 total
    eff = s["efficiency"]
    assert eff["cost_per_1m_output_tokens"] == pytest.approx(1 / 360 / 900 * 1e6)  # 3.0864
    assert eff["cost_per_1m_total_tokens"] == pytest.approx(1 / 360 / 1000 * 1e6)  # 2.7778
    assert eff["cost_usd_per_1m_output_tokens"] == pytest.approx(1 / 180 / 900 * 1e6)  # 6.1728
    assert eff["energy_kwh_per_1m_tokens"] == pytest.approx(1 / 900 / 1000 * 1e6)  # 1.1111
    sc = s["scaling"]
    assert sc["scale_up_count"] + sc["scale_down_count"] == s["scaling_actions"] == 1
    assert sc["decision_to_ready_lag_s"]["unmatched"] == 1  # 2 replicas never ready
    json.dumps(s, allow_nan=False)


def test_compare_does_not_gate_on_kpis_missing_from_baseline(tmp_path):
    base = {"scenario": "s", "autoscaler": "hpa", "complete": True, "goodput_rps": 1.0, "cost": 1.0}
    cur = {**base, "scaling": {"oscillations": 9, "decision_to_ready_lag_s": {"p95": 120.0}},
           "efficiency": {"cost_per_1m_output_tokens": 3.0}}
    for root, s in (("b", base), ("c", cur)):
        (tmp_path / root / "s" / "hpa").mkdir(parents=True)
        (tmp_path / root / "s" / "hpa" / "summary.json").write_text(json.dumps(s))
    c = compare(tmp_path / "b", tmp_path / "c")
    verdicts = {d.metric.id: d.verdict for d in c.deltas}
    assert verdicts["oscillations"] == "new" and verdicts["cost_per_1m_output_tokens"] == "new"
    assert c.passed
    c_back = compare(tmp_path / "c", tmp_path / "b")  # current lacks them: reported missing, not gated
    assert {d.metric.id: d.verdict for d in c_back.deltas}["oscillations"] == "missing" and c_back.passed
