"""The tuning study's page (reports/tune.py) from a hand-made study folder: its figure can draw (Chart.js
inlined), the bound is the oracle frontier of tune.json, and each front trial's regret is measured on it."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from scalearena.reports.tune import write_tune_report


def _summary(gpu: float, att: float) -> dict[str, object]:
    return {"complete": True, "gpu_hours": gpu, "cost": gpu, "slo_attainment": {"both": att}, "goodput_rps": 1.0}


def test_tune_page_draws_the_frontier_and_regret_on_it(tmp_path: Path) -> None:
    frontier = [{"scenario": "s", "point": "", "seed": 1, "setting": "floor", "summary": _summary(0.2, 0.30)},
                {"scenario": "s", "point": "", "seed": 1, "setting": "u=1", "summary": _summary(0.5, 0.90)}]
    meta = {"scenario": "s", "autoscaler": "hpa", "objectives": ["cost", "slo_attainment"], "seeds": [1],
            "sampler": "tpe", "sampler_seed": 0, "target": 0.95, "cost_metric": "gpu_hours", "constrained": False,
            "trials_requested": 2, "trials": {"complete": 2}, "complete": True, "space": [], "fixed": {},
            "references": {"oracle": {"ok": True, "seeds": 1,
                                      "metrics": {"cost": 0.5, "gpu_hours": 0.5, "slo_attainment": 0.90}}},
            "frontier": {"points": frontier}, "command": "scalearena tune ...", "dashboard": "optuna-dashboard ..."}
    (tmp_path / "tune.json").write_text(json.dumps(meta))
    pd.DataFrame([
        {"number": 0, "label": "trial-0000", "state": "complete", "default": True, "on_front": True,
         "meets_target": False, "cost": 0.4, "gpu_hours": 0.4, "slo_attainment": 0.60, "goodput_rps": 1.0,
         "params.tolerance": 0.1},
        {"number": 1, "label": "trial-0001", "state": "complete", "default": False, "on_front": True,
         "meets_target": False, "cost": 0.3, "gpu_hours": 0.3, "slo_attainment": 0.80, "goodput_rps": 1.0,
         "params.tolerance": 0.3}]).to_parquet(tmp_path / "trials.parquet")
    page = write_tune_report(tmp_path).read_text()
    assert "Chart.js v4.6.1" in page  # the figure's library is inlined: without it the scatter stays blank
    assert "· seed 1 ·" in page  # one seed, named as such (was "seeds 1", read as a count)
    assert "Pareto front (2 trials)" in page  # both trials on_front
    assert "bound (oracle frontier)" in page and "bound: the oracle frontier (2 hindsight runs" in page
    # hull (0.30, 0.2) -> (0.90, 0.5), slope 0.5 per unit attainment:
    # trial-0000 at 0.60: 0.2 + 0.5 x 0.30 = 0.35 -> 0.4 - 0.35 = +0.050
    # trial-0001 at 0.80: 0.2 + 0.5 x 0.50 = 0.45 -> 0.3 - 0.45 = -0.15, beyond 5 % of 0.45: a violation
    assert "+0.050" in page and "-0.150 (bound violation)" in page and 'class="violation"' in page
    assert "every configuration of this study is a hindsight bound" not in page  # hpa is deployable
    (tmp_path / "tune.json").write_text(json.dumps({**meta, "autoscaler": "oracle", "kind": "oracle"}))
    page = write_tune_report(tmp_path, force=True).read_text()
    assert "<b>oracle reads the future arrival schedule:</b> every configuration of this study is a hindsight " \
           "bound, not deployable" in page


def _study(tmp_path: Path, cost_metric: str) -> str:
    meta = {"scenario": "s", "autoscaler": "hpa", "objectives": [cost_metric, "slo_attainment"], "seeds": [1],
            "sampler": "tpe", "sampler_seed": 0, "target": 0.95, "cost_metric": cost_metric, "constrained": False,
            "trials_requested": 1, "trials": {"complete": 1}, "complete": True, "space": [], "fixed": {},
            "references": {}, "command": "scalearena tune ...", "dashboard": "optuna-dashboard ..."}
    (tmp_path / "tune.json").write_text(json.dumps(meta))
    # one trial: 0.5 GPU-h on a GPU at 3 USD per GPU-h = 1.50 USD; its variant's cost weight 2.5 -> 1.25 variantCost·h
    pd.DataFrame([{"number": 0, "label": "trial-0000", "state": "complete", "default": False, "on_front": True,
                   "meets_target": True, "cost": 1.25, "cost_usd": 1.5, "gpu_hours": 0.5, "slo_attainment": 0.97,
                   "goodput_rps": 1.0}]).to_parquet(tmp_path / "trials.parquet")
    return write_tune_report(tmp_path, force=True).read_text()


def test_tune_page_shows_usd_and_labels_variant_cost_only_when_the_study_asked_for_it(tmp_path: Path) -> None:
    page = _study(tmp_path, "cost_usd")  # the default objective
    assert "trial-0000: 97.0% SLO attainment at 1.50 USD (0.500 GPU-h)" in page
    assert "<th>cost (USD)</th>" in page and "variantCost" not in page.split("<footer>")[0]
    page = _study(tmp_path, "cost")  # --objective cost: the paper's unit, said so
    assert "trial-0000: 97.0% SLO attainment at 1.250 variantCost·h (0.500 GPU-h)" in page
    assert "<th>cost (variantCost·h)</th>" in page and "not USD" in page
