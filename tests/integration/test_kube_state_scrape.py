"""The kind Prometheus' kube-state-metrics job, verbatim, in a real Prometheus: the series keep exactly the labels
the simulator gives them.

No API server here, so kubernetes_sd cannot run; the same targets reach Prometheus through file_sd instead,
carrying the ``__meta_kubernetes_*`` labels kubernetes_sd (role pod: one target per container port) gives the
kube-state-metrics pod of manifests/base/kube-state-metrics.yaml, and both jobs of manifests/base/prometheus.yaml
run with their relabelling and ``honor_labels`` unchanged. The exporter is the harness's own kube-state-metrics
endpoint (harness/local/kube_state.py), which writes kube-state-metrics' exposition (``namespace`` and
``deployment`` labels, docs/metrics/workload/deployment-metrics.md); the real image was not run here.
"""
from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
import requests
import yaml

from scalearena.contracts.series import BY_NAME, KSM_REPLICAS, KSM_REPLICAS_UNAVAILABLE
from scalearena.harness.control.ports import ReplicaStatus
from scalearena.harness.kube.render import render
from scalearena.harness.local.kube_state import DeploymentCollector, KubeStateExporter
from scalearena.harness.local.prometheus import PrometheusProcess
from scalearena.harness.local.supervisor import Supervisor

pytestmark = [
    pytest.mark.local,
    pytest.mark.skipif(shutil.which("prometheus") is None, reason="needs prometheus (scripts/ensure-prometheus.sh)"),
]
ROOT = Path(__file__).resolve().parents[2]


def kind_config(targets: Path) -> dict:
    """manifests/base's prometheus.yml with each job's kubernetes_sd swapped for file_sd of ``targets``."""
    (cm,) = [o for o in render(ROOT / "manifests/base") if o["kind"] == "ConfigMap"
             and o["metadata"]["name"] == "prometheus-config"]
    conf = yaml.safe_load(cm["data"]["prometheus.yml"])
    conf["global"] = {"scrape_interval": "1s", "evaluation_interval": "1s"}
    for job in conf["scrape_configs"]:
        assert job.pop("kubernetes_sd_configs")[0]["role"] == "pod"
        job["file_sd_configs"] = [{"files": [str(targets)], "refresh_interval": "1s"}]
    return conf


def test_kube_state_metrics_series_carry_namespace_and_deployment_only(tmp_path: Path) -> None:
    collector = DeploymentCollector(["va-a100", "va-h100"])
    # va-a100: spec 3, 2 ready + 1 pending; va-h100: spec 1, 1 ready
    collector.update({"va-a100": ReplicaStatus(spec=3, ready=("p1", "p2"), pending=1, terminating=0),
                      "va-h100": ReplicaStatus(spec=1, ready=("p3",), pending=0, terminating=0)})
    exporter = KubeStateExporter(collector)
    address = exporter.start()
    sup = Supervisor(tmp_path / "logs")
    prom = PrometheusProcess(sup, tmp_path, scrape_interval_s=1.0)
    try:
        pod = {"__meta_kubernetes_namespace": "scalearena", "__meta_kubernetes_pod_name": "kube-state-metrics-x",
               "__meta_kubernetes_pod_phase": "Running",
               "__meta_kubernetes_pod_label_scalearena_io_component": "kube-state-metrics"}
        targets = tmp_path / "pods.json"  # what kubernetes_sd lists for that pod: both container ports
        targets.write_text(json.dumps([
            {"targets": [address], "labels": {**pod, "__meta_kubernetes_pod_container_port_name": "http-metrics"}},
            {"targets": [address.rsplit(":", 1)[0] + ":1"],
             "labels": {**pod, "__meta_kubernetes_pod_container_port_name": "telemetry"}}]))
        prom.config_path.write_text(yaml.safe_dump(kind_config(targets)))
        prom.start()
        deadline = time.monotonic() + 30
        result: list[dict] = []
        while time.monotonic() < deadline and len(result) < 2:
            r = requests.get(f"{prom.url}/api/v1/query", params={"query": KSM_REPLICAS}, timeout=2)
            result = r.json()["data"]["result"]
            time.sleep(0.2)
        active = prom.active_targets()
    finally:
        prom.stop()
        exporter.stop()
    # one target only: the http-metrics port in the kube-state-metrics job (not telemetry, not scalearena-pods)
    assert [(t["labels"]["job"], t["scrapeUrl"].rsplit("/", 1)[0]) for t in active] == [
        ("kube-state-metrics", f"http://{address}")]
    assert sorted((s["metric"]["deployment"], s["value"][1]) for s in result) == [("va-a100", "3"), ("va-h100", "1")]
    for s in result:  # status.replicas: va-a100 2 ready + 1 pending = 3; va-h100 1
        labels = set(s["metric"]) - {"__name__", "job", "instance"}  # Prometheus' own two
        assert labels == set(BY_NAME[KSM_REPLICAS].labels) == {"namespace", "deployment"}
        assert s["metric"]["namespace"] == "scalearena"
    assert BY_NAME[KSM_REPLICAS_UNAVAILABLE].labels == BY_NAME[KSM_REPLICAS].labels
