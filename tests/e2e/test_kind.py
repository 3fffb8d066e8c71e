"""End-to-end on a real kind cluster: only with KIND_E2E=1 (Docker, kind, kubectl needed).

These were written against kind v0.29.0 / kubectl v1.33 and have NOT been run
in the environment where they were written (no Docker engine there); CI runs
them nightly (.github/workflows/ci.yml, job bench-kind). Expect about 10-15
minutes: cluster creation ~2 min, image builds ~3 min, image pulls, one short
run per autoscaler, and one llm-d recipe run (llmd-slo on kube-state-metrics).

The same checks run on the real control plane without Docker in tests/e2e/test_kwok.py (in `make test` and
`.ci/run`): fake-GPU nodes, the WVA controller's VariantAutoscaling conditions and its External metric
through prometheus-adapter, every request accounted for in each run, and the llmd-slo recipe on
kube-state-metrics with its rule file; the real HPA controller runs in tests/e2e/test_kwok_fidelity.py.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(os.environ.get("KIND_E2E") != "1",
                       reason="needs a real kind cluster (Docker, kind, kubectl): set KIND_E2E=1"),
]

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cluster():  # noqa: ANN201
    from scalearena.harness.kube.cluster import KindCluster, Shell, build_images, preflight

    preflight("kind")
    kind = KindCluster(Shell(), ROOT / "manifests/kind/cluster.yaml")
    kind.create(owner="suite")  # the runs below reuse it, as a suite does after `scalearena kind up`
    kind.load_images(build_images(Shell(), ROOT))
    yield kind
    if os.environ.get("KIND_E2E_KEEP") != "1":
        kind.delete()


def test_workers_have_fake_gpus(cluster) -> None:  # noqa: ANN001
    nodes = cluster.kubectl.get_json("nodes", "-l", "scalearena.io/fake-gpus")["items"]
    assert len(nodes) == 4  # 2 x A100, H100, H200 (manifests/kind/cluster.yaml)
    for n in nodes:
        assert int(n["status"]["allocatable"].get("nvidia.com/gpu", "0")) >= 4


def test_wva_controller_writes_conditions(cluster) -> None:  # noqa: ANN001
    from scalearena.harness.config.scenario import load_scenario
    from scalearena.harness.kube.backend import KubeBackend

    k = cluster.kubectl
    sc = load_scenario(ROOT / "workloads/scenarios/exp2-cost-aware.yaml")
    objs = KubeBackend("kind").plan(sc, sc.autoscaler("wva"))  # what a run applies (hardened, checked)
    crds = [o for o in objs if o["kind"] == "CustomResourceDefinition"]
    k.apply(crds)
    k.wait_established("variantautoscalings.llmd.ai")
    k.apply([o for o in objs if o["kind"] != "CustomResourceDefinition"])
    for d in ("prometheus", "gateway", "va-a100", "va-h100", "wva-controller", "prometheus-adapter"):
        k.rollout("scalearena", d, 600)
    deadline = time.time() + 180
    while time.time() < deadline:
        va = k.get_json("-n", "scalearena", "variantautoscalings.llmd.ai", "va-a100")
        conds = {c["type"]: c["status"] for c in (va.get("status") or {}).get("conditions", [])}
        if conds.get("TargetResolved") == "True" and "MetricsAvailable" in conds:
            break
        time.sleep(5)
    assert conds.get("TargetResolved") == "True", json.dumps(va.get("status"))
    # the External metric the HPA reads is served by prometheus-adapter
    raw = k.run("get", "--raw", "/apis/external.metrics.k8s.io/v1beta1/namespaces/scalearena/wva_desired_replicas"
                ).stdout
    assert "wva_desired_replicas" in raw
    k.run("delete", "namespace", "scalearena", "--wait=true", "--timeout=300s")
    k.delete([o for o in objs if o["kind"] not in ("CustomResourceDefinition", "Namespace")])


def test_short_run_accounts_for_every_request(cluster, tmp_path: Path) -> None:  # noqa: ANN001
    from scalearena.harness.config.scenario import load_scenario
    from scalearena.harness.kube.backend import KubeBackend
    from scalearena.reports.results import RunWriter

    sc = load_scenario(ROOT / "workloads/scenarios/exp2-cost-aware.yaml", overrides=["duration_s=60"])
    w = RunWriter(tmp_path / "run", {"scenario": sc.name, "autoscaler": "hpa", "cluster": "kind", "seed": sc.seed,
                                     "duration_s": sc.duration_s, "slo": sc.slo.model_dump(), "variants": []})
    KubeBackend("kind", keep=True).run(sc, sc.autoscaler("hpa"), w)
    s = w.finish()
    assert s["requests_total"] == s["requests_ok"] + sum(s["failures"].values())
    assert s["requests_total"] > 0


def test_llm_d_slo_recipe_runs_on_kube_state_metrics_and_its_rules(cluster, tmp_path: Path) -> None:  # noqa: ANN001
    """Issue 13 item 1 on kind: `llmd-slo` as its objects (two ScaledObjects, the recording rules as a Prometheus
    rule file, KEDA installed by the backend) on the in-cluster kube-state-metrics. Rendered and validated offline
    (tests/unit/harness/kube/test_kind_recipes.py); this is the check that it runs."""
    import urllib.parse

    from scalearena.harness.config.scenario import load_scenario
    from scalearena.harness.kube.backend import KubeBackend
    from scalearena.reports.results import RunWriter

    k = cluster.kubectl
    k.run("delete", "namespace", "scalearena", "--ignore-not-found", "--wait=true", "--timeout=300s")  # no HPA left
    sc = load_scenario(ROOT / "workloads/scenarios/exp2-cost-aware.yaml", overrides=["duration_s=60"])
    w = RunWriter(tmp_path / "run", {"scenario": sc.name, "autoscaler": "llmd-slo", "cluster": "kind",
                                     "seed": sc.seed, "duration_s": sc.duration_s, "slo": sc.slo.model_dump(),
                                     "variants": []})
    KubeBackend("kind", keep=True).run(sc, sc.autoscaler("llmd-slo"), w)  # readiness waited for KSM and KEDA
    s = w.finish()
    assert s["requests_total"] == s["requests_ok"] + sum(s["failures"].values()) and s["requests_ok"] > 0

    def query(q: str) -> list[dict]:
        path = ("/api/v1/namespaces/scalearena/services/prometheus:9090/proxy/api/v1/query?query="
                + urllib.parse.quote(q))
        return json.loads(k.run("get", "--raw", path).stdout)["data"]["result"]

    replicas = query('kube_deployment_status_replicas{namespace="scalearena"}')
    variants = {v.name for v in sc.cluster.variants}
    assert {r["metric"]["deployment"] for r in replicas} >= variants
    for r in replicas:  # the simulator's labels (contracts/series.py), plus Prometheus' job and instance
        assert set(r["metric"]) - {"__name__", "job", "instance"} == {"namespace", "deployment"}, r["metric"]
    assert query('llmd_slo:saturation{model_name="llama3-70b"}')  # the rule file was loaded and evaluated
    sos = k.get_json("-n", "scalearena", "scaledobjects")["items"]
    assert sorted(o["metadata"]["name"] for o in sos) == sorted(f"llmd-slo-{v}" for v in variants)
    k.run("delete", "namespace", "scalearena", "--wait=true", "--timeout=300s")
