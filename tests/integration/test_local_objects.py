"""A KEDA ScaledObject with a PrometheusRule on CLUSTER=local: the rule group becomes a rule file of the
run's real Prometheus, the trigger's PromQL (over the recorded series) goes to it through
/api/v1/query, and the same KEDA policy as in the simulator scales the real engine processes.

Time scale 1 (an object's intervals are real seconds): the run takes about 40 s of wall time.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from scalearena.harness.config.scenario import scenario_from_data
from tests.integration.test_local_backend import run_local_config

pytestmark = [
    pytest.mark.local,
    pytest.mark.skipif(shutil.which("prometheus") is None, reason="needs prometheus (scripts/ensure-prometheus.sh)"),
]

OBJECTS = """apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata: {name: running}
spec:
  groups:
    - name: model-running
      interval: 2s
      rules:
        - record: model:running:sum
          expr: sum by (namespace, model_name) (vllm:num_requests_running)
---
apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata: {name: on-running, namespace: "${NAMESPACE}"}
spec:
  scaleTargetRef: {name: va}
  pollingInterval: 5
  minReplicaCount: 1
  maxReplicaCount: 4
  triggers:
    - type: prometheus
      name: running
      metadata:
        query: sum(model:running:sum{namespace="${NAMESPACE}",model_name="m"})
        threshold: "4"
"""


def test_a_scaledobject_scales_real_engines_on_a_recorded_series(tmp_path: Path) -> None:
    (tmp_path / "so.yaml").write_text(OBJECTS)
    # 1 rps of 400 + 100 token requests holds ~2.2 in flight (TTFT 200 ms + 99 x 20 ms); 6 rps from 10 s
    # holds ~13: ceil(13 / 4) = 4 replicas (the legacy path allows max(2 x 1, 4) = 4 in one sync)
    data = {
        "name": "local-objects", "duration_s": 30, "drain_s": 5, "seed": 3,
        "cluster": {"variants": [{"name": "va", "model": "m", "gpu": "A100-80GB", "min_replicas": 1,
                                  "max_replicas": 4, "startup_s": 2, "termination_grace_s": 5,
                                  "engine": {"max_num_seqs": 16, "kv_cache_blocks": 512, "block_size": 16,
                                             "latency": {"kind": "constant", "ttft_ms": 200, "itl_ms": 20}}}]},
        "workload": {"arrivals": {"kind": "stepped", "poisson": False, "steps": [
            {"duration_s": 10, "rate_rps": 1}, {"duration_s": 20, "rate_rps": 6}]},
            "input_tokens": {"kind": "fixed", "value": 400}, "output_tokens": {"kind": "fixed", "value": 100}},
        "metrics": {"scrape_interval_s": 1, "sample_interval_s": 1},
        "autoscalers": [{"kind": "kubernetes", "name": "mine", "objects": ["so.yaml"],
                         "env": {"NAMESPACE": "scalearena"}}],
    }
    sc = scenario_from_data(data, "<test>", tmp_path)
    _, summary, _, ts = run_local_config(sc, sc.autoscalers[0], tmp_path / "run", time_scale=1.0)
    decisions = [json.loads(x) for x in (tmp_path / "run" / "decisions.jsonl").read_text().splitlines()]
    values = [r["values"]["triggers"]["running"]["value"] for d in decisions for r in d["reasons"]
              if r["rule"] == "trigger"]
    assert any(v is not None and v > 4 for v in values), values  # the recorded series reached the trigger
    assert ts["spec_replicas"].max() >= 3, ts[["t_s", "spec_replicas", "ready_replicas"]].to_string()
    assert summary["requests_ok"] + sum(summary["failures"].values()) == summary["requests_total"] == 130
