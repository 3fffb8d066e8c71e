"""A user's own HPA object run in the simulator (harness/objects, controllers/kubernetes.py).

The built-in ``hpa`` preset and the objects it renders for a cluster (the HorizontalPodAutoscaler
of harness/backends/kube/scenario.py ``hpa_objects``, what CLUSTER=kind applies, read back with the
prometheus-adapter rules of manifests/) must take the same decision at every sync of the same
run: the objects' metrics are read as PromQL from the in-memory engine, the preset's from the
view's pod samples, and the two are the same numbers.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import yaml

from scalearena.harness.backends.kube.scenario import hpa_objects
from scalearena.harness.backends.sim import SimBackend
from scalearena.harness.scenario import scenario_from_data
from scalearena.reports.results import RunWriter

SCENARIO: dict[str, Any] = {
    "name": "objects", "duration_s": 300, "drain_s": 30, "seed": 2,
    "cluster": {"variants": [{
        "name": "va", "model": "m", "gpu": "H100-SXM", "min_replicas": 1, "max_replicas": 12, "startup_s": 20,
        "engine": {"max_num_seqs": 8, "kv_cache_blocks": 1024, "block_size": 16,
                   "latency": {"kind": "constant", "ttft_ms": 100, "itl_ms": 20}}}]},
    "router": {"admission": {"kind": "none"}},
    "workload": {"arrivals": {"kind": "stepped", "steps": [{"duration_s": 120, "rate_rps": 2},
                                                             {"duration_s": 180, "rate_rps": 5}]},
                 "input_tokens": {"kind": "fixed", "value": 200}, "output_tokens": {"kind": "fixed", "value": 100}},
    "metrics": {"scrape_interval_s": 15, "sample_interval_s": 5},
}


def _decisions(sc: Any, cfg: Any, out: Path) -> list[dict[str, Any]]:
    w = RunWriter(out, {})
    SimBackend().run(sc, cfg, w, None)
    w.finish()
    return [json.loads(line) for line in (out / "decisions.jsonl").read_text().splitlines()]


def test_the_hpa_preset_and_its_objects_decide_alike(tmp_path: Path) -> None:
    adapter = Path(__file__).resolve().parents[2] / "manifests/autoscalers/prometheus-adapter/config.yaml"
    sc = scenario_from_data({**SCENARIO, "autoscalers": [{"kind": "hpa"}]}, "<test>")
    (tmp_path / "hpa.yaml").write_text(yaml.safe_dump_all(hpa_objects(sc, sc.autoscalers[0])))
    data = {**SCENARIO, "autoscalers": [{"kind": "hpa"}, {"kind": "kubernetes", "name": "mine",
                                                          "objects": ["hpa.yaml", str(adapter)]}]}
    sc = scenario_from_data(data, "<test>", tmp_path)
    preset = _decisions(sc, sc.autoscalers[0], tmp_path / "preset")
    mine = _decisions(sc, sc.autoscalers[1], tmp_path / "mine")
    assert [(d["t_s"], d["desired_replicas"]) for d in mine] == [(d["t_s"], d["desired_replicas"]) for d in preset]
    assert max(d["desired_replicas"] for d in mine) > 1  # the step to 5 RPS scales it out
    checked = 0
    for d in mine:
        metric = [r["values"] for r in d["reasons"] if r["rule"] == "metric"]
        limited = any(r["rule"] in ("rate_limit", "clamp", "stabilisation") for r in d["reasons"])
        if d["action"] == "scale_up" and not limited and all(m["rule"] == "scaled" for m in metric):
            checked += 1
            # calcPlainMetricReplicas without missing pods: ceil(average / target x pods with a sample)
            best = max(math.ceil(m["usage"] / m["target"] * m["with_metrics"] - 1e-9) for m in metric)
            assert d["desired_replicas"] == best, d
    assert checked >= 1
