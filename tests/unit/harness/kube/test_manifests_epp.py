"""llm-d's EPP as the gateway (SCALEARENA_GATEWAY=epp), checked offline.

What can be checked without a cluster: the objects render and validate (core
kinds against the Kubernetes v1.33 schemas, the InferencePool structurally),
the scenario's scorer weights land in the EPP's EndpointPickerConfig under
upstream's plugin names, the pool selects exactly the scenario's variant pods
on their engine port, the wiring inside the pod agrees with itself (Envoy ->
ext_proc port -> EPP; EPP config path -> mounted ConfigMap key), RBAC grants
read-only, namespaced access, and the backend installs the InferencePool CRD
before applying. What the EPP image does with all this was not run here.
"""
from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from scalearena.contracts.errors import UserError
from scalearena.harness.config.scenario import load_scenario
from scalearena.harness.kube import gateway as kube_gateway
from scalearena.harness.kube.backend import KubeBackend
from scalearena.harness.kube.gateway import GIE_CRDS, choose_gateway, epp_plugins_config
from scalearena.harness.kube.sampling import Sampler
from scalearena.harness.kube.wva.fake import FakeKubeAPI
from scalearena.harness.run.registry import resolve_options
from scalearena.workloads import load_handoff as load

from .test_kube_backend import FIX, RecordingShell, interrupted_drive, writer
from .test_manifests import K8S_VERSION, assert_inferencepool_v1

ROOT = Path(__file__).resolve().parents[4]
SCEN = ROOT / "workloads/scenarios"
EXP2 = SCEN / "exp2-cost-aware.yaml"  # two variants of llama3-70b, weights 1/1/1 (simulation setup)
PHYS = SCEN / "physical-validation.yaml"  # one variant of qwen3-0.6b, weights 2/2/3 (physical setup)


def backend(gateway: str | None = "epp", mode: str = "kind") -> KubeBackend:
    return KubeBackend(mode, local_port=itertools.count(30000).__next__, shell=RecordingShell(), which=lambda t: f"/usr/bin/{t}",
                       api_factory=lambda ctx: FakeKubeAPI(), metrics_factory=lambda url, v: None, readiness=lambda *a: None,
                       gateway=gateway, image_prefix="ghcr.io/me")


def plan(path: Path, autoscaler: str = "wva", gateway: str | None = "epp", **kw: Any) -> list[dict]:
    sc = load_scenario(path, **kw)
    mode = "cluster" if path == PHYS else "kind"  # the physical scenario's roofline engine runs on vLLM
    return backend(gateway, mode).plan(sc, sc.autoscaler(autoscaler))


def named(objs: list[dict], kind: str, name: str) -> dict:
    return next(o for o in objs if o["kind"] == kind and o["metadata"]["name"] == name)


def profile_weights(objs: list[dict]) -> dict[str, int | None]:
    cfg = yaml.safe_load(named(objs, "ConfigMap", "epp-config")["data"]["epp-config.yaml"])
    assert cfg["kind"] == "EndpointPickerConfig"
    assert [p["name"] for p in cfg["schedulingProfiles"]] == ["default"]
    declared = {p["type"] for p in cfg["plugins"]}
    refs = cfg["schedulingProfiles"][0]["plugins"]
    assert {r["pluginRef"] for r in refs} <= declared  # every reference is a declared plugin
    return {r["pluginRef"]: r.get("weight") for r in refs}


def test_default_is_serve_router_and_env_selects_epp(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SCALEARENA_GATEWAY", raising=False)
    assert choose_gateway(None) == "serve-router"
    objs = plan(EXP2, gateway=None)
    assert named(objs, "Deployment", "gateway") and not [o for o in objs if o["kind"] == "InferencePool"]
    # $SCALEARENA_GATEWAY is read once, by the backend registry
    monkeypatch.setenv("SCALEARENA_GATEWAY", "epp")
    assert resolve_options("kind").gateway == "epp"
    assert resolve_options("kind", {"gateway": "serve-router"}).gateway == "serve-router"  # the option wins
    monkeypatch.setenv("SCALEARENA_GATEWAY", "envoy")
    with pytest.raises(UserError, match="envoy"):
        resolve_options("kind")
    with pytest.raises(UserError, match="envoy"):
        choose_gateway("envoy")


def test_simulation_weights_1_1_1_reach_the_epp_config() -> None:
    assert profile_weights(plan(EXP2)) == {"queue-scorer": 1, "kv-cache-utilization-scorer": 1,
                                           "prefix-cache-scorer": 1, "max-score-picker": None}


def test_physical_weights_2_2_3_reach_the_epp_config() -> None:
    assert profile_weights(plan(PHYS)) == {"queue-scorer": 2, "kv-cache-utilization-scorer": 2,
                                           "prefix-cache-scorer": 3, "max-score-picker": None}


def test_zero_weight_drops_the_scorer_and_fractions_are_refused() -> None:
    sc = load_scenario(EXP2, overrides=["router.scorers.prefix_cache=0", "router.scorers.queue=4"])
    cfg = yaml.safe_load(epp_plugins_config(sc))
    assert [p["type"] for p in cfg["plugins"]] == ["queue-scorer", "kv-cache-utilization-scorer",
                                                   "max-score-picker", "single-profile-handler"]
    assert cfg["schedulingProfiles"][0]["plugins"][0] == {"pluginRef": "queue-scorer", "weight": 4}
    with pytest.raises(UserError, match="integer"):
        epp_plugins_config(load_scenario(EXP2, overrides=["router.scorers.queue=1.5"]))


def test_one_model_per_pool() -> None:
    with pytest.raises(UserError, match="one model"):
        plan(EXP2, overrides=["cluster.variants.1.model=other"])


def test_serve_router_objects_are_replaced_under_the_same_service() -> None:
    objs = plan(EXP2)
    names = {(o["kind"], o["metadata"]["name"]) for o in objs}
    assert not names & {("Deployment", "gateway"), ("ConfigMap", "gateway-config"), ("ServiceAccount", "gateway"),
                        ("Role", "gateway-endpoints"), ("RoleBinding", "gateway-endpoints")}
    services = [o for o in objs if o["kind"] == "Service" and o["metadata"]["name"] == "gateway"]
    assert len(services) == 1 and services[0]["spec"]["ports"][0]["port"] == 8080
    dep = named(objs, "Deployment", "gateway-epp")
    envoy = next(c for c in dep["spec"]["template"]["spec"]["containers"] if c["name"] == "envoy")
    assert {"name": "http", "containerPort": 8081} in envoy["ports"]  # Service targetPort `http` -> Envoy 8081
    assert services[0]["spec"]["selector"].items() <= dep["spec"]["template"]["metadata"]["labels"].items()


def test_pool_selects_exactly_the_scenario_variant_pods_on_the_engine_port() -> None:
    objs = plan(EXP2)
    pool = named(objs, "InferencePool", "scalearena")
    assert_inferencepool_v1(pool)
    sel = pool["spec"]["selector"]["matchLabels"]
    assert sel == {"scalearena.io/component": "variant", "scalearena.io/model": "llama3-70b"}
    selected = []
    for o in objs:
        if o["kind"] != "Deployment":
            continue
        labels = o["spec"]["template"]["metadata"]["labels"]
        if sel.items() <= labels.items():
            selected.append(o["metadata"]["name"])
            ports = [p["containerPort"] for p in o["spec"]["template"]["spec"]["containers"][0].get("ports", [])]
            assert pool["spec"]["targetPorts"][0]["number"] in ports
    assert sorted(selected) == ["va-a100", "va-h100"]
    assert named(objs, "Service", "epp")["spec"]["ports"][0]["port"] == pool["spec"]["endpointPickerRef"]["port"][
        "number"]


def test_pod_wiring_envoy_to_epp_and_config_mount() -> None:
    objs = plan(PHYS)
    pod = named(objs, "Deployment", "gateway-epp")["spec"]["template"]["spec"]
    epp = next(c for c in pod["containers"] if c["name"] == "epp")
    # pinned, not a floating tag (`make pins` may add the tag's digest)
    assert epp["image"].split("@")[0] == "ghcr.io/llm-d/llm-d-inference-scheduler:v0.3.2"
    args = epp["args"]
    flag = {args[i]: args[i + 1] for i in range(0, len(args) - 1, 2) if args[i].startswith("--")}
    assert flag["--pool-name"] == named(objs, "InferencePool", "scalearena")["metadata"]["name"]
    grpc = {p["name"]: p["containerPort"] for p in epp["ports"]}
    assert int(flag["--grpc-port"]) == grpc["grpc"] == 9002
    mount = next(m for m in epp["volumeMounts"] if m["name"] == "epp-config")
    vol = next(v for v in pod["volumes"] if v["name"] == "epp-config")
    assert flag["--config-file"] == f"{mount['mountPath']}/epp-config.yaml"
    assert "epp-config.yaml" in named(objs, "ConfigMap", vol["configMap"]["name"])["data"]
    envoy_cfg = yaml.safe_load(named(objs, "ConfigMap", "epp-envoy")["data"]["envoy.yaml"])
    clusters = {c["name"]: c for c in envoy_cfg["static_resources"]["clusters"]}
    epp_addr = clusters["epp"]["load_assignment"]["endpoints"][0]["lb_endpoints"][0]["endpoint"]["address"]
    assert epp_addr["socket_address"] == {"address": "127.0.0.1", "port_value": 9002}
    assert clusters["picked_endpoint"]["original_dst_lb_config"]["http_header_name"] == \
        "x-gateway-destination-endpoint"
    listener = next(x for x in envoy_cfg["static_resources"]["listeners"] if x["name"] == "inference")
    assert listener["address"]["socket_address"]["port_value"] == 8081
    hcm = listener["filter_chains"][0]["filters"][0]["typed_config"]
    assert [f["name"] for f in hcm["http_filters"]] == ["envoy.filters.http.ext_proc", "envoy.filters.http.router"]
    route = hcm["route_config"]["virtual_hosts"][0]["routes"][0]
    assert route["response_headers_to_add"][0]["header"]["key"] == load.POD_HEADER  # what the Locust user reads


def test_every_epp_object_validates() -> None:
    for o in plan(PHYS):
        if o["kind"] == "InferencePool":
            assert_inferencepool_v1(o)
        elif o["kind"] not in ("VariantAutoscaling",):
            kubernetes_validate.validate(o, K8S_VERSION, strict=True)


def test_epp_rbac_is_read_only_and_namespaced() -> None:
    objs = plan(EXP2)
    assert not [o for o in objs if o["kind"] in ("ClusterRole", "ClusterRoleBinding")
                and o["metadata"]["name"].startswith("epp")]
    role = named(objs, "Role", "epp")
    grants = {(g, r): set(rule["verbs"]) for rule in role["rules"] for g in rule["apiGroups"]
              for r in rule["resources"]}
    read = {"get", "list", "watch"}
    assert grants == {("", "pods"): read, ("inference.networking.k8s.io", "inferencepools"): read,
                      ("inference.networking.x-k8s.io", "inferenceobjectives"): read}
    binding = named(objs, "RoleBinding", "epp")
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "epp"}
    sa = binding["subjects"][0]["name"]
    assert named(objs, "Deployment", "gateway-epp")["spec"]["template"]["spec"]["serviceAccountName"] == sa


def test_backend_installs_the_inferencepool_crd_before_applying(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Sampler, "drive", interrupted_drive)
    b = backend("epp")
    sc = load_scenario(EXP2)
    with pytest.raises(KeyboardInterrupt):
        b.run(sc, sc.autoscaler("hpa"), writer(tmp_path))
    cmds = b.shell.joined()  # type: ignore[attr-defined]
    crd = cmds.index(f"kubectl --context kind-scalearena apply --server-side -f {GIE_CRDS}")
    est = cmds.index("kubectl --context kind-scalearena wait --for=condition=Established "
                     f"crd/{kube_gateway.INFERENCEPOOL_CRD} --timeout=60s")
    first_apply = next(i for i, c in enumerate(cmds) if "apply --server-side --force-conflicts" in c)
    assert crd < est < first_apply
    assert any("port-forward svc/gateway" in c for c in cmds)  # same Service name as serve-router
    assert cmds[-1] == "kind delete cluster --name scalearena"


def test_epp_records_are_attributed_from_the_picked_endpoint(tmp_path: Path) -> None:
    sc = load_scenario(EXP2)
    api = FakeKubeAPI.from_fixtures(FIX, "deployment-va-a100.json", "deployment-va-h100.json", "pods-va-a100.json")
    pods = sorted(k for k in api.store if k[0] == "Pod")
    for i, key in enumerate(pods):  # the fixture gives every pod one IP; live pods never share one
        api.store[key]["status"]["podIP"] = f"10.244.1.{10 + i}"
    s = Sampler(sc, sc.autoscaler("hpa"), writer(tmp_path), api, None, native=True)
    s.read_variant("va-a100")
    row = s.resolve_pod({"request_id": 0, "pod": "10.244.1.11:8000", "variant": None})
    assert (row["pod"], row["variant"]) == (pods[1][2], "va-a100")
    assert s.resolve_pod({"pod": "10.0.0.99:8000", "variant": None})["pod"] == "10.0.0.99:8000"  # unknown: kept
    assert s.resolve_pod({"pod": "p", "variant": "v"}) == {"pod": "p", "variant": "v"}  # serve-router rows
