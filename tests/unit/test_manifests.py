"""Every kustomization renders, every object validates offline, RBAC stays least-privilege.

Schemas: Kubernetes v1.33 (the kind node image kindest/node:v1.33.1) through
kubernetes-validate in strict mode (unknown fields fail); VariantAutoscaling
through the OpenAPI schema of our own CRD. KEDA's ScaledObject schema is not
vendored here, so ScaledObjects get a structural check of the fields KEDA
requires.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest
import yaml

from scalearena.harness.backends.kube.render import object_key, render

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "manifests"
K8S_VERSION = "1.33.0"
KUSTOMIZATIONS = sorted(p.parent.relative_to(MANIFESTS).as_posix() for p in MANIFESTS.rglob("kustomization.yaml"))
EXTRA_FILES = ["autoscalers/wva/keda-actuation.yaml"]  # valid alternatives not listed in a kustomization


def all_objects() -> list[tuple[str, dict]]:
    out = [(k, o) for k in KUSTOMIZATIONS for o in render(MANIFESTS / k)]
    for f in EXTRA_FILES:
        out += [(f, o) for o in yaml.safe_load_all((MANIFESTS / f).read_text()) if o]
    return out


def crd_schema() -> dict:
    crd = yaml.safe_load((MANIFESTS / "autoscalers/wva/crd.yaml").read_text())
    return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


def test_every_kustomization_is_found() -> None:
    assert {"base", "overlays/kind", "overlays/gpu-pool", "autoscalers/wva", "autoscalers/hpa",
            "autoscalers/keda", "autoscalers/prometheus-adapter"} <= set(KUSTOMIZATIONS)


@pytest.mark.parametrize("where,obj", all_objects(), ids=lambda x: x if isinstance(x, str) else x["kind"])
def test_object_validates(where: str, obj: dict) -> None:
    if obj["kind"] == "VariantAutoscaling":
        jsonschema.validate(obj, crd_schema())
    elif obj["kind"] == "ScaledObject":
        spec = obj["spec"]
        assert spec["scaleTargetRef"]["name"] and spec["triggers"], where
        for t in spec["triggers"]:
            assert t["type"] == "prometheus" and {"serverAddress", "query", "threshold"} <= set(t["metadata"])
    elif obj["kind"] == "InferencePool":
        assert_inferencepool_v1(obj)
    else:
        kubernetes_validate.validate(obj, K8S_VERSION, strict=True)


def assert_inferencepool_v1(obj: dict) -> None:
    """The fields inference.networking.k8s.io/v1 requires, with their types and bounds."""
    assert obj["apiVersion"] == "inference.networking.k8s.io/v1"
    spec = obj["spec"]
    assert set(spec) <= {"selector", "targetPorts", "endpointPickerRef"}
    labels = spec["selector"]["matchLabels"]
    assert labels and all(isinstance(v, str) and len(v) <= 63 for v in labels.values())
    assert len(spec["targetPorts"]) == 1 and 1 <= spec["targetPorts"][0]["number"] <= 65535
    ref = spec["endpointPickerRef"]
    assert ref["name"] and ref.get("kind", "Service") == "Service" and 1 <= ref["port"]["number"] <= 65535


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not on PATH: cannot compare with kustomize")
@pytest.mark.parametrize("kustomization", KUSTOMIZATIONS)
def test_builtin_renderer_matches_kubectl_kustomize(kustomization: str) -> None:
    out = subprocess.run(["kubectl", "kustomize", str(MANIFESTS / kustomization)], capture_output=True, text=True,
                         check=True).stdout
    theirs = {object_key(o): o for o in yaml.safe_load_all(out) if o}
    mine = {object_key(o): o for o in render(MANIFESTS / kustomization)}
    assert mine == theirs


def test_rbac_is_least_privilege() -> None:
    rules_seen = 0
    for where, o in all_objects():
        if o["kind"] in ("Role", "ClusterRole"):
            for rule in o["rules"]:
                rules_seen += 1
                for field in ("verbs", "resources", "apiGroups"):
                    assert "*" not in rule.get(field, []), f"{where} {o['metadata']['name']}: wildcard {field}"
                assert "secrets" not in rule.get("resources", []), f"{where}: access to secrets"
                assert not {"escalate", "bind", "impersonate"} & set(rule["verbs"])
        if o["kind"] in ("RoleBinding", "ClusterRoleBinding"):
            assert o["roleRef"]["name"] not in ("cluster-admin", "admin", "edit"), where
    assert rules_seen >= 8


def test_wva_controller_can_write_status_and_scale_but_not_spec() -> None:
    role = next(o for _, o in all_objects() if o["kind"] == "Role" and o["metadata"]["name"] == "wva-controller")
    grants = {(r["apiGroups"][0], res): set(r["verbs"]) for r in role["rules"] for res in r["resources"]}
    assert grants[("llmd.ai", "variantautoscalings")] == {"get", "list", "watch"}
    assert "patch" in grants[("llmd.ai", "variantautoscalings/status")]
    assert "patch" in grants[("apps", "deployments/scale")]
    assert grants[("apps", "deployments")] == {"get", "list", "watch"}


VALID_VA = {"apiVersion": "llmd.ai/v1alpha1", "kind": "VariantAutoscaling", "metadata": {"name": "va"},
            "spec": {"modelID": "llama3-70b", "variantCost": "2.5",
                     "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "va-h100"}}}


@pytest.mark.parametrize("path,value", [
    (("spec", "variantCost"), "cheap"),  # pattern ^\d+(\.\d+)?$
    (("spec", "variantCost"), 2.5),  # a string, as upstream
    (("spec", "scaleTargetRef", "kind"), "StatefulSet"),  # only Deployment
    (("spec", "modelID"), ""),  # minLength 1
])
def test_crd_rejects_bad_samples(path: tuple[str, ...], value: object) -> None:
    import copy

    va = copy.deepcopy(VALID_VA)
    node = va
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    jsonschema.validate(VALID_VA, crd_schema())
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(va, crd_schema())


def test_crd_rejects_missing_model_and_bad_condition() -> None:
    import copy

    va = copy.deepcopy(VALID_VA)
    del va["spec"]["modelID"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(va, crd_schema())
    va = copy.deepcopy(VALID_VA)
    va["status"] = {"conditions": [{"type": "TargetResolved", "status": "Maybe", "reason": "X", "message": "",
                                    "lastTransitionTime": "2026-03-01T10:00:00Z"}]}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(va, crd_schema())


def test_kind_config_four_fake_gpu_workers_and_scale_to_zero_gate() -> None:
    cfg = yaml.safe_load((MANIFESTS / "kind/cluster.yaml").read_text())
    workers = [n for n in cfg["nodes"] if n["role"] == "worker"]
    assert len(workers) == 4  # the H200 worker serves hetero-roofline's third variant
    assert cfg["featureGates"]["HPAScaleToZero"] is True
    products = sorted(w["labels"]["nvidia.com/gpu.product"] for w in workers)
    assert products == ["NVIDIA-A100-SXM4-80GB", "NVIDIA-A100-SXM4-80GB", "NVIDIA-H100-80GB-HBM3", "NVIDIA-H200"]
    assert all(int(w["labels"]["scalearena.io/fake-gpus"]) > 0 for w in workers)


def test_simulator_pinned_at_or_after_v0_7_0_with_kvcache() -> None:
    deps = [o for o in render(MANIFESTS / "overlays/kind") if o["kind"] == "Deployment"
            and o["metadata"]["labels"].get("scalearena.io/component") == "variant"]
    assert {d["metadata"]["name"] for d in deps} == {"va-a100", "va-h100"}
    for d in deps:
        c = d["spec"]["template"]["spec"]["containers"][0]
        m = re.fullmatch(r"ghcr\.io/llm-d/llm-d-inference-sim:v(\d+)\.(\d+)\.(\d+)(?:@sha256:[0-9a-f]{64})?", c["image"])
        assert m and tuple(map(int, m.groups())) >= (0, 7, 0)
        assert "--enable-kvcache" in c["args"]
        assert c["resources"]["limits"]["nvidia.com/gpu"] == "1"


def test_gpu_pool_runs_vllm_one_variant_per_gpu_product() -> None:
    deps = {o["metadata"]["name"]: o for o in render(MANIFESTS / "overlays/gpu-pool") if o["kind"] == "Deployment"}
    a100, h100 = (deps[n]["spec"]["template"]["spec"] for n in ("va-a100", "va-h100"))
    assert a100["containers"][0]["image"].startswith("vllm/vllm-openai:v")
    assert a100["nodeSelector"]["nvidia.com/gpu.product"] != h100["nodeSelector"]["nvidia.com/gpu.product"]
    assert "--num-gpu-blocks-override=1024" in a100["containers"][0]["args"]
