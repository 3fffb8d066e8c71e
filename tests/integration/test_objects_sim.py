"""A user's own HPA object run in the simulator (harness/objects, controllers/kubernetes.py).

The built-in ``hpa`` preset and the objects it renders for a cluster (the HorizontalPodAutoscaler
of harness/kube/scenario.py ``hpa_objects``, what CLUSTER=kind applies, read back with the
prometheus-adapter rules of manifests/) must take the same decision at every sync of the same
run: the objects' metrics are read as PromQL from the in-memory engine, the preset's from the
view's pod samples, and the two are the same numbers.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import yaml

from scalearena.harness.config.scenario import scenario_from_data
from scalearena.harness.kube.keda import keda_objects
from scalearena.harness.kube.scenario import hpa_objects
from scalearena.harness.sim.backend import SimBackend
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


KEDA_PRESETS = [
    {"kind": "keda"},  # the paper's preset: queue signal, threshold 3, no behavior (the HPA's legacy path)
    {"kind": "keda", "polling_interval_s": 15, "triggers": [
        {"name": "queue", "query": "queue", "threshold": 1},
        {"name": "running", "query": "running_sum", "threshold": 16}],
     "scaling_modifiers": {"formula": "max(queue / 1, running / 16)", "target": 1},
     "fallback": {"failure_threshold": 3, "replicas": 2, "behavior": "currentReplicasIfHigher"},
     "behavior": {"scale_up": {"stabilization_window_seconds": 0,
                               "policies": [{"type": "Pods", "value": 2, "period_seconds": 30}]}}},
]


@pytest.mark.parametrize("preset", KEDA_PRESETS, ids=["shorthand", "formula"])
def test_the_keda_preset_and_its_scaledobject_decide_alike(tmp_path: Path, preset: dict[str, Any]) -> None:
    """The ScaledObject kube/keda.py renders for the preset (what CLUSTER=kind applies), read back as a
    ``kubernetes`` autoscaler, runs its PromQL triggers on the in-memory engine and decides as the preset
    does from its signals, at every sync."""
    sc = scenario_from_data({**SCENARIO, "autoscalers": [preset]}, "<test>")
    (tmp_path / "so.yaml").write_text(yaml.safe_dump_all(keda_objects(sc, sc.autoscalers[0])))
    data = {**SCENARIO, "autoscalers": [preset, {"kind": "kubernetes", "name": "mine", "objects": ["so.yaml"]}]}
    sc = scenario_from_data(data, "<test>", tmp_path)
    preset_d = _decisions(sc, sc.autoscalers[0], tmp_path / "preset")
    mine = _decisions(sc, sc.autoscalers[1], tmp_path / "mine")
    assert [(d["t_s"], d["desired_replicas"]) for d in mine] == [(d["t_s"], d["desired_replicas"]) for d in preset_d]
    assert max(d["desired_replicas"] for d in mine) > 1  # the step to 5 RPS scales it out
    # the object's triggers are PromQL read through the metrics source, the preset's are signals
    first = next(r for r in mine[-1]["reasons"] if r["rule"] in ("trigger", "trigger_error"))
    assert all("vllm:num_requests" in t["query"] for t in first["values"]["triggers"].values())
    assert [r["rule"] for r in mine[-1]["reasons"]][0] == "object"


def test_a_scaledobject_scales_from_zero_on_the_scraped_gateway_queue(tmp_path: Path) -> None:
    """minReplicaCount 0: nothing runs until the gateway queue (scalearena_router_queue_size, scraped every
    15 s) shows the held requests; KEDA's loop activates to 1, and back to 0 after the cooldown."""
    so = """apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata: {name: from-zero}
spec:
  scaleTargetRef: {name: va}
  pollingInterval: 5
  cooldownPeriod: 60
  minReplicaCount: 0
  maxReplicaCount: 4
  triggers:
    - type: prometheus
      metadata:
        query: sum(scalearena_router_queue_size{model_name="m"}) + (sum(vllm:num_requests_running) or vector(0))
        threshold: "4"
"""
    (tmp_path / "so.yaml").write_text(so)
    variant = {**SCENARIO["cluster"]["variants"][0], "min_replicas": 0, "initial_replicas": 0}
    data = {**SCENARIO, "cluster": {"variants": [variant]}, "duration_s": 200, "drain_s": 200,
            "workload": {**SCENARIO["workload"], "arrivals": {"kind": "stepped", "steps": [
                {"duration_s": 40, "rate_rps": 0}, {"duration_s": 60, "rate_rps": 1}, {"duration_s": 100, "rate_rps": 0}]}},
            "autoscalers": [{"kind": "kubernetes", "name": "mine", "objects": ["so.yaml"]}]}
    sc = scenario_from_data(data, "<test>", tmp_path)
    ds = _decisions(sc, sc.autoscalers[0], tmp_path / "run")
    ups = [d for d in ds if any(r["rule"] == "keda_activate" for r in d["reasons"])]
    downs = [d for d in ds if any(r["rule"] == "keda_deactivate" for r in d["reasons"])]
    # seed 2 scrapes at 7.80 + 15k s (the seeded scrape phase); the first request arrives at 43.4 s and is
    # held at the gateway; the scrape at 37.8 s saw none, the one at 52.8 s sees the held requests, and the
    # next 5 s poll (55 s, between two 15 s HPA syncs) activates 0 -> 1
    assert ups and ups[0]["t_s"] == 55.0 and ups[0]["desired_replicas"] == 1
    assert not [d for d in ds if d["t_s"] < 55.0 and d["desired_replicas"] > 0]
    # deactivation: the sync at 90 s reads the scrape at 82.8 s (active: requests running); so does the poll at
    # 95 s; the poll at 100 s reads the scrape at 97.8 s (nothing running or held: inactive, as the sync at
    # 105 s shows). Last active poll 95 s; the first poll more than cooldownPeriod 60 s later is 160 s.
    trig = {d["t_s"]: r["values"]["active"] for d in ds for r in d["reasons"] if r["rule"] == "trigger"}
    assert (trig[90.0], trig[105.0]) == (True, False)
    assert downs and (downs[0]["t_s"], downs[0]["desired_replicas"]) == (160.0, 0)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["requests_ok"] == summary["requests_total"] > 0


def test_an_hpa_above_the_variants_max_replicas_is_recorded_at_the_cap(tmp_path: Path) -> None:
    """An HPA object with maxReplicas 7 on a variant with max_replicas 4 (the cluster's room for it): the run
    warns once at its start, and every decision records the replicas applied (at most 4, as the time series
    holds) with the HPA's own count, up to its 7, in audit.requested_replicas; before, decisions.jsonl said
    "4 -> 7" while the simulator held 4."""
    from tests.unit.harness.cli.test_cli import scalearena

    variant = {**SCENARIO["cluster"]["variants"][0], "max_replicas": 4}
    data = {**SCENARIO, "cluster": {"variants": [variant]}}
    sc = scenario_from_data({**data, "autoscalers": [{"kind": "hpa"}]}, "<test>")
    objects = hpa_objects(sc, sc.autoscalers[0])  # the preset's HPA (maxReplicas 4) and adapter rules ...
    (hpa,) = [o for o in objects if o["kind"] == "HorizontalPodAutoscaler"]
    hpa["spec"]["maxReplicas"] = 7  # ... with the object's cap above the variant's
    (tmp_path / "hpa.yaml").write_text(yaml.safe_dump_all(objects))
    adapter = Path(__file__).resolve().parents[2] / "manifests/autoscalers/prometheus-adapter/config.yaml"
    data["autoscalers"] = [{"kind": "kubernetes", "name": "mine", "objects": ["hpa.yaml", str(adapter)]}]
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(data))
    r = scalearena("run", str(tmp_path / "s.yaml"), "--out", str(tmp_path / "out"))
    assert r.returncode == 0, r.stderr
    warning = (f"warning: autoscaler 'mine': {tmp_path / 'hpa.yaml'}: HorizontalPodAutoscaler/va: maxReplicas 7 "
               "is above the max_replicas 4 of variant 'va'; the variant's max_replicas 4 caps it: the cluster has "
               "room for 4")
    assert r.stderr.count(warning) == 1, r.stderr
    run = tmp_path / "out" / "objects" / "mine"
    ds = [json.loads(line) for line in (run / "decisions.jsonl").read_text().splitlines()]
    assert max(d["desired_replicas"] for d in ds) == 4
    capped = [d for d in ds if "requested_replicas" in d["audit"]]
    # the HPA asked past 4 (up to its own maxReplicas 7) while the step to 5 RPS lasted; each such decision
    # records 4 and ends with the reason that capped it
    assert capped and max(d["audit"]["requested_replicas"] for d in capped) == 7
    for d in capped:
        assert d["desired_replicas"] == 4 < d["audit"]["requested_replicas"] <= 7
        assert d["reasons"][-1]["values"] == {"requested": d["audit"]["requested_replicas"], "max_replicas": 4}
    assert not [d for d in ds if d["action"] == "scale_up" and d["current_replicas"] == 4]  # no "4 -> 7"
    import pyarrow.parquet as pq

    spec = pq.read_table(run / "timeseries.parquet", columns=["spec_replicas"]).column(0).to_pylist()
    assert max(spec) == 4
