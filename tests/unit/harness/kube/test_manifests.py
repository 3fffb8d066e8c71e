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
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from scalearena.harness.kube.render import object_key, render

ROOT = Path(__file__).resolve().parents[4]
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


VALID_VA: dict[str, Any] = {"apiVersion": "llmd.ai/v1alpha1", "kind": "VariantAutoscaling", "metadata": {"name": "va"},
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


# ---- issue 31: hardened in the YAML itself, and in everything a run applies --------------------------------
POD_KINDS = ("Deployment", "StatefulSet", "DaemonSet", "Job", "ReplicaSet")
# The pods that keep their ServiceAccount token, each because it talks to the API server; every other pod states
# automountServiceAccountToken: false.
API_CLIENTS = {
    "prometheus",  # kubernetes_sd_configs lists this namespace's pods
    "kube-state-metrics",  # lists and watches Deployments
    "prometheus-adapter",  # an aggregated API server: TokenReview, SubjectAccessReview, its auth ConfigMap, pods
    "wva-controller",  # watches VariantAutoscalings and Deployments, writes status, patches scale
    "gateway-epp",  # llm-d's EPP watches its InferencePool and the pods (upstream image, standard credentials)
}
# serve-router's pod has no automounted token; its endpoint-sync sidecar alone mounts a projected one
PROJECTED_TOKEN = {("gateway", "endpoint-sync")}
# a name that holds a credential: ends in one (`--time-to-first-token` is a latency, `--admin-token-file` a path)
SECRET_NAME = re.compile(r"^[-_]*(?:token|(?:[a-z0-9]+[-_])*?(?:(?:admin|auth|bearer|access|api|refresh|bootstrap|hf|"
                         r"github)[-_]token|password|passwd|secret|api[-_]?key|access[-_]key|credentials?))$", re.I)


def pod_templates(objs: list[dict]) -> list[tuple[str, dict]]:
    return [(o["metadata"]["name"], o["spec"]["template"]) for o in objs if o["kind"] in POD_KINDS]


def assert_locked_down(name: str, pod: dict, rendered: bool) -> None:
    psc = pod.get("securityContext", {})
    assert psc.get("runAsNonRoot") is True and psc.get("seccompProfile") == {"type": "RuntimeDefault"}, name
    assert isinstance(psc.get("runAsUser"), int) and psc["runAsUser"] > 0, name  # images that declare root
    assert pod.get("automountServiceAccountToken") is (name in API_CLIENTS), name  # stated, never defaulted
    for c in pod.get("initContainers", []) + pod["containers"]:
        sc = c.get("securityContext", {})
        assert sc.get("allowPrivilegeEscalation") is False and sc.get("readOnlyRootFilesystem") is True, (name, c)
        assert sc.get("capabilities", {}).get("drop") == ["ALL"] and "add" not in sc["capabilities"], (name, c)
        assert "privileged" not in sc and "runAsUser" not in sc, (name, c)
        mounts = {m["mountPath"]: m["name"] for m in c.get("volumeMounts", [])}
        token = mounts.get("/var/run/secrets/kubernetes.io/serviceaccount")
        assert (token is not None) is ((name, c["name"]) in PROJECTED_TOKEN), (name, c["name"])
        if rendered:  # harden() gives every container a writable /tmp
            assert "/tmp" in mounts, (name, c["name"])
    for v in pod.get("volumes", []):
        assert "hostPath" not in v, (name, v)
    assert not (pod.get("hostNetwork") or pod.get("hostPID") or pod.get("hostIPC")), name


def test_every_pod_template_in_manifests_is_locked_down() -> None:
    """A plain `kubectl apply -k` gets the policy: it is in the YAML, not only added by harden() at plan time."""
    pods = [(w, n, t["spec"]) for w, o in all_objects() for n, t in pod_templates([o])]
    assert {n for _, n, _ in pods} >= {"va-a100", "va-h100", "gateway", "prometheus", "kube-state-metrics",
                                       "prometheus-adapter", "wva-controller", "gateway-epp", "locust-master",
                                       "locust-worker"}
    for _, name, pod in pods:
        assert_locked_down(name, pod, rendered=False)


def plans() -> list[tuple[str, list[dict]]]:
    from scalearena.harness.config.scenario import load_scenario
    from scalearena.harness.kube.backend import KubeBackend
    from scalearena.harness.kube.load import locust_objects
    from scalearena.harness.kube.security import harden

    out = []
    for mode, gateway in (("kind", None), ("cluster", None), ("kind", "epp")):
        backend = KubeBackend(mode, image_prefix="registry.example/org", gateway=gateway)
        for scenario in ("exp2-cost-aware", "hetero-roofline"):
            sc = load_scenario(ROOT / "workloads/scenarios" / f"{scenario}.yaml")
            for kind in ("wva", "hpa", "keda") + (("llmd-slo",) if gateway is None else ()):
                out.append((f"{mode}/{gateway}/{scenario}/{kind}", backend.plan(sc, sc.autoscaler(kind))))
            out.append((f"{mode}/{gateway}/{scenario}/wva-keda",
                        backend.plan(sc, sc.autoscaler("wva"), external_metrics="keda")))
    out.append(("locust", harden(locust_objects(MANIFESTS, workers=3, end_s=600.0))))
    return out


PLANS = plans()


@pytest.mark.parametrize("where,objs", PLANS, ids=[w for w, _ in PLANS])
def test_every_rendered_pod_is_locked_down_and_holds_no_fixed_secret(where: str, objs: list[dict]) -> None:
    for name, t in pod_templates(objs):
        assert_locked_down(name, t["spec"], rendered=True)
    secrets = [o for o in objs if o["kind"] == "Secret"]
    gateway_router = any(o["kind"] == "Deployment" and o["metadata"]["name"] == "gateway" for o in objs)
    assert [s["metadata"]["name"] for s in secrets] == (["gateway-admin"] if gateway_router else [])
    assert_no_literal_secrets(where, [o for o in objs if o["kind"] != "Secret"])


def assert_no_literal_secrets(where: str, objs: list[dict]) -> None:
    """No value in the YAML that looks like a credential: env values and flags named like one come from files or
    Secrets, never literals."""
    for o in objs:
        assert o["kind"] != "Secret", f"{where}: a Secret with a fixed value ({o['metadata']['name']})"
        for _, t in pod_templates([o]):
            for c in t["spec"]["containers"] + t["spec"].get("initContainers", []):
                for e in c.get("env", []):
                    assert not (SECRET_NAME.match(e["name"]) and "value" in e and not
                                str(e["value"]).startswith("/")), (where, c["name"], e)  # a path is fine
                for a in c.get("args", []) + c.get("command", []):
                    flag, eq, value = str(a).partition("=")  # --admin-token-file=/var/run/...: a path, fine
                    assert not (eq and SECRET_NAME.match(flag) and not value.startswith(("/", "$("))), \
                        (where, c["name"], a)
        if o["kind"] == "ConfigMap":  # a credential in a config file (token: ..., password = ...)
            for key, text in (o.get("data") or {}).items():
                for line in str(text).splitlines():
                    m = re.search(r"\b(\w*(?:token|password|secret)\w*)\s*[:=]\s*(\S+)", line, re.I)
                    assert not (m and not m.group(1).lower().endswith(("_file", "file")) and
                                not m.group(2).startswith("/")), (where, o["metadata"]["name"], key, line)


def test_no_manifest_holds_a_secret_value() -> None:
    objs = [o for _, o in all_objects()]
    objs += [o for f in sorted(MANIFESTS.rglob("*.yaml")) for o in yaml.safe_load_all(f.read_text())
             if isinstance(o, dict) and o.get("kind") == "Secret"]
    assert_no_literal_secrets("manifests/", objs)
    assert "replace-me" not in "".join(f.read_text() for f in MANIFESTS.rglob("*.yaml"))


def selects(selector: dict, labels: dict) -> bool:
    """A LabelSelector (matchLabels and matchExpressions) against a pod's labels, as the API server reads it."""
    if any(labels.get(k) != v for k, v in selector.get("matchLabels", {}).items()):
        return False
    for e in selector.get("matchExpressions", []):
        have, op = e["key"] in labels, e["operator"]
        ok = {"In": have and labels.get(e["key"]) in e.get("values", []),
              "NotIn": not have or labels[e["key"]] not in e.get("values", []),
              "Exists": have, "DoesNotExist": not have}[op]
        if not ok:
            return False
    return True


def admitted(policy: dict, labels: dict, namespace: str) -> bool:
    """Whether some ingress peer of ``policy`` (in namespace scalearena) admits a pod of ``namespace``."""
    for rule in policy["spec"]["ingress"]:
        for peer in rule["from"]:
            ns_sel = peer.get("namespaceSelector")
            ns_ok = selects(ns_sel, {"kubernetes.io/metadata.name": namespace}) if ns_sel is not None \
                else namespace == "scalearena"
            if ns_ok and selects(peer.get("podSelector", {}), labels):
                return True
    return False


KEDA_OPERATOR = {"app": "keda-operator", "name": "keda-operator"}  # kedacore/keda config/manager/manager.yaml


@pytest.mark.parametrize("where,objs", [p for p in PLANS if p[0] != "locust"], ids=[w for w, _ in PLANS[:-1]])
def test_network_policies_select_the_pods_the_renderer_produces(where: str, objs: list[dict]) -> None:
    pols = {o["metadata"]["name"]: o for o in objs if o["kind"] == "NetworkPolicy"}
    pods = {n: t for n, t in pod_templates(objs)}
    labels = {n: t["metadata"]["labels"] for n, t in pods.items()}
    engines = {n for n, lb in labels.items() if lb.get("scalearena.io/component") == "variant"}
    assert engines and "prometheus" in pods
    for name, targets, port in (("engine-ingress", engines, "http"), ("prometheus-ingress", {"prometheus"}, "web")):
        pol = pols[name]
        assert pol["spec"]["policyTypes"] == ["Ingress"]
        assert {n for n, lb in labels.items() if selects(pol["spec"]["podSelector"], lb)} == targets, name
        for n in targets:  # the named port is a port of each selected pod
            assert port in {p.get("name") for c in pods[n]["spec"]["containers"] for p in c.get("ports", [])}
        assert [p for r in pol["spec"]["ingress"] for p in r["ports"]] == [{"port": port, "protocol": "TCP"}]
    gateway = {n for n, lb in labels.items() if lb.get("scalearena.io/component") == "gateway"}
    assert gateway and all(admitted(pols["engine-ingress"], labels[n], "scalearena") for n in gateway | {"prometheus"})
    queriers = {n for n in pods if n in ("prometheus-adapter", "wva-controller")}
    assert all(admitted(pols["prometheus-ingress"], labels[n], "scalearena") for n in queriers)
    assert admitted(pols["prometheus-ingress"], KEDA_OPERATOR, "keda")
    assert not admitted(pols["prometheus-ingress"], KEDA_OPERATOR, "scalearena")
    assert not admitted(pols["engine-ingress"], labels["prometheus"], "elsewhere")
    for n in set(pods) - gateway - {"prometheus"}:  # engines, kube-state-metrics, the autoscalers: no way in
        assert not admitted(pols["engine-ingress"], labels[n], "scalearena"), n
    for n in set(pods) - queriers:
        assert not admitted(pols["prometheus-ingress"], labels[n], "scalearena"), n
    locust = {"scalearena.io/load": "locust-worker", "scalearena.io/component": "load"}
    assert not admitted(pols["engine-ingress"], locust, "scalearena")
    assert not admitted(pols["prometheus-ingress"], locust, "scalearena")
