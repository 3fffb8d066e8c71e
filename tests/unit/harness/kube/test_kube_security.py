"""Issue 17 item 12: locked-down workloads, no Prometheus lifecycle API, the gateway admin API behind a token."""
from __future__ import annotations

import urllib.request
from pathlib import Path

import pytest

from scalearena.harness.config.scenario import load_scenario
from scalearena.harness.kube.backend import KubeBackend
from scalearena.harness.kube.security import harden
from scalearena.harness.kube.wva.endpoints import push

ROOT = Path(__file__).resolve().parents[4]
SCENARIOS = [ROOT / "workloads/scenarios/exp2-cost-aware.yaml", ROOT / "workloads/scenarios/hetero-roofline.yaml"]
WORKLOADS = ("Deployment", "Job", "StatefulSet", "DaemonSet")


def all_objects(mode: str = "kind", gateway: str | None = None) -> list[dict]:
    backend = KubeBackend(mode, image_prefix="registry.example/org", gateway=gateway)
    out = []
    for path in SCENARIOS:
        sc = load_scenario(path)
        for kind in ("wva", "hpa", "keda"):
            out += backend.plan(sc, sc.autoscaler(kind))
    return out


@pytest.mark.parametrize(("mode", "gateway"), [("kind", None), ("cluster", None), ("kind", "epp")])
def test_every_workload_is_locked_down(mode: str, gateway: str | None) -> None:
    workloads = [o for o in all_objects(mode, gateway) if o["kind"] in WORKLOADS]
    assert len({o["metadata"]["name"] for o in workloads}) >= 5
    for o in workloads:
        pod = o["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True, o["metadata"]["name"]
        assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        for c in pod["containers"]:
            sc = c["securityContext"]
            assert (sc["allowPrivilegeEscalation"], sc["readOnlyRootFilesystem"]) == (False, True), c["name"]
            assert sc["capabilities"]["drop"] == ["ALL"]
            assert any(m["mountPath"] == "/tmp" for m in c["volumeMounts"])  # writable scratch
            mounted = {m["name"] for m in c["volumeMounts"]}
            assert mounted <= {v["name"] for v in pod["volumes"]}


def test_vllm_gets_writable_caches_and_shared_memory() -> None:
    sc = load_scenario(SCENARIOS[0])
    objs = KubeBackend("cluster", image_prefix="registry.example/org").plan(sc, sc.autoscaler("hpa"))
    (dep, *_) = [o for o in objs if o["kind"] == "Deployment" and "vllm" in
                 o["spec"]["template"]["spec"]["containers"][0]["image"]]
    pod = dep["spec"]["template"]["spec"]
    c = pod["containers"][0]
    assert {"name": "HOME", "value": "/tmp"} in c["env"]
    # the gpu-pool overlay's own HF cache volume and /dev/shm are kept, not doubled
    assert [e["value"] for e in c["env"] if e["name"] == "HF_HOME"] == ["/cache/huggingface"]
    assert [m["mountPath"] for m in c["volumeMounts"]].count("/dev/shm") == 1
    names = [v["name"] for v in pod["volumes"]]
    assert len(names) == len(set(names)) and "dshm" not in names


def test_harden_keeps_what_a_manifest_sets() -> None:
    dep = {"kind": "Deployment", "spec": {"template": {"spec": {"securityContext": {"runAsUser": 65534},
                                                                "containers": [{"name": "p", "image": "x"}]}}}}
    pod = harden([dep])[0]["spec"]["template"]["spec"]
    assert pod["securityContext"] == {"runAsUser": 65534, "runAsNonRoot": True,
                                      "seccompProfile": {"type": "RuntimeDefault"}}
    assert pod["volumes"] == [{"name": "tmp", "emptyDir": {}}]


def test_prometheus_has_no_lifecycle_api() -> None:
    (prom,) = {o["metadata"]["name"]: o for o in all_objects() if o["kind"] == "Deployment"
               and o["metadata"]["name"] == "prometheus"}.values()
    args = prom["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--web.enable-lifecycle" not in args and any(a.startswith("--config.file") for a in args)


def test_gateway_admin_api_needs_a_per_run_token_and_only_the_namespace_reaches_the_gateway() -> None:
    sc = load_scenario(SCENARIOS[0])
    a, b = (KubeBackend("kind").plan(sc, sc.autoscaler("wva")) for _ in range(2))
    tokens = [next(o for o in objs if o["kind"] == "Secret" and o["metadata"]["name"] == "gateway-admin")
              ["stringData"]["token"] for objs in (a, b)]
    assert tokens[0] != tokens[1] and len(tokens[0]) >= 32 and not any(t.startswith("replace-me") for t in tokens)
    gw = next(o for o in a if o["kind"] == "Deployment" and o["metadata"]["name"] == "gateway")
    pod = gw["spec"]["template"]["spec"]
    router, sync = pod["containers"]
    assert "--admin-port=8081" in router["args"] and "--router=http://127.0.0.1:8081" in sync["args"]
    assert not any(p.get("containerPort") == 8081 for c in pod["containers"] for p in c.get("ports", []))
    for c in pod["containers"]:  # serve-router and endpoint-sync both read the token file
        assert "--admin-token-file=/var/run/secrets/scalearena/admin/token" in c["args"], c["name"]
        assert {"name": "admin-token", "mountPath": "/var/run/secrets/scalearena/admin", "readOnly": True} \
            in c["volumeMounts"]
    assert {"name": "admin-token", "secret": {"secretName": "gateway-admin", "defaultMode": 0o440}} in pod["volumes"]
    (np,) = [o for o in a if o["kind"] == "NetworkPolicy" and o["metadata"]["name"] == "gateway-ingress"]
    assert np["spec"]["podSelector"] == {"matchLabels": {"scalearena.io/component": "gateway"}}
    assert np["spec"]["ingress"] == [{"from": [{"podSelector": {}}], "ports": [{"port": "http", "protocol": "TCP"}]}]


def test_endpoint_sync_sends_the_token(monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[urllib.request.Request] = []

    class Resp:
        def __enter__(self) -> Resp:
            return self

        def __exit__(self, *a: object) -> None:
            pass

        def read(self) -> bytes:
            return b"{}"

    monkeypatch.setattr(urllib.request, "urlopen", lambda req, timeout: sent.append(req) or Resp())
    push("http://127.0.0.1:8080", [], token="s3cret-token-0123456789")
    assert sent[0].get_header("Authorization") == "Bearer s3cret-token-0123456789"
