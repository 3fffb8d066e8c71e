"""End-to-end on the real Kubernetes control plane (CLUSTER=kwok): etcd, kube-apiserver, kube-controller-manager,
kube-scheduler and KWOK built from source (`scalearena kwok tools`) and run here as processes.

Runs in `make test` wherever Go is installed (the first run builds the tools: see docs/kubernetes.md for the
time); skipped with the reason where it is not. `.ci/run` sets SCALEARENA_REQUIRE_KWOK=1, which turns that skip
into a failure, so CI cannot go green without running these. The kwok tier is three files, each a unit of
pytest-xdist's `--dist loadfile`: this one (one control plane for its runs), test_kwok_start.py (starts that
fail) and test_kwok_fidelity.py (the sim-vs-real short version at time scale 2, on a control plane of its own;
`make fidelity-check`, after `make test`). Runs on one host take turns (kube/kwok_net.py ``RunLock``)."""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.kwokkit import ROOT, ours, run_on, while_up

pytestmark = [pytest.mark.e2e, pytest.mark.kwok]


@pytest.fixture(scope="module")
def cluster(tools_built: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    from scalearena.harness.kube.kwok import KwokCluster

    folder = tmp_path_factory.mktemp("kwok") / "cp"
    c = KwokCluster(folder, log=print)
    # sized as `kwok up --suite workloads/suites/kind.yaml` sizes it: {A100: 4, H100: 10} (exp2's va-h100 max 10)
    c.up({"NVIDIA-A100-SXM4-80GB": 4, "NVIDIA-H100-80GB-HBM3": 10}, owner="suite")
    yield c
    assert c.down() == []
    assert ours(folder) == []


def test_nodes_have_fake_gpus_and_loopback_pod_cidrs(cluster) -> None:  # noqa: ANN001
    nodes = cluster.kubectl.get_json("nodes", "-l", "type=kwok")["items"]
    assert len(nodes) == 4  # kind's workers: 2 x A100, H100, H200
    gpus = {n["metadata"]["name"]: n["status"]["allocatable"]["nvidia.com/gpu"] for n in nodes}
    # A100: 4 asked over 2 nodes, each keeps its label's 4; H100: 10 on its one node, raised from 4; H200: 4
    assert gpus == {"kwok-worker-1": "4", "kwok-worker-2": "4", "kwok-worker-3": "10", "kwok-worker-4": "4"}
    # the block this control plane claimed (kube/kwok_net.py): 127.(8k + i).0.0/16 for node i
    block = cluster.state.pod_block
    cidrs = {n["metadata"]["name"]: n["spec"]["podCIDR"] for n in nodes}
    assert cidrs == {f"kwok-worker-{i}": f"127.{8 * block + i}.0.0/16" for i in (1, 2, 3, 4)}
    ready = [c["status"] for n in nodes for c in n["status"]["conditions"] if c["type"] == "Ready"]
    assert ready == ["True"] * 4


def test_server_version_is_the_pinned_release(cluster) -> None:  # noqa: ANN001
    import yaml

    want = yaml.safe_load((ROOT / "tools/versions.yaml").read_text())["kubernetes"]
    v = json.loads(cluster.kubectl.run("version", "-o", "json").stdout)
    assert v["serverVersion"]["gitVersion"] == want
    assert v["clientVersion"]["gitVersion"] == want


def test_wva_on_prometheus_adapter_then_llm_d_slo_on_keda_then_wva_through_keda(
        cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    """Three runs on one control plane, in the order that matters.

    1. WVA's HPA actuation reads wva_desired_replicas as an External metric served by prometheus-adapter while
       no KEDA runs (tests/e2e/test_kind.py's wva checks, read while the stack is up). Its run folder is
       relative, as `--out results/kwok` gives it (the processes start in other folders).
    2. The llm-d SLO recipe as its objects (two ScaledObjects, the recording rules as a Prometheus rule file)
       on kube-state-metrics built from source; its KEDA stays installed for the cluster's lifetime, as on kind.
    3. WVA again: it must not fight KEDA for v1beta1.external.metrics.k8s.io (issue 26's first blocker: the
       API server rejected the adapter's APIService, insecureSkipTLSVerify beside KEDA's injected caBundle):
       it actuates through KEDA."""
    assert not cluster.keda_running()
    seen: dict[str, object] = {}

    def wva_state(sampler) -> None:  # noqa: ANN001
        va = cluster.kubectl.get_json("-n", "scalearena", "variantautoscalings.llmd.ai", "va-a100")
        seen["conditions"] = {c["type"]: c["status"] for c in (va.get("status") or {}).get("conditions", [])}
        seen["external"] = cluster.kubectl.run(
            "get", "--raw", "/apis/external.metrics.k8s.io/v1beta1/namespaces/scalearena/wva_desired_replicas").stdout

    monkeypatch.chdir(tmp_path)
    with while_up(wva_state):
        s = run_on(cluster, Path("a"), "wva")  # served requests, left no namespace behind (asserted in run_on)
    # the actuation HPA was made by the apply: its syncs' phase is the lead from then to the load's start
    (lead,) = [e for e in s["events"] if e["kind"] == "control_lead"]
    assert lead["origin"] == "apply" and lead["control_lead_s"] > 0 and abs(lead["t_s"] + lead["control_lead_s"]) < 1e-3, lead
    assert seen["conditions"].get("TargetResolved") == "True" and "MetricsAvailable" in seen["conditions"], seen
    assert "wva_desired_replicas" in str(seen["external"])  # served by prometheus-adapter to the real HPA

    def slo_series(sampler) -> None:  # noqa: ANN001
        seen["replicas"] = sampler.metrics.query('kube_deployment_status_replicas{namespace="scalearena"}')
        seen["rule"] = sampler.metrics.query('llmd_slo:saturation{model_name="llama3-70b"}')
        seen["scaledobjects"] = cluster.kubectl.get_json("-n", "scalearena", "scaledobjects")["items"]

    with while_up(slo_series):
        s = run_on(cluster, tmp_path, "llmd-slo")
    # the ScaledObjects' HPAs were made by KEDA's operator, not by the apply (kube/sampling.py hpa_origin)
    (lead,) = [e for e in s["events"] if e["kind"] == "control_lead"]
    assert lead["origin"].startswith("HPA keda-hpa-llmd-slo-va-") and lead["control_lead_s"] > 0, lead
    assert {r["metric"]["deployment"] for r in seen["replicas"]} >= {"va-a100", "va-h100"}
    for r in seen["replicas"]:  # the simulator's labels (contracts/series.py), plus Prometheus' job and instance
        assert set(r["metric"]) - {"__name__", "job", "instance"} == {"namespace", "deployment"}, r["metric"]
    assert seen["rule"], "the recipe's rule file was loaded and evaluated"
    assert sorted(o["metadata"]["name"] for o in seen["scaledobjects"]) == ["llmd-slo-va-a100", "llmd-slo-va-h100"]
    assert cluster.keda_running()
    svc = cluster.kubectl.get_json("apiservice", "v1beta1.external.metrics.k8s.io")["spec"]["service"]
    assert (svc["namespace"], svc["name"]) == ("keda", "keda-metrics-apiserver")

    run_on(cluster, tmp_path / "b", "wva")
    svc = cluster.kubectl.get_json("apiservice", "v1beta1.external.metrics.k8s.io")["spec"]["service"]
    assert svc["namespace"] == "keda"  # left to KEDA
