# size: one control plane: its process records, the start of five programs in order with their flags, down
"""CLUSTER=kwok: the real Kubernetes control plane as processes on this host (``scalearena kwok up|down``).

etcd, kube-apiserver, kube-controller-manager (the real HPA controller) and kube-scheduler, built from
source at the versions of tools/versions.yaml (kube/tools.py), plus KWOK managing fake GPU nodes made
from the kind cluster's worker list (manifests/kind/cluster.yaml: the same labels and fake-GPU counts).
Each node's pod CIDR lies in 127.0.0.0/8 (node i: 127.i.0.0/16, in the block of addresses the cluster claims,
kube/kwok_net.py, so two clusters up at once never share one), so every pod KWOK starts gets a loopback IP of
its own, on which the pod launcher (kube/launcher.py) runs its container for real.

Flags follow kwokctl's binary runtime (sigs.k8s.io/kwok v0.7.0, pkg/kwokctl/components) and kubeadm's
defaults, with three differences that matter here:

* RBAC is on (``--authorization-mode=Node,RBAC``) and the aggregation layer is configured with a
  front-proxy CA (kube/pki.py), so APIServices served by local processes (prometheus-adapter, KEDA's
  metrics server) work as in a cluster.
* ``--endpoint-reconciler-type=none``: the API server is on 127.0.0.1, and Endpoints may not hold a
  loopback address (ValidateEndpointIP, pkg/apis/core/validation); for the same reason Services over
  pods get no endpoints here: nothing in scalearena's stack needs them (the gateway lists pods itself,
  APIServices point at ExternalName services).
* the HPA controller's sync period is a flag (``hpa_sync_s``); it and the controller's other durations
  (``HPA_DURATION_FLAGS``) are divided by the cluster's time scale (kube/timescale.py), which ``kwok up
  --time-scale`` fixes for every run on that cluster.

The processes outlive ``scalearena kwok up`` (like a kind cluster outlives ``kind up``): each is
started in its own session and recorded, with its start time, in ``state.json`` of the cluster's
folder; ``down`` stops them (SIGTERM, then SIGKILL), checks that none is left and removes the folder.
A start that fails at any step stops what it started and reports the component, its command and its
log tail (exit 1). Nothing listens on anything but 127.0.0.1.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import ssl
import subprocess
import time
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from scalearena.contracts.errors import RunFailed, UserError
from scalearena.harness.config.safe_yaml import read_yaml
from scalearena.harness.kube import kwok_net, pki
from scalearena.harness.kube.cluster import MARKER, Kubectl, Shell
from scalearena.harness.local.supervisor import free_port, start_ticks, wait_for_port
from scalearena.harness.run.interrupts import held

ROOT = Path(__file__).resolve().parents[2]
KIND_CONFIG = ROOT / "manifests" / "kind" / "cluster.yaml"
STAGES = ROOT / "manifests" / "kwok" / "stages.yaml"
NODE_ANNOTATION = ("kwok.x-k8s.io/node", "fake")
NAME = "scalearena"
LOOPBACK = "127.0.0.1"
SERVICE_CIDR = "10.96.0.0/16"  # never routed: only ClusterIPs are allocated from it
# the HPA controller's other durations (kube-controller-manager flags, their upstream defaults in seconds):
# passed explicitly so that they scale with the run's time scale (kube/timescale.py)
HPA_DURATION_FLAGS = (("downscale-stabilization", 300.0), ("initial-readiness-delay", 30.0),
                      ("cpu-initialization-period", 300.0))


def state_root() -> Path:
    return Path(os.environ.get("SCALEARENA_KWOK_DIR") or Path.home() / ".cache" / "scalearena" / "kwok")


@dataclass
class Proc:
    name: str
    pid: int
    argv: list[str]
    log: str
    started: float  # /proc/PID/stat start time in clock ticks: tells our process from a reused pid


@dataclass
class State:
    owner: str
    created: str
    ports: dict[str, int]
    feature_gates: str
    hpa_sync_s: float
    time_scale: float
    procs: list[Proc] = field(default_factory=list)
    pod_block: int = 0  # its block of pod addresses (kube/kwok_net.py)

    @staticmethod
    def load(path: Path) -> State | None:
        try:
            raw = json.loads(path.read_text())
        except (OSError, ValueError):
            return None
        raw["procs"] = [Proc(**p) for p in raw.get("procs", [])]
        return State(**raw)

    def save(self, path: Path) -> None:
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=1))
        os.replace(tmp, path)


def _alive(p: Proc) -> bool:
    return start_ticks(p.pid) == p.started


class RecordedChild:
    """A cluster-owned process as kube/local/supervisor.py's ``Child`` looks (what LocalKeda reads of it)."""

    def __init__(self, cluster: KwokCluster, proc: Proc) -> None:
        self.cluster, self.proc, self.name = cluster, proc, proc.name
        self.log_path = Path(proc.log)

    def alive(self) -> bool:
        return not self.cluster._exited(self.proc)

    def log_tail(self, n: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""


def feature_gates() -> str:
    """The kind cluster's featureGates (manifests/kind/cluster.yaml), as the control plane's flag."""
    gates = (read_yaml(KIND_CONFIG) or {}).get("featureGates") or {}
    return ",".join(f"{k}={'true' if v else 'false'}" for k, v in sorted(gates.items()))


def worker_nodes(need: dict[str, int] | None = None, pod_block: int = 0) -> list[dict[str, Any]]:
    """Node objects for KWOK: kind's workers (their labels), each with a pod CIDR of its own in 127.0.0.0/8 (in
    ``pod_block``, kube/kwok_net.py) and fake ``nvidia.com/gpu`` raised so each product's nodes hold ``need`` (the
    same plan as kind's)."""
    cfg = read_yaml(KIND_CONFIG) or {}
    workers = [n for n in cfg.get("nodes", []) if n.get("role") == "worker"]
    by_product: dict[str, int] = {}
    for w in workers:
        p = w["labels"]["nvidia.com/gpu.product"]
        by_product[p] = by_product.get(p, 0) + 1
    missing = sorted(p for p, k in (need or {}).items() if k > 0 and p not in by_product)
    if missing:
        raise UserError(f"no kwok node has GPU product {', '.join(missing)}", where=str(KIND_CONFIG),
                        expected=f"a worker labelled nvidia.com/gpu.product={missing[0]}")
    nodes = []
    for i, w in enumerate(workers, start=1):
        labels = {k: str(v) for k, v in w["labels"].items()}
        product = labels["nvidia.com/gpu.product"]
        gpus = max(int(labels["scalearena.io/fake-gpus"]), -(-(need or {}).get(product, 0) // by_product[product]))
        name = f"kwok-worker-{i}"
        labels.update({"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
                       "type": "kwok"})
        resources = {"cpu": "64", "memory": "512Gi", "pods": "110", "nvidia.com/gpu": str(gpus)}
        cidr = kwok_net.pod_cidr(pod_block, i)
        nodes.append({"apiVersion": "v1", "kind": "Node",
                      "metadata": {"name": name, "labels": labels,
                                   "annotations": {NODE_ANNOTATION[0]: NODE_ANNOTATION[1],
                                                   "node.alpha.kubernetes.io/ttl": "0"}},
                      "spec": {"podCIDR": cidr, "podCIDRs": [cidr]},
                      "status": {"capacity": resources, "allocatable": dict(resources)}})
    return nodes


def kubeconfig_text(server: str, ca: Path, cert: Path, key: Path) -> str:
    return json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": NAME,
        "clusters": [{"name": NAME, "cluster": {"server": server, "certificate-authority": str(ca)}}],
        "users": [{"name": "admin", "user": {"client-certificate": str(cert), "client-key": str(key)}}],
        "contexts": [{"name": NAME, "context": {"cluster": NAME, "user": "admin"}}]}, indent=1)


class KwokCluster:
    """One local control plane with KWOK nodes, in ``folder`` (default ~/.cache/scalearena/kwok/scalearena)."""

    def __init__(self, folder: Path | None = None, *, binary: Callable[[str], Path] | None = None,
                 shell: Shell | None = None, time_scale: float = 1.0, hpa_sync_s: float = 15.0,
                 log: Callable[[str], None] = lambda s: None,
                 on_start: Callable[[str], None] | None = None) -> None:
        self.folder = (folder or state_root() / NAME).resolve()  # processes start in other folders
        self.on_start = on_start  # tests: called as each component's process starts (to interrupt the start there)
        self._binary = binary
        self.shell = shell or Shell()
        self.time_scale, self.hpa_sync_s = time_scale, hpa_sync_s
        self.log = log
        self.state: State | None = State.load(self.state_path)
        self.reused = False

    # ---- paths ----------------------------------------------------------------------------------
    @property
    def state_path(self) -> Path:
        return self.folder / "state.json"

    @property
    def kubeconfig(self) -> Path:
        return self.folder / "kubeconfig"

    @property
    def logs(self) -> Path:
        return self.folder / "logs"

    def binary(self, name: str) -> Path:
        if self._binary is not None:
            return self._binary(name)
        from scalearena.harness.kube.tools import binary

        return binary(name)

    @property
    def kubectl(self) -> Kubectl:
        return Kubectl(self.shell, kubeconfig=str(self.kubeconfig), binary=str(self.binary("kubectl")))

    # ---- state ----------------------------------------------------------------------------------
    def running(self) -> bool:
        """A cluster of ours is up: every recorded process is still the one we started."""
        return self.state is not None and bool(self.state.procs) and all(_alive(p) for p in self.state.procs)

    def api_url(self) -> str:
        assert self.state is not None
        return f"https://{LOOPBACK}:{self.state.ports['apiserver']}"

    # ---- up -------------------------------------------------------------------------------------
    def up(self, need: dict[str, int] | None = None, owner: str = "run") -> None:
        """Start the control plane and its nodes, or reuse the one ``kwok up`` started (which must hold ``need``)."""
        if self.state is not None:
            if self.running() and self.state.owner == "suite" and owner != "suite":
                if self.state.time_scale != self.time_scale:  # its controller-manager runs at the other one
                    raise UserError(f"the kwok cluster in {self.folder} runs at time scale {self.state.time_scale:g}, "
                                    f"this run asks for {self.time_scale:g}", where="time_scale",
                                    expected=f"time_scale={self.state.time_scale:g}, or `scalearena kwok down` and "
                                             f"`scalearena kwok up --time-scale {self.time_scale:g}`")
                self.reused = True
                self.check_capacity(need or {})
                return
            if self.running():
                raise UserError(f"a kwok control plane is already running in {self.folder} (made by a "
                                f"{self.state.owner} at {self.state.created})", where=str(self.folder),
                                expected="`scalearena kwok down` first")
            self.down()  # the leftovers of one that died: nothing of it may linger
        worker_nodes(need)  # bad input before anything starts
        bins = {n: self.binary(n) for n in ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler",
                                            "kwok", "kubectl")}
        block = kwok_net.claim(self.folder, lambda folder: KwokCluster(folder).running())  # none free: nothing made
        self.folder.mkdir(parents=True, exist_ok=True)
        self.logs.mkdir(exist_ok=True)
        ports = {k: free_port() for k in ("etcd", "etcd_peer", "apiserver", "controller_manager", "scheduler",
                                          "kwok")}
        self.state = State(owner=owner, created=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), ports=ports,
                           feature_gates=feature_gates(), hpa_sync_s=self.hpa_sync_s, time_scale=self.time_scale,
                           pod_block=block)
        self.state.save(self.state_path)
        try:
            self._up(bins, worker_nodes(need, block))
        except BaseException:
            self.down()
            raise

    def _up(self, bins: dict[str, Path], nodes: list[dict[str, Any]]) -> None:  # size: five programs' flags, in order
        assert self.state is not None
        t0 = time.monotonic()
        p = self.state.ports
        certs = pki.control_plane(self.folder / "pki")
        self.kubeconfig.write_text(kubeconfig_text(f"https://{LOOPBACK}:{p['apiserver']}", certs.ca.cert,
                                                   certs.admin.cert, certs.admin.key))
        gates = [f"--feature-gates={self.state.feature_gates}"] if self.state.feature_gates else []
        kc = str(self.kubeconfig)
        etcd = self._start("etcd", [
            str(bins["etcd"]), "--name=scalearena", f"--data-dir={self.folder / 'etcd'}",
            f"--listen-client-urls=http://{LOOPBACK}:{p['etcd']}", f"--advertise-client-urls=http://{LOOPBACK}:{p['etcd']}",
            f"--listen-peer-urls=http://{LOOPBACK}:{p['etcd_peer']}",
            f"--initial-advertise-peer-urls=http://{LOOPBACK}:{p['etcd_peer']}",
            f"--initial-cluster=scalearena=http://{LOOPBACK}:{p['etcd_peer']}", "--initial-cluster-state=new",
            "--unsafe-no-fsync=true", "--quota-backend-bytes=4294967296", "--log-level=warn"])
        self._wait("etcd", etcd, lambda: wait_for_port(p["etcd"], 0.5), 60)
        api = self._start("kube-apiserver", [
            str(bins["kube-apiserver"]), f"--etcd-servers=http://{LOOPBACK}:{p['etcd']}",
            f"--bind-address={LOOPBACK}", f"--advertise-address={LOOPBACK}", f"--secure-port={p['apiserver']}",
            "--endpoint-reconciler-type=none", f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--authorization-mode=Node,RBAC", "--allow-privileged=true",
            f"--client-ca-file={certs.ca.cert}", f"--tls-cert-file={certs.apiserver.cert}",
            f"--tls-private-key-file={certs.apiserver.key}",
            f"--service-account-key-file={certs.sa.cert}", f"--service-account-signing-key-file={certs.sa.key}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--requestheader-client-ca-file={certs.front_proxy_ca.cert}",
            "--requestheader-allowed-names=front-proxy-client", "--requestheader-username-headers=X-Remote-User",
            "--requestheader-group-headers=X-Remote-Group", "--requestheader-extra-headers-prefix=X-Remote-Extra-",
            f"--proxy-client-cert-file={certs.front_proxy_client.cert}",
            f"--proxy-client-key-file={certs.front_proxy_client.key}", "--enable-aggregator-routing=false",
            *gates])
        self._wait("kube-apiserver", api, lambda: self._readyz(certs), 120)
        cm = self._start("kube-controller-manager", [
            str(bins["kube-controller-manager"]), f"--kubeconfig={kc}", f"--authentication-kubeconfig={kc}",
            f"--authorization-kubeconfig={kc}", "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
            f"--bind-address={LOOPBACK}", f"--secure-port={p['controller_manager']}", "--leader-elect=false",
            f"--root-ca-file={certs.ca.cert}", f"--service-account-private-key-file={certs.sa.key}",
            f"--cluster-signing-cert-file={certs.ca.cert}", f"--cluster-signing-key-file={certs.ca.key}",
            "--use-service-account-credentials=true", f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--controllers=*,-nodeipam,-cloud-node-lifecycle,-service,-route,-persistentvolume-binder,"
            "-attachdetach,-persistentvolume-expander,-ephemeral-volume,-pvc-protection,-pv-protection",
            f"--horizontal-pod-autoscaler-sync-period={self._seconds(self.hpa_sync_s)}",
            *(f"--horizontal-pod-autoscaler-{flag}={self._seconds(default)}" for flag, default in HPA_DURATION_FLAGS),
            "--kube-api-qps=200", "--kube-api-burst=400", *gates])
        sched = self._start("kube-scheduler", [
            str(bins["kube-scheduler"]), f"--kubeconfig={kc}", f"--authentication-kubeconfig={kc}",
            f"--authorization-kubeconfig={kc}", "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
            f"--bind-address={LOOPBACK}", f"--secure-port={p['scheduler']}", "--leader-elect=false",
            "--kube-api-qps=200", "--kube-api-burst=400", *gates])
        self._wait("kube-controller-manager", cm, lambda: self._healthz(p["controller_manager"]), 90)
        self._wait("kube-scheduler", sched, lambda: self._healthz(p["scheduler"]), 90)
        kwok = self._start("kwok", [
            str(bins["kwok"]), f"--kubeconfig={kc}", "--manage-all-nodes=false",
            f"--manage-nodes-with-annotation-selector={NODE_ANNOTATION[0]}={NODE_ANNOTATION[1]}",
            f"--server-address={LOOPBACK}:{p['kwok']}", f"--node-ip={LOOPBACK}", "--node-lease-duration-seconds=40",
            *([f"--config={STAGES}"] if STAGES.exists() else [])])
        self._wait("kwok", kwok, lambda: wait_for_port(p["kwok"], 0.5), 60)
        self.kubectl.run("apply", "--server-side", "--field-manager=scalearena", "-f", "-",
                         input=json.dumps({"apiVersion": "v1", "kind": "List", "items": nodes}), timeout=60)
        for n in nodes:  # status given at create is dropped: the capacity goes on the status subresource
            self.kubectl.run("patch", "node", n["metadata"]["name"], "--subresource=status", "--type=merge",
                             "-p", json.dumps({"status": n["status"]}), timeout=60)
        self.kubectl.run("wait", "--for=condition=Ready", "node", "-l", "type=kwok", "--timeout=60s", timeout=90)
        self._wait("kube-controller-manager", cm, self._default_service_account, 60)
        self.kubectl.run("-n", MARKER[0], "create", "configmap", MARKER[1], f"--from-literal=owner={self.state.owner}",
                         f"--from-literal=created={self.state.created}", "--from-literal=flavour=kwok", timeout=60)
        self.log(f"kwok control plane up in {time.monotonic() - t0:.1f} s: {len(nodes)} nodes, "
                 f"API server {self.api_url()}, kubeconfig {self.kubeconfig}")

    def _seconds(self, s: float) -> str:
        return f"{max(s / self.time_scale, 0.001):g}s"

    def _start(self, name: str, argv: Sequence[str], env: dict[str, str] | None = None,
               cwd: Path | None = None) -> Proc:
        assert self.state is not None
        log = self.logs / f"{name}.log"
        with held(), open(log, "ab") as f:  # an interrupt lands before the spawn or after the record
            proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=f, stderr=subprocess.STDOUT,
                                    start_new_session=True, cwd=cwd or self.folder,
                                    env={**os.environ, **env} if env else None)
            rec = Proc(name=name, pid=proc.pid, argv=list(argv), log=str(log), started=start_ticks(proc.pid) or 0.0)
            self.state.procs.append(rec)
            self.state.save(self.state_path)
        self._popen = getattr(self, "_popen", {})
        self._popen[proc.pid] = proc  # reaped by down(); keeps a zombie from looking alive
        if self.on_start is not None:
            self.on_start(name)
        return rec

    def _wait(self, name: str, p: Proc, ready: Callable[[], bool], timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._exited(p):
                raise self._failed(p, "exited")
            if ready():
                return
            time.sleep(0.2)
        raise self._failed(p, f"was not ready within {timeout_s:g} s")

    def _exited(self, p: Proc) -> bool:
        proc = getattr(self, "_popen", {}).get(p.pid)
        return proc.poll() is not None if proc is not None else not _alive(p)

    def _failed(self, p: Proc, what: str) -> RunFailed:
        try:
            tail = Path(p.log).read_text(errors="replace").strip().splitlines()[-8:]
        except OSError:
            tail = []
        return RunFailed(f"kwok: {p.name} {what}; command: {' '.join(p.argv[:1])} {' '.join(p.argv[1:])[:300]} | "
                         f"log {p.log}: " + " | ".join(tail))

    def _ssl(self, certs: pki.ControlPlanePKI | None = None) -> ssl.SSLContext:
        folder = self.folder / "pki"
        ctx = ssl.create_default_context(cafile=str(folder / "ca.crt"))
        ctx.load_cert_chain(str(folder / "admin.crt"), str(folder / "admin.key"))
        return ctx

    def _get(self, url: str, ctx: ssl.SSLContext) -> bool:
        try:
            with urllib.request.urlopen(url, context=ctx, timeout=2) as r:
                return bool(r.status == 200)
        except (OSError, ValueError):
            return False

    def _readyz(self, certs: pki.ControlPlanePKI) -> bool:
        return self._get(f"{self.api_url()}/readyz", self._ssl(certs))

    def _healthz(self, port: int) -> bool:
        ctx = ssl.create_default_context()
        ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE  # self-signed serving certs of the controllers
        return self._get(f"https://{LOOPBACK}:{port}/healthz", ctx)

    def _default_service_account(self) -> bool:
        """The service-account controller has run: pods can be created in a fresh namespace."""
        r = self.kubectl.run("get", "serviceaccount", "default", "-o", "name", check=False, timeout=30)
        return r.returncode == 0 and bool(r.stdout.strip())

    # ---- processes that live as long as the cluster (KEDA) ---------------------------------------
    def start(self, name: str, argv: Sequence[str], env: dict[str, str] | None = None,
              cwd: Path | None = None) -> RecordedChild:
        """Start a process owned by the cluster (recorded in state.json, stopped by ``down``): the ``Starter`` that
        kube/kwok_keda.py's LocalKeda runs KEDA with, so KEDA stays installed for the cluster's lifetime as it does
        on kind."""
        return RecordedChild(self, self._start(name, argv, env=env, cwd=cwd))

    def stop(self, name: str, grace_s: float) -> int | None:
        assert self.state is not None
        for p in [p for p in self.state.procs if p.name == name and _alive(p)]:
            os.killpg(p.pid, signal.SIGTERM)
            self._reap(p, grace_s)
            if _alive(p):
                os.killpg(p.pid, signal.SIGKILL)
                self._reap(p, 5.0)
        return None

    def keda_running(self) -> bool:
        return self.state is not None and any(p.name == "keda-operator" and _alive(p) for p in self.state.procs)

    def ensure_keda(self) -> None:
        """KEDA's operator and metrics server for this cluster, started once (kube/kwok_keda.py)."""
        if self.keda_running():
            return
        from scalearena.harness.kube.kwok_keda import LocalKeda

        LocalKeda(self, self, log=self.log).start()

    # ---- a run's share of the control plane's logs -----------------------------------------------
    def log_marks(self) -> dict[str, int]:
        """Every component log's size now: where a run's part of it begins (``copy_logs``)."""
        return {p.name: p.stat().st_size for p in sorted(self.logs.glob("*.log"))} if self.logs.is_dir() else {}

    def copy_logs(self, marks: dict[str, int], dest: Path, limit: int = 8 << 20) -> None:
        """What each component logged since ``marks`` into ``dest`` (a run's folder): the HPA controller's syncs,
        KEDA's scaler errors, the API server's warnings of that run, kept after the cluster goes (its folder is
        removed by ``down``). At most the last ``limit`` bytes a file."""
        for p in sorted(self.logs.glob("*.log")) if self.logs.is_dir() else []:
            start = marks.get(p.name, 0)
            size = p.stat().st_size
            if size <= start:
                continue
            dest.mkdir(parents=True, exist_ok=True)
            with open(p, "rb") as f:
                f.seek(max(start, size - limit))
                (dest / p.name).write_bytes(f.read(size - max(start, size - limit)))

    # ---- capacity -------------------------------------------------------------------------------
    def check_capacity(self, need: dict[str, int]) -> None:
        nodes = self.kubectl.get_json("nodes", "-l", "type=kwok").get("items", [])
        have: dict[str, int] = {}
        for n in nodes:
            product = n["metadata"]["labels"].get("nvidia.com/gpu.product", "")
            have[product] = have.get(product, 0) + int((n.get("status") or {}).get("capacity", {}).get(
                "nvidia.com/gpu", "0"))
        short = {pr: (k, have.get(pr, 0)) for pr, k in need.items() if k > have.get(pr, 0)}
        if short:
            pr, (k, h) = next(iter(short.items()))
            raise UserError(f"the running kwok cluster offers {h} fake {pr} GPUs, this scenario needs {k}",
                            where=str(self.folder), expected="`scalearena kwok down` then `scalearena kwok up "
                                                              "--suite SUITE` with this scenario in the suite")

    # ---- down -----------------------------------------------------------------------------------
    def down(self, grace_s: float = 10.0) -> list[str]:
        """Stop every recorded process (newest first), check none is left, remove the folder; returns what was
        still running after SIGKILL (empty: all gone)."""
        state = self.state or State.load(self.state_path)
        procs = list(reversed(state.procs)) if state else []
        live = [p for p in procs if _alive(p)]
        for p in live:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + grace_s
        for p in live:
            self._reap(p, max(0.0, deadline - time.monotonic()))
        for p in live:
            if _alive(p):
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self._reap(p, 5.0)
        left = [f"{p.name} (pid {p.pid})" for p in live if _alive(p)]
        if not left and self.folder.exists():
            shutil.rmtree(self.folder, ignore_errors=True)
        if not left:
            kwok_net.release(self.folder)
        self.state = None
        return left

    def _reap(self, p: Proc, timeout_s: float) -> None:
        proc = getattr(self, "_popen", {}).get(p.pid)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if proc is not None:
                if proc.poll() is not None:
                    return
            elif not _alive(p):
                return
            time.sleep(0.05)
