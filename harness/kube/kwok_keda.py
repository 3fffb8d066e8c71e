# size: KEDA's install (its own config/ rendered and filtered), two processes' flags and certificates, and stop
"""CLUSTER=kwok: KEDA's operator and metrics API server as two local processes on the kwok control plane.

What ``kubectl apply -f keda-2.18.0.yaml`` installs on kind (cluster.py ``KEDA_MANIFEST``), run out of
cluster: the objects come from the same kustomization the release file is built from (KEDA's Makefile,
``release``: ``kustomize build config/default``), rendered with ``kubectl kustomize`` from the KEDA module
the Go module proxy serves (``go mod download``, the source the binaries are built from), and then

* kept as they are: the ``keda`` Namespace, the six CRDs (ScaledObject, ScaledJob, TriggerAuthentication,
  ClusterTriggerAuthentication, CloudEventSource, ClusterCloudEventSource), the ``keda-operator``
  ServiceAccount, and every Role, ClusterRole and (Cluster)RoleBinding -- including
  ``extension-apiserver-authentication-reader`` and ``system:auth-delegator`` for the metrics server and
  ``keda-external-metrics-reader`` for the HPA controller;
* replaced: the ``keda-metrics-apiserver`` Service becomes ``type: ExternalName`` to ``127.0.0.1`` (the
  control plane runs with ``--enable-aggregator-routing=false``, and for an ExternalName Service the
  aggregator dials ``externalName:<APIService port>``: k8s.io/apiserver pkg/util/proxy ``ResolveCluster``),
  and the ``v1beta1.external.metrics.k8s.io`` APIService gets the metrics server's port and the cluster CA
  as ``caBundle`` (in the release KEDA's cert rotation injects its own CA there; rotation is off here, so
  nothing touches ours);
* dropped: the three Deployments (these processes stand for two of them), the ``keda-operator`` and
  ``keda-admission-webhooks`` Services and the ValidatingWebhookConfiguration: the admission webhooks do
  not run (their configuration, ``failurePolicy: Ignore``, would only make every write of a KEDA object
  call a server that is not there). So what KEDA's webhook refuses on kind (replica bounds, fallback,
  triggers, scalingModifiers, a second ScaledObject or an HPA on the same workload:
  apis/keda/v1alpha1/scaledobject_webhook.go) is admitted here, and left to the operator's own checks,
  which report in the ScaledObject's Ready condition.

One certificate signed by the cluster CA, with both usages (KEDA's rotator makes one such pair for the
operator's gRPC server, the metrics server's gRPC client and its HTTPS serving: pkg/certificates), lies in
a cert dir as ``ca.crt``/``tls.crt``/``tls.key`` (pkg/metricsservice/utils/tls.go). Both processes act as
the ``keda-operator`` ServiceAccount (a token from ``kubectl create token`` in a kubeconfig of their own),
so KEDA's own RBAC applies as on kind; ``identity="admin"`` runs them with the admin kubeconfig instead.

Nothing listens beyond 127.0.0.1 except the metrics server's plain-HTTP ``/metrics`` (its ``--port``: KEDA
binds ``":PORT"``, cmd/adapter/main.go, with no flag for the address); it gets a free port of its own.
"""
from __future__ import annotations

import base64
import json
import os
import shutil
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from scalearena.contracts.errors import RunFailed
from scalearena.harness.config.safe_yaml import parse_yaml_all, read_yaml
from scalearena.harness.kube import pki
from scalearena.harness.kube.cluster import Kubectl
from scalearena.harness.local.supervisor import LOOPBACK, free_port, wait_for_port

Obj = dict[str, Any]
ROOT = Path(__file__).resolve().parents[2]
VERSIONS = ROOT / "tools" / "versions.yaml"
MODULE = "github.com/kedacore/keda/v2"
NAMESPACE = "keda"
SERVICE_ACCOUNT = "keda-operator"
METRICS_SERVICE = "keda-metrics-apiserver"  # config/metrics-server/service.yaml (the Helm chart's name differs)
APISERVICE = "v1beta1.external.metrics.k8s.io"
EXTERNAL_METRICS = "/apis/external.metrics.k8s.io/v1beta1"
OPERATOR, METRICS_SERVER = "keda-operator", "keda-metrics-apiserver"  # tools.binary names, and the log names
KEEP = {"Namespace", "CustomResourceDefinition", "ServiceAccount", "Role", "ClusterRole", "RoleBinding",
        "ClusterRoleBinding"}
TOKEN_DURATION = "168h"  # a run lasts hours; the token outlives any of them
CERT_HOSTS = (LOOPBACK, "localhost",
              # the names KEDA's rotator puts in its certificate (pkg/certificates getDNSNames); the aggregator
              # checks "<service>.<namespace>.svc" (kube-aggregator handler_proxy.go: ServerName)
              *(f"{s}{suffix}" for s in ("keda-operator", METRICS_SERVICE)
                for suffix in ("", f".{NAMESPACE}", f".{NAMESPACE}.svc", f".{NAMESPACE}.svc.cluster.local")))


class Child(Protocol):
    log_path: Path

    def alive(self) -> bool: ...

    def log_tail(self, n: int = 20) -> str: ...


class Starter(Protocol):
    """What LocalKeda needs of harness/local/supervisor.py ``Supervisor``."""

    def start(self, name: str, argv: Sequence[str], env: dict[str, str] | None = None,
              cwd: Path | None = None) -> Any: ...

    def stop(self, name: str, grace_s: float) -> int | None: ...


class Cluster(Protocol):
    """What LocalKeda needs of kwok.py ``KwokCluster``."""

    @property
    def folder(self) -> Path: ...

    @property
    def kubeconfig(self) -> Path: ...

    @property
    def kubectl(self) -> Kubectl: ...

    def api_url(self) -> str: ...

    def binary(self, name: str) -> Path: ...


def keda_version() -> str:
    """KEDA's version from tools/versions.yaml (``v2.18.0``)."""
    return str((read_yaml(VERSIONS) or {})["keda"])


def module_dir(version: str | None = None, go: str | None = None) -> Path:
    """The KEDA module's source as the Go module proxy serves it (downloaded once into GOMODCACHE)."""
    version = version or keda_version()
    go = go or shutil.which("go") or "/usr/local/go/bin/go"
    argv = [go, "mod", "download", "-json", f"{MODULE}@{version}"]
    env = {**os.environ, "GO111MODULE": "on", "GOFLAGS": "-mod=mod"}
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=600, cwd=tempfile.gettempdir(), env=env)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise RunFailed(f"kwok keda: `{' '.join(argv)}` failed: {e}") from None
    try:
        info = json.loads(r.stdout)
    except ValueError:
        info = {}
    if r.returncode != 0 or not info.get("Dir") or info.get("Error"):
        tail = " | ".join((info.get("Error") or r.stderr or r.stdout).strip().splitlines()[-5:])
        raise RunFailed(f"kwok keda: `{' '.join(argv)}` failed (exit {r.returncode}): {tail}")
    return Path(info["Dir"])


def render(kubectl: Kubectl, source: Path, version: str) -> list[Obj]:
    """``kubectl kustomize <source>/config/default``: the objects of the release file keda-VERSION.yaml, with
    the version label the release sets (Makefile ``release`` seds ``app.kubernetes.io/version``)."""
    text = kubectl.run("kustomize", str(source / "config" / "default"), timeout=120).stdout
    objs = parse_yaml_all(text, where=f"{source}/config/default")
    for o in objs:
        labels = (o.get("metadata") or {}).get("labels") or {}
        if labels.get("app.kubernetes.io/version") == "main":
            labels["app.kubernetes.io/version"] = version.lstrip("v")
    return objs


def install_objects(rendered: list[Obj], *, metrics_port: int, ca_pem: bytes) -> tuple[list[Obj], Obj]:
    """The release's objects for running KEDA out of cluster: (everything applied before the processes start,
    the APIService applied once the metrics server answers)."""
    base = [o for o in rendered if o.get("kind") in KEEP]
    kinds = {o.get("kind") for o in base}
    services = [o for o in rendered if o.get("kind") == "APIService" and o["metadata"]["name"] == APISERVICE]
    if "CustomResourceDefinition" not in kinds or "Namespace" not in kinds or len(services) != 1:
        raise RunFailed(f"kwok keda: the rendered KEDA manifest lacks its Namespace, CRDs or {APISERVICE} "
                        f"(kinds: {', '.join(sorted(str(k) for k in kinds))})")
    metrics_svc = next((o for o in rendered if o.get("kind") == "Service"
                        and o["metadata"]["name"] == METRICS_SERVICE), None)
    labels = dict(((metrics_svc or {}).get("metadata") or {}).get("labels") or {})
    service: Obj = {"apiVersion": "v1", "kind": "Service",
                    "metadata": {"name": METRICS_SERVICE, "namespace": NAMESPACE, "labels": labels},
                    "spec": {"type": "ExternalName", "externalName": LOOPBACK}}
    api = json.loads(json.dumps(services[0]))
    spec = api["spec"]
    spec.pop("insecureSkipTLSVerify", None)
    spec["service"] = {"name": METRICS_SERVICE, "namespace": NAMESPACE, "port": metrics_port}
    spec["caBundle"] = base64.b64encode(ca_pem).decode()
    order = {"Namespace": 0, "CustomResourceDefinition": 1}
    base.sort(key=lambda o: order.get(o["kind"], 2))  # stable: the rest keep the release's order
    return [*base, service], api


def token_kubeconfig(server: str, ca: Path, token: str) -> str:
    return json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "keda",
        "clusters": [{"name": "kwok", "cluster": {"server": server, "certificate-authority": str(ca)}}],
        "users": [{"name": SERVICE_ACCOUNT, "user": {"token": token}}],
        "contexts": [{"name": "keda", "context": {"cluster": "kwok", "user": SERVICE_ACCOUNT}}]}, indent=1)


@dataclass(frozen=True)
class Ports:
    operator_metrics: int
    operator_health: int
    operator_grpc: int
    metrics_server: int  # HTTPS: the APIService's port
    metrics_server_metrics: int  # plain-HTTP /metrics of the metrics server (binds every address)

    @staticmethod
    def free() -> Ports:
        return Ports(free_port(), free_port(), free_port(), free_port(), free_port())


class LocalKeda:
    """KEDA on a running kwok control plane: ``start()`` installs and starts it, ``stop()`` takes it away again
    (the CRDs, RBAC and namespace stay, as a KEDA install on kind stays)."""

    def __init__(self, cluster: Cluster, supervisor: Starter, *, source: Path | None = None,
                 version: str | None = None, identity: str = "serviceaccount", ports: Ports | None = None,
                 ready_timeout_s: float = 120.0, log: Callable[[str], None] = lambda s: None) -> None:
        if identity not in ("serviceaccount", "admin"):
            raise ValueError(f"identity {identity!r}: serviceaccount or admin")
        self.cluster, self.supervisor = cluster, supervisor
        self.version = version or keda_version()
        self._source = source
        self.identity = identity
        self.ports = ports or Ports.free()
        self.ready_timeout_s = ready_timeout_s
        self.log = log
        self.folder = cluster.folder / "keda"
        self.started: list[str] = []
        self.apiservice_applied = False

    # ---- paths and argv ---------------------------------------------------------------------------
    @property
    def certs(self) -> Path:
        return self.folder / "certs"

    @property
    def kubeconfig(self) -> Path:
        """The kubeconfig both processes use: the ServiceAccount's token, or the cluster's admin kubeconfig."""
        return self.folder / "kubeconfig" if self.identity == "serviceaccount" else self.cluster.kubeconfig

    @property
    def grpc_address(self) -> str:
        return f"{LOOPBACK}:{self.ports.operator_grpc}"

    def env(self) -> dict[str, str]:
        """What the manifest's Deployments set (WATCH_NAMESPACE "" = all, POD_NAMESPACE from the downward API),
        plus KEDA_CLUSTER_OBJECT_NAMESPACE, which a pod reads from its service-account mount
        (pkg/util/env_resolver.go GetClusterObjectNamespace) and a process must be told."""
        return {"WATCH_NAMESPACE": "", "POD_NAMESPACE": NAMESPACE, "KEDA_CLUSTER_OBJECT_NAMESPACE": NAMESPACE,
                "KUBECONFIG": str(self.kubeconfig)}

    def operator_argv(self, binary: Path) -> list[str]:
        """cmd/operator/main.go flags (v2.18.0 line numbers)."""
        p = self.ports
        return [str(binary),
                f"--kubeconfig={self.kubeconfig}",  # controller-runtime pkg/client/config, via AddGoFlagSet (:115)
                f"--metrics-bind-address={LOOPBACK}:{p.operator_metrics}",  # :92, default ":8080"
                f"--health-probe-bind-address={LOOPBACK}:{p.operator_health}",  # :93, default ":8081"
                f"--metrics-service-bind-address={self.grpc_address}",  # :94, default ":9666" (gRPC, mTLS)
                "--leader-elect=false",  # :96 (the manifest sets --leader-elect: one replica, no need here)
                "--enable-cert-rotation=false",  # :109 (the manifest sets true): our certificates, our caBundle
                f"--cert-dir={self.certs}",  # :103, default /certs: ca.crt, tls.crt, tls.key
                f"--ca-dir={self.folder / 'ca'}",  # :111, default /custom/ca: never a host path of that name
                "--zap-log-level=info", "--zap-encoder=console", "--zap-time-encoding=rfc3339"]  # the manifest's

    def metrics_server_argv(self, binary: Path) -> list[str]:
        """cmd/adapter/main.go flags and those of sigs.k8s.io/custom-metrics-apiserver v1.33.0 pkg/cmd (the
        generic apiserver's secure serving, delegated authentication and authorization)."""
        p, kc = self.ports, str(self.kubeconfig)
        return [str(binary),
                f"--kubeconfig={kc}",  # controller-runtime's, for its manager (makeProvider, :89)
                f"--lister-kubeconfig={kc}",  # custom-metrics-apiserver builder.go: else in-cluster config
                f"--authentication-kubeconfig={kc}", f"--authorization-kubeconfig={kc}",
                f"--bind-address={LOOPBACK}", f"--secure-port={p.metrics_server}",  # the manifest: 6443
                f"--tls-cert-file={self.certs / 'tls.crt'}", f"--tls-private-key-file={self.certs / 'tls.key'}",
                f"--cert-dir={self.certs}",  # also the gRPC client's ca.crt/tls.crt/tls.key (:113)
                f"--metrics-service-address={self.grpc_address}",  # :238, default keda-operator.keda.svc...:9666
                f"--port={p.metrics_server_metrics}",  # :237, default 8080
                "--zap-log-level=error"]  # the manifest's

    # ---- start ------------------------------------------------------------------------------------
    def source(self) -> Path:
        if self._source is None:
            self._source = module_dir(self.version)
        return self._source

    def start(self) -> None:
        """Install KEDA's objects, start the operator then the metrics server, register the APIService and
        wait until ``/apis/external.metrics.k8s.io/v1beta1`` answers through the aggregator. On any failure
        what was started is stopped again and RunFailed names the component, its command and its log tail."""
        t0 = time.monotonic()
        kubectl = self.cluster.kubectl
        ca = self.cluster.folder / "pki" / "ca.crt"
        base, api = install_objects(render(kubectl, self.source(), self.version),
                                    metrics_port=self.ports.metrics_server, ca_pem=ca.read_bytes())
        bins = {n: self.cluster.binary(n) for n in (OPERATOR, METRICS_SERVER)}
        try:
            kubectl.apply(base)
            for o in base:
                if o["kind"] == "CustomResourceDefinition":
                    kubectl.wait_established(o["metadata"]["name"])
            self._files(kubectl, ca)
            argv = self.operator_argv(bins[OPERATOR])
            op = self._start(OPERATOR, argv)
            health = f"http://{LOOPBACK}:{self.ports.operator_health}"
            self._wait(OPERATOR, op, argv, lambda: _get(f"{health}/readyz", None) == 200
                       and wait_for_port(self.ports.operator_grpc, 0.2))
            argv = self.metrics_server_argv(bins[METRICS_SERVER])
            ms = self._start(METRICS_SERVER, argv)
            ctx = self._admin_ssl()
            self._wait(METRICS_SERVER, ms, argv,
                       lambda: _get(f"https://{LOOPBACK}:{self.ports.metrics_server}/readyz", ctx) == 200)
            kubectl.apply([api])
            self.apiservice_applied = True
            url = self.cluster.api_url() + EXTERNAL_METRICS
            try:
                self._wait(METRICS_SERVER, ms, argv, lambda: _get(url, ctx) == 200, what=f"{APISERVICE} (GET {url})")
            except RunFailed as e:
                raise RunFailed(f"{e} | APIService: {self._available(kubectl)}") from None
        except BaseException:
            self.stop()
            raise
        self.log(f"KEDA {self.version} up in {time.monotonic() - t0:.1f} s: operator gRPC {self.grpc_address}, "
                 f"metrics server https://{LOOPBACK}:{self.ports.metrics_server} ({APISERVICE})")

    @staticmethod
    def _available(kubectl: Kubectl) -> str:
        """The APIService's Available condition, as the aggregator last set it."""
        r = kubectl.run("get", "apiservice", APISERVICE, "-o", "json", check=False, timeout=60)
        try:
            conds = (json.loads(r.stdout).get("status") or {}).get("conditions") or []
        except ValueError:
            return (r.stderr or r.stdout).strip()[-300:]
        return "; ".join(f"{c.get('type')}={c.get('status')} {c.get('reason')}: {c.get('message')}" for c in conds)

    def _files(self, kubectl: Kubectl, ca: Path) -> None:
        self.certs.mkdir(parents=True, exist_ok=True)
        (self.folder / "ca").mkdir(exist_ok=True)
        shutil.copyfile(ca, self.certs / "ca.crt")
        ca_pair = pki.Pair(ca, self.cluster.folder / "pki" / "ca.key")
        pki.issue(self.certs, "tls", ca_pair, "keda", server=True, client=True, hosts=CERT_HOSTS)
        if self.identity == "serviceaccount":
            token = kubectl.run("-n", NAMESPACE, "create", "token", SERVICE_ACCOUNT, f"--duration={TOKEN_DURATION}",
                                timeout=60).stdout.strip()
            fd = os.open(self.kubeconfig, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(token_kubeconfig(self.cluster.api_url(), ca, token))

    def _start(self, name: str, argv: list[str]) -> Any:
        child = self.supervisor.start(name, argv, env=self.env(), cwd=self.folder)
        self.started.append(name)
        return child

    def _wait(self, name: str, child: Any, argv: list[str], ready: Callable[[], bool], what: str = "") -> None:
        deadline = time.monotonic() + self.ready_timeout_s
        while time.monotonic() < deadline:
            if not child.alive():
                raise self._failed(name, child, argv, "exited")
            if ready():
                return
            time.sleep(0.25)
        raise self._failed(name, child, argv, f"{what or 'was'} not ready within {self.ready_timeout_s:g} s")

    @staticmethod
    def _failed(name: str, child: Any, argv: list[str], what: str) -> RunFailed:
        tail = " | ".join(child.log_tail(8).splitlines())
        return RunFailed(f"kwok keda: {name} {what}; command: {' '.join(argv)[:2000]} | log {child.log_path}: {tail}")

    def _admin_ssl(self) -> ssl.SSLContext:
        folder = self.cluster.folder / "pki"
        ctx = ssl.create_default_context(cafile=str(folder / "ca.crt"))
        ctx.load_cert_chain(str(folder / "admin.crt"), str(folder / "admin.key"))
        return ctx

    # ---- stop -------------------------------------------------------------------------------------
    def stop(self, grace_s: float = 10.0) -> None:
        """Delete what would dangle without KEDA, then stop the processes (metrics server first).

        ScaledObjects and ScaledJobs still present are deleted while the operator runs (their
        ``finalizer.keda.sh`` would otherwise hold them, and their namespace, forever); the APIService goes
        (an unavailable aggregated API fails discovery, and the namespace controller with it)."""
        kubectl = self.cluster.kubectl
        if OPERATOR in self.started:
            for kind in ("scaledobjects.keda.sh", "scaledjobs.keda.sh"):
                try:
                    kubectl.run("delete", kind, "--all", "--all-namespaces", "--ignore-not-found", "--wait=true",
                                "--timeout=60s", check=False, timeout=90)
                except RunFailed:
                    pass
        if self.apiservice_applied:
            try:
                self._delete_apiservice(kubectl)
            except (RunFailed, ValueError):
                pass
        for name in reversed(self.started):
            self.supervisor.stop(name, grace_s)
        self.started.clear()

    def _delete_apiservice(self, kubectl: Kubectl) -> None:
        """Only while it is still ours (prometheus-adapter registers the same name)."""
        r = kubectl.run("get", "apiservice", APISERVICE, "-o", "json", check=False, timeout=60)
        if r.returncode != 0:
            return
        svc = (json.loads(r.stdout).get("spec") or {}).get("service") or {}
        if (svc.get("name"), svc.get("namespace"), svc.get("port")) == (METRICS_SERVICE, NAMESPACE,
                                                                      self.ports.metrics_server):
            kubectl.run("delete", "apiservice", APISERVICE, "--ignore-not-found", check=False, timeout=60)
        self.apiservice_applied = False


def _get(url: str, ctx: ssl.SSLContext | None) -> int | None:
    """The HTTP status of GET ``url`` (None: no answer)."""
    try:
        with urllib.request.urlopen(url, context=ctx, timeout=3) as r:
            return int(r.status)
    except urllib.error.HTTPError as e:
        return int(e.code)
    except (OSError, ValueError):
        return None
