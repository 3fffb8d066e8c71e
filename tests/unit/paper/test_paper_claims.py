"""Paper claim evaluation on hand-made result folders (numbers chosen so verdicts are known)."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from scalearena.paper.claims import exp1_claims, exp2_claims, physical_claims
from scalearena.paper.results import index_results


def _run(out: Path, rel: str, summary: dict, ts_rows: list[dict], scenario: dict) -> None:
    d = out / rel
    d.mkdir(parents=True)
    (d / "summary.json").write_text(json.dumps(summary))
    (d / "scenario.json").write_text(json.dumps(scenario))
    pd.DataFrame(ts_rows).to_parquet(d / "timeseries.parquet")


def _ts(t, variant, ready, spec=None, kv=0.5):
    return {"t_s": float(t), "variant": variant, "ready_replicas": ready,
            "spec_replicas": ready if spec is None else spec, "kv_usage_mean": kv}


STEPS = {"workload": [{"arrivals": {"kind": "stepped", "steps": [
    {"duration_s": 100, "rate_rps": 2}, {"duration_s": 100, "rate_rps": 5}]}}]}


def test_exp1_replicas_rising_and_kv_back_under_threshold(tmp_path):
    # step 1 (0-100 s): 1 replica, KV 0.5; step 2 (100-200 s): 3 replicas in its second half, KV 0.6 at its end
    rows = [_ts(t, "v", 1 if t < 150 else 3, kv=0.9 if 100 <= t < 140 else 0.6 if t >= 100 else 0.5)
            for t in range(0, 200, 10)]
    _run(tmp_path, "exp1-staircase/wva/seed-1", {"seed": 1}, rows, STEPS)
    c_rep, c_kv = exp1_claims(index_results(tmp_path))
    assert c_rep.holds is True
    assert "1.00 -> 3.00" in c_rep.measured  # means over t in [50,100) = 1 and [150,200) = 3
    assert c_kv.holds is True  # last 60 s of step 2 = t in [140,200): KV 0.6 < 0.8


def test_exp1_kv_above_threshold_fails(tmp_path):
    rows = [_ts(t, "v", 1, kv=0.85) for t in range(0, 200, 10)]
    _run(tmp_path, "exp1-staircase/wva/seed-1", {"seed": 1}, rows, STEPS)
    c_rep, c_kv = exp1_claims(index_results(tmp_path))
    assert c_rep.holds is False  # 1 -> 1 is not rising
    assert c_kv.holds is False and c_kv.explanation


def test_exp2_h100_only_after_a100_at_max(tmp_path):
    sc = {"cluster": {"variants": [{"name": "va-a100", "min_replicas": 1, "max_replicas": 2, "initial_replicas": None},
                                   {"name": "va-h100", "min_replicas": 0, "max_replicas": 3}]}}
    good = [_ts(0, "va-a100", 1), _ts(0, "va-h100", 0), _ts(30, "va-a100", 2), _ts(30, "va-h100", 0),
            _ts(60, "va-a100", 2), _ts(60, "va-h100", 1)]
    bad = [_ts(0, "va-a100", 1), _ts(0, "va-h100", 0), _ts(30, "va-a100", 1), _ts(30, "va-h100", 1)]
    _run(tmp_path, "exp2-cost-aware/wva/seed-1", {"seed": 1}, good, sc)
    _run(tmp_path, "exp2-cost-aware/hpa/seed-1", {"seed": 1}, bad, sc)
    (claim,) = exp2_claims(index_results(tmp_path))
    assert claim.holds is True  # judged on wva: a100 up at 30 s, h100 at 60 s with a100 at its max 2
    rows = {r[0]: r for r in claim.table[1:]}
    assert rows["wva"][1:4] == ["30", "60", "2.0"]
    assert rows["hpa"][4] == "0/1 seeds"


def test_physical_ratios(tmp_path):
    def s(thr, fail, rmax=10, rmean=9.0, ttft=100.0):
        return {"seed": 1, "throughput_rps": thr, "failures": {"rejected": fail, "killed": 0, "timeout": 0, "error": 0},
                "ttft_ms": {"mean": ttft}, "itl_ms": {"mean": 5.0}, "replicas": {"mean": rmean, "max": rmax}}
    _run(tmp_path, "physical-validation/wva/rate-5/seed-1", s(4.6, 2), [_ts(0, "v", 1)], {})
    _run(tmp_path, "physical-validation/hpa/rate-5/seed-1", s(4.0, 20), [_ts(0, "v", 1)], {})
    _run(tmp_path, "physical-validation/wva/rate-6/seed-1", s(5.0, 30, 10, 9.8, 900.0), [_ts(0, "v", 1)], {})
    _run(tmp_path, "physical-validation/hpa/rate-6/seed-1", s(5.2, 10, 10, 9.3, 400.0), [_ts(0, "v", 1)], {})
    claims = {c.id: c for c in physical_claims(index_results(tmp_path))}
    # 4.6 / 4.0 = 1.15 -> +15.0 %
    assert "5 RPS: +15.0 %" in claims["phys-throughput"].measured
    assert claims["phys-throughput"].holds is True
    # failures 2 / 20 = 0.10
    assert "0.10" in claims["phys-failures"].measured and claims["phys-failures"].holds is True
    assert claims["phys-cap"].holds is True  # wva max replicas 10
    assert claims["phys-inversion"].holds is True  # 30 > 10 failures at 6 RPS


def test_sensitivity_rows_fall_back_to_main_runs_for_the_unswept_side(tmp_path):
    from scalearena.paper.claims import sensitivity_rows
    from scalearena.paper.plans import Sweep

    def s(thr, fail):
        return {"seed": 1, "throughput_rps": thr,
                "failures": {"rejected": fail, "killed": 0, "timeout": 0, "error": 0}}
    ts = [_ts(0, "v", 1)]
    # the sweep varied only HPA (value 2): wva comes from the main physical runs
    _run(tmp_path, "sens-hpaqueue-2/hpa/rate-5/seed-1", s(4.0, 30), ts, {})
    _run(tmp_path, "physical-validation/wva/rate-5/seed-1", s(3.0, 50), ts, {})
    _run(tmp_path, "physical-validation/hpa/rate-5/seed-1", s(5.0, 10), ts, {})
    rows = sensitivity_rows(index_results(tmp_path), [Sweep("hpaqueue", "HPA queue", (2,), ("x={v}",), ("hpa",))],
                            wvas=("wva",))
    # wva 3.0 / swept hpa 4.0 = 0.75 (not the main hpa's 5.0); failures 50 vs 30
    assert rows[1] == ["HPA queue", "2", "5", "wva", "0.750", "50.0", "30.0", "no", "no"]
