"""CLUSTER=kwok's KEDA (harness/kube/kwok_keda.py): the flags, environment and objects of the two
local processes, and the order ``start``/``stop`` do things in, with a fake supervisor and canned kubectl.

The expected flags are read off KEDA v2.18.0's source (github.com/kedacore/keda/v2@v2.18.0):
cmd/operator/main.go:90-115 (flags; controller-runtime's --kubeconfig and zap's via AddGoFlagSet),
cmd/adapter/main.go:113 (the gRPC client's certs = --cert-dir), :236-243 (flags), :177 (``--port`` binds ":PORT"),
pkg/metricsservice/utils/tls.go:38-40 (ca.crt, tls.crt, tls.key), pkg/certificates/certificate_manager.go:80-103
(one pair, ServerAuth + ClientAuth, the services' DNS names), pkg/util/env_resolver.go:65-91 and watch.go:14-23
(KEDA_CLUSTER_OBJECT_NAMESPACE, POD_NAMESPACE, WATCH_NAMESPACE), config/metrics-server/*.yaml (Service
keda-metrics-apiserver, APIService, RoleBindings), Makefile:259 (release = kustomize build config/default).
"""
from __future__ import annotations

import base64
import json
import os
import shutil
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID

from scalearena.contracts.errors import RunFailed
from scalearena.harness.kube import kwok_keda, pki
from scalearena.harness.kube.cluster import Kubectl
from scalearena.harness.kube.kwok_keda import APISERVICE, METRICS_SERVICE, LocalKeda, Ports

PORTS = Ports(operator_metrics=41001, operator_health=41002, operator_grpc=41003, metrics_server=41004,
              metrics_server_metrics=41005)


def flags(argv: list[str]) -> dict[str, str]:
    out = {}
    for a in argv[1:]:
        assert a.startswith("--") and "=" in a, a
        k, v = a[2:].split("=", 1)
        assert k not in out, f"--{k} given twice"
        out[k] = v
    return out


def rendered() -> list[dict[str, Any]]:
    """The shape of ``kustomize build config/default`` (one object of each kind the release file has)."""
    lab = {"app.kubernetes.io/version": "2.18.0", "app.kubernetes.io/part-of": "keda-operator"}
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "keda", "labels": lab}},
        {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
         "metadata": {"name": "scaledobjects.keda.sh"}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "keda-operator", "namespace": "keda"}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
         "metadata": {"name": "keda-auth-reader", "namespace": "kube-system"}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "keda-operator"}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "keda-operator", "namespace": "keda"}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": METRICS_SERVICE, "namespace": "keda",
                                                             "labels": lab},
         "spec": {"ports": [{"name": "https", "port": 443, "targetPort": 6443}],
                  "selector": {"app": "keda-metrics-apiserver"}}},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "keda-operator", "namespace": "keda"}},
        {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": {"name": APISERVICE},
         "spec": {"service": {"name": METRICS_SERVICE, "namespace": "keda"}, "group": "external.metrics.k8s.io",
                  "version": "v1beta1", "groupPriorityMinimum": 100, "versionPriority": 100}},
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
         "metadata": {"name": "keda-admission"}},
    ]


class FakeCluster:
    def __init__(self, folder: Path, kubectl: Kubectl) -> None:
        self.folder = folder
        self.kubeconfig = folder / "kubeconfig"
        self._kubectl = kubectl

    @property
    def kubectl(self) -> Kubectl:
        return self._kubectl

    def api_url(self) -> str:
        return "https://127.0.0.1:40000"

    def binary(self, name: str) -> Path:
        return Path("/bin") / name


class FakeChild:
    def __init__(self, log: Path, alive: bool = True) -> None:
        self.log_path, self._alive = log, alive

    def alive(self) -> bool:
        return self._alive

    def log_tail(self, n: int = 20) -> str:
        return "line one\nboom: cannot connect"


class FakeSupervisor:
    def __init__(self, events: list[str], dead: str | None = None) -> None:
        self.events, self.dead = events, dead
        self.calls: dict[str, tuple[list[str], dict[str, str] | None]] = {}

    def start(self, name: str, argv: Any, env: dict[str, str] | None = None, cwd: Path | None = None) -> FakeChild:
        self.events.append(f"start {name}")
        self.calls[name] = (list(argv), env)
        return FakeChild(Path(f"/logs/{name}.log"), alive=name != self.dead)

    def stop(self, name: str, grace_s: float) -> int | None:
        self.events.append(f"stop {name}")
        return 0


class FakeShell:
    """kubectl answers: kustomize -> the rendered manifest, create token -> a token, get apiservice -> ours."""

    def __init__(self, events: list[str], apiservice_port: int = PORTS.metrics_server) -> None:
        self.events = events
        self.applied: list[list[dict[str, Any]]] = []
        self.apiservice_port = apiservice_port

    def run(self, argv: list[str], *, input: str | None = None, timeout: float | None = 600,
            check: bool = True) -> subprocess.CompletedProcess[str]:
        args = argv[3:]  # kubectl --kubeconfig PATH
        out = ""
        if args[0] == "kustomize":
            out = yaml.safe_dump_all(rendered())
        elif args[0] == "apply":
            objs = list(yaml.safe_load_all(input or ""))
            self.applied.append(objs)
            self.events.append("apply " + ",".join(o["kind"] for o in objs))
        elif args[:3] == ["-n", "keda", "create"]:
            out = "the-token\n"
            self.events.append("token " + " ".join(args[3:]))
        elif args[:2] == ["get", "apiservice"]:
            out = json.dumps({"spec": {"service": {"name": METRICS_SERVICE, "namespace": "keda",
                                                   "port": self.apiservice_port}},
                              "status": {"conditions": [{"type": "Available", "status": "False",
                                                         "reason": "FailedDiscoveryCheck", "message": "no answer"}]}})
        else:
            self.events.append(" ".join(args))
        return subprocess.CompletedProcess(argv, 0, out, "")


@pytest.fixture
def setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], FakeShell, FakeCluster]:
    pki.control_plane(tmp_path / "pki")
    events: list[str] = []
    shell = FakeShell(events)
    cluster = FakeCluster(tmp_path, Kubectl(shell, kubeconfig=str(tmp_path / "kubeconfig")))  # type: ignore[arg-type]
    def get(url: str, ctx: object) -> int:
        events.append(f"GET {url}")
        return 200

    monkeypatch.setattr(kwok_keda, "_get", get)
    monkeypatch.setattr(kwok_keda, "wait_for_port", lambda port, t: True)
    return events, shell, cluster


def keda(cluster: FakeCluster, sup: FakeSupervisor, **kw: Any) -> LocalKeda:
    return LocalKeda(cluster, sup, source=Path("/keda-src"), version="v2.18.0", ports=PORTS, **kw)


# ---- argv and environment ------------------------------------------------------------------------------
def test_operator_flags(setup: Any) -> None:
    _, _, cluster = setup
    k = keda(cluster, FakeSupervisor([]))
    argv = k.operator_argv(Path("/bin/keda-operator"))
    assert argv[0] == "/bin/keda-operator"
    assert flags(argv) == {
        "kubeconfig": str(cluster.folder / "keda" / "kubeconfig"),
        "metrics-bind-address": "127.0.0.1:41001",  # main.go:92 (default ":8080")
        "health-probe-bind-address": "127.0.0.1:41002",  # :93 (default ":8081")
        "metrics-service-bind-address": "127.0.0.1:41003",  # :94 (default ":9666")
        "leader-elect": "false",  # :96
        "enable-cert-rotation": "false",  # :109
        "cert-dir": str(cluster.folder / "keda" / "certs"),  # :103
        "ca-dir": str(cluster.folder / "keda" / "ca"),  # :111 (default /custom/ca)
        "zap-log-level": "info", "zap-encoder": "console", "zap-time-encoding": "rfc3339",  # config/manager
    }


def test_metrics_server_flags(setup: Any) -> None:
    _, _, cluster = setup
    k = keda(cluster, FakeSupervisor([]))
    kc, certs = str(cluster.folder / "keda" / "kubeconfig"), cluster.folder / "keda" / "certs"
    assert flags(k.metrics_server_argv(Path("/bin/keda-metrics-apiserver"))) == {
        "kubeconfig": kc, "lister-kubeconfig": kc, "authentication-kubeconfig": kc, "authorization-kubeconfig": kc,
        "bind-address": "127.0.0.1", "secure-port": "41004",
        "tls-cert-file": str(certs / "tls.crt"), "tls-private-key-file": str(certs / "tls.key"),
        "cert-dir": str(certs),  # adapter main.go:113: the gRPC client's certificates
        "metrics-service-address": "127.0.0.1:41003",  # the operator's gRPC server
        "port": "41005",  # main.go:237/:177, the /metrics listener
        "zap-log-level": "error",  # config/metrics-server/deployment.yaml
    }


def test_admin_identity_uses_the_cluster_kubeconfig(setup: Any) -> None:
    _, _, cluster = setup
    k = keda(cluster, FakeSupervisor([]), identity="admin")
    assert flags(k.operator_argv(Path("/x")))["kubeconfig"] == str(cluster.kubeconfig)
    assert k.env()["KUBECONFIG"] == str(cluster.kubeconfig)
    with pytest.raises(ValueError):
        keda(cluster, FakeSupervisor([]), identity="root")


def test_environment(setup: Any) -> None:
    _, _, cluster = setup
    env = keda(cluster, FakeSupervisor([])).env()
    assert env["WATCH_NAMESPACE"] == ""  # set and empty: every namespace (watch.go:16-22; unset is an error)
    assert env["POD_NAMESPACE"] == env["KEDA_CLUSTER_OBJECT_NAMESPACE"] == "keda"


# ---- objects -----------------------------------------------------------------------------------------
def test_objects_keep_the_release_drop_the_workloads_and_point_the_apiservice_at_loopback() -> None:
    base, api = kwok_keda.install_objects(rendered(), metrics_port=41004, ca_pem=b"PEM")
    kinds = [(o["kind"], o["metadata"]["name"]) for o in base]
    assert kinds[0] == ("Namespace", "keda") and kinds[1][0] == "CustomResourceDefinition"
    assert ("Deployment", "keda-operator") not in kinds
    assert ("ValidatingWebhookConfiguration", "keda-admission") not in kinds
    assert ("Service", "keda-operator") not in kinds
    assert ("RoleBinding", "keda-auth-reader") in kinds and ("ServiceAccount", "keda-operator") in kinds
    (svc,) = [o for o in base if o["kind"] == "Service"]
    assert svc["metadata"]["name"] == METRICS_SERVICE and svc["metadata"]["namespace"] == "keda"
    assert svc["spec"] == {"type": "ExternalName", "externalName": "127.0.0.1"}
    assert svc["metadata"]["labels"]["app.kubernetes.io/part-of"] == "keda-operator"
    assert api["metadata"]["name"] == APISERVICE
    assert api["spec"]["service"] == {"name": METRICS_SERVICE, "namespace": "keda", "port": 41004}
    assert base64.b64decode(api["spec"]["caBundle"]) == b"PEM"
    assert "insecureSkipTLSVerify" not in api["spec"]
    assert api["spec"]["groupPriorityMinimum"] == 100


def test_objects_refuse_a_manifest_without_its_apiservice() -> None:
    with pytest.raises(RunFailed, match="lacks"):
        kwok_keda.install_objects([o for o in rendered() if o["kind"] != "APIService"], metrics_port=1, ca_pem=b"")


def _keda_module() -> Path | None:
    go, kubectl = shutil.which("go"), shutil.which("kubectl")
    if not go or not kubectl:
        return None
    r = subprocess.run([go, "env", "GOMODCACHE"], capture_output=True, text=True)
    d = Path(r.stdout.strip()) / "github.com" / "kedacore" / "keda" / f"v2@{kwok_keda.keda_version()}"
    return d if (d / "config" / "default").is_dir() else None


@pytest.mark.skipif(_keda_module() is None, reason="KEDA's module source (go mod download) or kubectl not here")
def test_the_real_release_kustomization() -> None:
    from scalearena.harness.kube.cluster import Shell

    src = _keda_module()
    assert src is not None
    objs = kwok_keda.render(Kubectl(Shell(), binary=shutil.which("kubectl") or "kubectl"), src, "v2.18.0")
    base, api = kwok_keda.install_objects(objs, metrics_port=6443, ca_pem=b"x")
    crds = sorted(o["metadata"]["name"] for o in base if o["kind"] == "CustomResourceDefinition")
    assert crds == ["cloudeventsources.eventing.keda.sh", "clustercloudeventsources.eventing.keda.sh",
                    "clustertriggerauthentications.keda.sh", "scaledjobs.keda.sh", "scaledobjects.keda.sh",
                    "triggerauthentications.keda.sh"]
    names = {(o["kind"], o["metadata"]["name"]) for o in base}
    assert {("RoleBinding", "keda-auth-reader"), ("ClusterRoleBinding", "keda-system-auth-delegator"),
            ("ClusterRoleBinding", "keda-hpa-controller-external-metrics"), ("ClusterRole", "keda-operator"),
            ("ClusterRoleBinding", "keda-operator"), ("Role", "keda-operator"), ("RoleBinding", "keda-operator"),
            ("ServiceAccount", "keda-operator"), ("Namespace", "keda"), ("Service", METRICS_SERVICE)} <= names
    assert not {k for k, _ in names} & {"Deployment", "ValidatingWebhookConfiguration", "APIService"}
    assert all(o["metadata"].get("labels", {}).get("app.kubernetes.io/version") != "main" for o in objs)
    # the CRD patches of config/crd/patches are in (scaledobject_patch.yaml: stabilizationWindowSeconds bounds)
    so = next(o for o in base if o["metadata"]["name"] == "scaledobjects.keda.sh")
    window = (so["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["advanced"]
              ["properties"]["horizontalPodAutoscalerConfig"]["properties"]["behavior"]["properties"]["scaleUp"]
              ["properties"]["stabilizationWindowSeconds"])
    assert (window["minimum"], window["maximum"]) == (0, 3600)
    assert api["spec"]["service"]["port"] == 6443


# ---- start / stop ------------------------------------------------------------------------------------
def test_start_orders_objects_certificates_processes_and_apiservice(setup: Any) -> None:
    events, shell, cluster = setup
    sup = FakeSupervisor(events)
    k = keda(cluster, sup)
    k.start()
    starts = [e for e in events if not e.startswith("GET")]
    assert starts[0].startswith("apply Namespace,CustomResourceDefinition")
    assert starts[1] == "wait --for=condition=Established crd/scaledobjects.keda.sh --timeout=60s"
    assert starts[2] == "token token keda-operator --duration=168h"
    assert starts[3:] == ["start keda-operator", "start keda-metrics-apiserver", "apply APIService"]
    gets = [e for e in events if e.startswith("GET")]
    assert gets == ["GET http://127.0.0.1:41002/readyz", "GET https://127.0.0.1:41004/readyz",
                    "GET https://127.0.0.1:40000/apis/external.metrics.k8s.io/v1beta1"]
    # the ServiceAccount's kubeconfig: the token, the cluster CA, private
    kc = cluster.folder / "keda" / "kubeconfig"
    assert stat.S_IMODE(os.stat(kc).st_mode) == 0o600
    cfg = json.loads(kc.read_text())
    assert cfg["users"][0]["user"] == {"token": "the-token"}
    assert cfg["clusters"][0]["cluster"] == {"server": "https://127.0.0.1:40000",
                                             "certificate-authority": str(cluster.folder / "pki" / "ca.crt")}
    # one pair for gRPC (both ends) and HTTPS, signed by the cluster CA, with the names the aggregator checks
    certs = cluster.folder / "keda" / "certs"
    assert (certs / "ca.crt").read_bytes() == (cluster.folder / "pki" / "ca.crt").read_bytes()
    cert = x509.load_pem_x509_certificate((certs / "tls.crt").read_bytes())
    usages = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert set(usages) == {ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH}
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "keda-metrics-apiserver.keda.svc" in sans.get_values_for_type(x509.DNSName)
    assert [str(ip) for ip in sans.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    # the children: the environment, and each told the other's address
    argv, env = sup.calls["keda-metrics-apiserver"]
    assert env is not None and env["POD_NAMESPACE"] == "keda" and "--metrics-service-address=127.0.0.1:41003" in argv
    (api,) = shell.applied[-1]
    assert api["spec"]["service"]["port"] == 41004


def test_a_component_that_dies_is_named_with_its_command_and_log_and_the_rest_is_stopped(setup: Any) -> None:
    events, _, cluster = setup
    sup = FakeSupervisor(events, dead="keda-metrics-apiserver")
    with pytest.raises(RunFailed) as e:
        keda(cluster, sup).start()
    msg = str(e.value)
    assert "keda-metrics-apiserver exited" in msg and "--metrics-service-address=127.0.0.1:41003" in msg
    assert "boom: cannot connect" in msg and "/logs/keda-metrics-apiserver.log" in msg
    assert events[-2:] == ["stop keda-metrics-apiserver", "stop keda-operator"]
    assert "apply APIService" not in events


def test_stop_deletes_scaled_objects_before_the_operator_goes_and_only_our_apiservice(setup: Any) -> None:
    events, shell, cluster = setup
    k = keda(cluster, FakeSupervisor(events))
    k.start()
    del events[:]
    k.stop()
    assert events == [
        "delete scaledobjects.keda.sh --all --all-namespaces --ignore-not-found --wait=true --timeout=60s",
        "delete scaledjobs.keda.sh --all --all-namespaces --ignore-not-found --wait=true --timeout=60s",
        f"delete apiservice {APISERVICE} --ignore-not-found",
        "stop keda-metrics-apiserver", "stop keda-operator"]
    k.stop()  # twice: nothing left to do
    assert len(events) == 5

    events2: list[str] = []
    shell.events, shell.apiservice_port = events2, 9999  # someone else (prometheus-adapter) holds the name now
    k2 = keda(cluster, FakeSupervisor(events2))
    k2.start()
    k2.stop()
    assert f"delete apiservice {APISERVICE} --ignore-not-found" not in events2


def test_an_apiservice_the_aggregator_cannot_reach_fails_with_its_condition(setup: Any,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    events, _, cluster = setup
    monkeypatch.setattr(kwok_keda, "_get", lambda url, ctx: 503 if "external.metrics" in url else 200)
    with pytest.raises(RunFailed) as e:
        keda(cluster, FakeSupervisor(events), ready_timeout_s=0.3).start()
    msg = str(e.value)
    assert f"{APISERVICE} (GET https://127.0.0.1:40000/apis/external.metrics.k8s.io/v1beta1) not ready" in msg
    assert "Available=False FailedDiscoveryCheck: no answer" in msg
    assert events[-3:] == [f"delete apiservice {APISERVICE} --ignore-not-found", "stop keda-metrics-apiserver",
                           "stop keda-operator"]
