"""CLUSTER=kwok: the stack's in-cluster services (Prometheus, the gateway, prometheus-adapter, the WVA controller,
kube-state-metrics) run as local processes from the very Deployments a kind run applies.

KWOK nodes have no kubelet, so a Deployment's pods never run by themselves. The engines are run by the pod
launcher (kube/launcher.py) on their pod IPs; the services here are run by ``LocalServices`` from the rendered
objects, which is what the kubelet and the container runtime would do with them:

* the container's ``command``/``args`` (or the image's ENTRYPOINT, read from the Dockerfile that builds it),
  with ``$(VAR)`` expanded from its environment, built as the pod launcher builds an engine's (kube/launcher.py
  ``container_env``: envFrom ConfigMaps, literal values, ConfigMap keys, the downward API of the running pod);
* its ConfigMap, Secret and emptyDir volumes written to a folder of the run and every argument or variable that
  names a mount path pointed there;
* its ServiceAccount: a kubeconfig holding a token the API server issued for that ServiceAccount
  (``kubectl create token``), so RBAC applies to it as in a cluster.

The image is mapped to a program built here (``program``). Each Deployment's one pod is placed by the real
scheduler and given a loopback IP by KWOK; its process listens on that IP and its container port (the listen
address is the one flag added to each program: ``localise``), and the pod is marked Ready once it does. Cluster
DNS and the Service VIP are replaced by /etc/hosts lines naming each Service (``<name>.<namespace>.svc`` and
``.svc.cluster.local``) at its pod's IP (every such Service has one pod; ports equal the container ports); the
lines are removed when the run ends. An APIService's Service becomes an
ExternalName for that host with the APIService's port set to the container port (the aggregator then dials it
directly: k8s.io/apiserver/pkg/util/proxy ResolveCluster), and its ``caBundle`` is the cluster CA, which signed
the extension server's serving certificate. In-cluster service discovery (Prometheus' kubernetes_sd_configs)
gets the ServiceAccount's kubeconfig in place of the in-cluster one.
"""
from __future__ import annotations

import base64
import json
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml

from scalearena.contracts.errors import RunFailed
from scalearena.contracts.files import write_secret
from scalearena.harness.kube.cluster import IMAGES, Kubectl
from scalearena.harness.kube.launcher import container_env, expand
from scalearena.harness.kube.render import Obj
from scalearena.harness.local.supervisor import Child, Supervisor, wait_for_port

ROOT = Path(__file__).resolve().parents[2]
HOSTS = Path("/etc/hosts")
HOSTS_BEGIN, HOSTS_END = "# BEGIN scalearena kwok services", "# END scalearena kwok services"
COMPONENTS = ("prometheus", "prometheus-adapter", "kube-state-metrics", "wva-controller", "gateway")  # start order


def hosts_block(entries: Mapping[tuple[str, str], str]) -> str:
    """/etc/hosts lines: each (namespace, Service) under its cluster DNS names, at its one pod's IP."""
    lines = [HOSTS_BEGIN] + [f"{ip} {name}.{ns}.svc {name}.{ns}.svc.cluster.local"
                             for (ns, name), ip in sorted(entries.items())] + [HOSTS_END]
    return "\n".join(lines) + "\n"


def without_block(text: str) -> str:
    out, skip = [], False
    for line in text.splitlines(keepends=True):
        if line.strip() == HOSTS_BEGIN:
            skip = True
        elif line.strip() == HOSTS_END:
            skip = False
        elif not skip:
            out.append(line)
    return "".join(out)


def write_hosts(entries: Mapping[tuple[str, str], str], path: Path = HOSTS) -> None:
    """Replace scalearena's block of service names in ``path`` (none: remove it), keeping every other line."""
    old = path.read_text()
    new = without_block(old) + (hosts_block(entries) if entries else "")
    if new != old:
        path.write_text(new)  # /etc/hosts is often a bind mount: rewrite in place, never rename over it


def _by(objs: list[Obj], kind: str, name: str, namespace: str | None = None) -> Obj | None:
    for o in objs:
        md = o.get("metadata", {})
        if o.get("kind") == kind and md.get("name") == name and (namespace is None or
                                                                    md.get("namespace", namespace) == namespace):
            return o
    return None


def _data(o: Obj | None) -> dict[str, str]:
    if o is None:
        return {}
    if o.get("kind") == "Secret":
        out = {k: base64.b64decode(v).decode() for k, v in (o.get("data") or {}).items()}
        out.update(o.get("stringData") or {})
        return out
    return {k: str(v) for k, v in (o.get("data") or {}).items()}


def entrypoint(image: str) -> list[str]:
    """The ENTRYPOINT (else CMD) of a scalearena image, read from the Dockerfile that builds it."""
    dockerfile = ROOT / IMAGES[image]
    found: dict[str, list[str]] = {}
    for line in dockerfile.read_text().splitlines():
        for key in ("ENTRYPOINT", "CMD"):
            if line.startswith(key + " "):
                found[key] = json.loads(line[len(key) + 1:])
    return found.get("ENTRYPOINT") or found.get("CMD") or []


@dataclass
class Container:
    """One container of a rendered pod template, made runnable here."""

    pod: str
    namespace: str
    name: str
    argv: list[str]
    env: dict[str, str]
    ports: dict[str, int]
    service_account: str


def prepare(obj: Obj, objs: list[Obj], folder: Path, program: Callable[[str, list[str]], list[str]],
            index: int = 0, pod: Obj | None = None) -> Container:
    """Container ``index`` of Deployment ``obj`` (running as ``pod``, whose fields the downward API reads): argv
    (program for its image + expanded args), env (the kubelet's, kube/launcher.py ``container_env``), volumes
    written under ``folder`` and mount paths pointed there."""
    ns = obj["metadata"].get("namespace", "scalearena")
    spec = obj["spec"]["template"]["spec"]
    c = spec["containers"][index]
    live = pod or {"metadata": {"name": obj["metadata"]["name"], "namespace": ns}, "spec": spec}
    live = {**live, "metadata": {"namespace": ns, **live.get("metadata", {})}}

    def config_map(namespace: str, name: str) -> dict[str, str] | None:
        o = _by(objs, "ConfigMap", name, namespace)
        return None if o is None else _data(o)

    env = container_env(live, c, config_map)
    mounts: dict[str, Path] = {}
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    for m in c.get("volumeMounts", []):
        vol = volumes.get(m["name"], {})
        local = folder / m["name"]
        local.mkdir(parents=True, exist_ok=True)
        src = (_by(objs, "ConfigMap", vol["configMap"]["name"], ns) if "configMap" in vol else
               _by(objs, "Secret", vol["secret"]["secretName"], ns) if "secret" in vol else None)
        for key, value in _data(src).items():
            if "secret" in vol:  # the gateway's admin token: 0600, as only this user's processes read it
                write_secret(local / key, value)
            else:
                (local / key).write_text(value)
        mounts[m["mountPath"].rstrip("/")] = local

    def remount(s: str) -> str:
        for path, local in sorted(mounts.items(), key=lambda kv: -len(kv[0])):
            if s == path or s.startswith(path + "/") or ("=" + path) in s:
                return s.replace(path, str(local), 1)
        return s

    args = [remount(expand(a, env)) for a in c.get("args", [])]
    command = [expand(a, env) for a in c.get("command", [])]
    env = {k: remount(v) for k, v in env.items()}
    ports = {p.get("name", str(p["containerPort"])): int(p["containerPort"]) for p in c.get("ports", [])}
    return Container(pod=obj["metadata"]["name"], namespace=ns, name=c["name"],
                     argv=program(c["image"], command) + args, env=env, ports=ports,
                     service_account=spec.get("serviceAccountName", "default"))


def sa_kubeconfig(kubectl: Kubectl, server: str, ca: Path, namespace: str, sa: str, path: Path) -> Path:
    """A kubeconfig that authenticates as ``namespace/sa`` with a token the API server issues for it."""
    token = kubectl.run("-n", namespace, "create", "token", sa, "--duration=24h", timeout=60).stdout.strip()
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "sa",
        "clusters": [{"name": "kwok", "cluster": {"server": server, "certificate-authority": str(ca)}}],
        "users": [{"name": sa, "user": {"token": token}}],
        "contexts": [{"name": "sa", "context": {"cluster": "kwok", "user": sa, "namespace": namespace}}]}))
    path.chmod(0o600)
    return path


def local_objects(objs: list[Obj], ca_pem: bytes) -> list[Obj]:
    """What a kwok run applies: the kind objects, with each APIService's Service an ExternalName of the host its
    process listens on, its port that process' port, and its caBundle the cluster CA."""
    out = []
    targets: dict[tuple[str, str], int] = {}
    for o in objs:
        if o["kind"] == "APIService" and (o["spec"].get("service") or {}).get("name"):
            svc = o["spec"]["service"]
            targets[(svc.get("namespace", "scalearena"), svc["name"])] = 0
    for o in objs:
        md = o["metadata"]
        key = (md.get("namespace", "scalearena"), md["name"])
        if o["kind"] == "Service" and key in targets:
            port = _target_port(o, objs)
            targets[key] = port
            o = {"apiVersion": "v1", "kind": "Service", "metadata": dict(md),
                 "spec": {"type": "ExternalName", "externalName": f"{key[1]}.{key[0]}.svc.cluster.local",
                          "ports": [{"name": "https", "port": port}]}}
        out.append(o)
    for i, o in enumerate(out):
        if o["kind"] == "APIService" and (o["spec"].get("service") or {}).get("name"):
            svc = dict(o["spec"]["service"])
            svc["port"] = targets.get((svc.get("namespace", "scalearena"), svc["name"])) or svc.get("port", 443)
            spec = {k: v for k, v in o["spec"].items() if k != "insecureSkipTLSVerify"}
            spec.update(service=svc, caBundle=base64.b64encode(ca_pem).decode())
            out[i] = {**o, "spec": spec}
    return out


def _target_port(svc: Obj, objs: list[Obj]) -> int:
    """The container port behind a Service's first port (a named targetPort looked up in the selected Deployment)."""
    p = svc["spec"]["ports"][0]
    target = p.get("targetPort", p["port"])
    if isinstance(target, int) or str(target).isdigit():
        return int(target)
    sel = svc["spec"].get("selector") or {}
    for o in objs:
        if o["kind"] != "Deployment":
            continue
        labels = o["spec"]["template"]["metadata"].get("labels", {})
        if sel and all(labels.get(k) == v for k, v in sel.items()):
            for c in o["spec"]["template"]["spec"]["containers"]:
                for cp in c.get("ports", []):
                    if cp.get("name") == target:
                        return int(cp["containerPort"])
    raise RunFailed(f"Service {svc['metadata']['name']}: no container port named {target!r}")


def component(o: Obj) -> str | None:
    """The scalearena component a Deployment is (``COMPONENTS``), None for the engines and the rest."""
    if o.get("kind") != "Deployment":
        return None
    c = o["metadata"].get("labels", {}).get("scalearena.io/component")
    return c if c in COMPONENTS else None


def services_of(objs: list[Obj], deployment: Obj) -> list[tuple[str, str]]:
    """(namespace, name) of every Service whose selector picks ``deployment``'s pods."""
    ns = deployment["metadata"].get("namespace", "scalearena")
    labels = deployment["spec"]["template"]["metadata"].get("labels", {})
    return [(ns, o["metadata"]["name"]) for o in objs
            if o["kind"] == "Service" and o["metadata"].get("namespace", "scalearena") == ns
            and (sel := o["spec"].get("selector") or {}) and all(labels.get(k) == v for k, v in sel.items())]


def selector(d: Obj) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(d["spec"]["selector"]["matchLabels"].items()))


class LocalServices:
    """Start and stop the stack's service Deployments of one run as processes (see the module docstring)."""

    def __init__(self, objs: list[Obj], folder: Path, kubectl: Kubectl, server: str, ca: Path,
                 binary: Callable[[str], Path], sup: Supervisor | None = None, ready_timeout_s: float = 120) -> None:
        self.objs, self.folder, self.kubectl, self.server, self.ca = objs, folder.resolve(), kubectl, server, ca
        self.binary = binary
        self.sup = sup or Supervisor(folder / "logs")
        self.ready_timeout_s = ready_timeout_s
        self.children: list[Child] = []
        self.urls: dict[str, str] = {}
        self.hosts: dict[tuple[str, str], str] = {}

    def program(self, image: str, command: list[str]) -> list[str]:
        if image in IMAGES:  # scalearena's own images: their command, python being this interpreter
            argv = command or entrypoint(image)
            return [sys.executable if a == "python" else a for a in argv]
        repo = image.split("@")[0].rsplit(":", 1)[0].rsplit("/", 1)[-1]
        if repo in ("prometheus", "prometheus-adapter", "kube-state-metrics"):
            return [str(self.binary(repo))]
        raise RunFailed(f"CLUSTER=kwok has no local program for image {image}")

    def start(self, hosts: Callable[[Mapping[tuple[str, str], str]], None] = write_hosts) -> dict[str, str]:
        """Start every service Deployment's pod, in COMPONENTS order, on the IP KWOK gave it; returns
        {component: URL of its first port}."""
        deps = sorted((o for o in self.objs if component(o)), key=lambda o: COMPONENTS.index(component(o) or ""))
        for d in deps:
            comp = component(d) or ""
            pod = self._pod(d)
            ip = pod["status"]["podIP"]
            for svc in services_of(self.objs, d):
                self.hosts[svc] = ip
            hosts(self.hosts)
            kubeconfig = None
            for i, _ in enumerate(d["spec"]["template"]["spec"]["containers"]):
                c = prepare(d, self.objs, self.folder / comp, self.program, i, pod=pod)
                if kubeconfig is None:
                    kubeconfig = sa_kubeconfig(self.kubectl, self.server, self.ca, c.namespace, c.service_account,
                                               self.folder / comp / "kubeconfig")
                argv, env = self.localise(comp, c, ip, kubeconfig)
                child = self.sup.start(f"{comp}-{c.name}", argv, env=env, cwd=self.folder / comp)
                self.children.append(child)
                if c.ports:
                    port = next(iter(c.ports.values()))
                    if not wait_for_port(port, self.ready_timeout_s, child.proc, host=ip):
                        raise RunFailed(f"kwok: {comp}/{c.name} did not listen on {ip}:{port} "
                                        f"({'exited ' + str(child.returncode()) if not child.alive() else 'timeout'}); "
                                        f"command: {' '.join(argv)[:300]} | log {child.log_path}: "
                                        + " | ".join(child.log_tail(6).splitlines()))
                    scheme = "https" if comp == "prometheus-adapter" else "http"
                    self.urls.setdefault(comp, f"{scheme}://{ip}:{port}")
            self._ready(pod)
        return self.urls

    def _pod(self, d: Obj) -> Obj:
        """The Deployment's one pod once the scheduler placed it and KWOK gave it an IP."""
        ns = d["metadata"].get("namespace", "scalearena")
        deadline = time.monotonic() + self.ready_timeout_s
        while True:
            pods = self.kubectl.get_json("-n", ns, "pods", "-l", selector(d)).get("items", [])
            live = [p for p in pods if not p["metadata"].get("deletionTimestamp")
                    and (p.get("status") or {}).get("podIP")]
            if live:
                return dict(live[0])
            if time.monotonic() > deadline:
                phases = [(p["metadata"]["name"], (p.get("status") or {}).get("phase")) for p in pods]
                raise RunFailed(f"kwok: no running pod of Deployment {d['metadata']['name']} after "
                                f"{self.ready_timeout_s:g} s (pods: {phases or 'none'})")
            time.sleep(0.5)

    def _ready(self, pod: Obj) -> None:
        """Its process listens: the pod is Ready, as the kubelet's readiness probe would report."""
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        conds = [{"type": t, "status": "True", "lastTransitionTime": now}
                 for t in ("Initialized", "PodScheduled", "ContainersReady", "Ready")]
        statuses = [{**cs, "ready": True, "started": True} for cs in pod["status"].get("containerStatuses", [])]
        patch = {"status": {"conditions": conds, **({"containerStatuses": statuses} if statuses else {})}}
        self.kubectl.run("-n", pod["metadata"]["namespace"], "patch", "pod", pod["metadata"]["name"],
                         "--subresource=status", "--type=strategic", "-p", json.dumps(patch), timeout=60)

    def localise(self, comp: str, c: Container, ip: str, kubeconfig: Path) -> tuple[list[str], dict[str, str]]:
        """The listen address (and, for the Go programs, credentials and serving certificate) of each program."""
        argv, env = list(c.argv), {**c.env, "KUBECONFIG": str(kubeconfig)}
        kc = str(kubeconfig)
        if comp == "prometheus":
            for i, a in enumerate(argv):
                if a.startswith("--config.file="):
                    argv[i] = "--config.file=" + str(self._prometheus_config(Path(a.split("=", 1)[1]), kc))
            argv.append(f"--web.listen-address={ip}:{c.ports.get('web', 9090)}")
        elif comp == "gateway" and c.name == "gateway":  # its routing decisions kept with the run (docs/fidelity.md)
            argv += [f"--host={ip}", f"--trace-file={self.folder / 'logs' / 'gateway-trace.jsonl'}"]
        elif comp == "wva-controller":
            argv += [f"--metrics-host={ip}", f"--kubeconfig={kc}"]
        elif comp == "prometheus-adapter":
            from scalearena.harness.kube import pki

            pair = pki.serving_pair(self.folder / comp, pki.Pair(self.ca, self.ca.with_suffix(".key")),
                                    "prometheus-adapter-serving", hosts=(ip, "localhost",
                                                                         "prometheus-adapter.scalearena.svc",
                                                                         "prometheus-adapter.scalearena.svc.cluster.local"))
            argv = [a for a in argv if not a.startswith("--cert-dir=")]
            argv += [f"--bind-address={ip}", f"--tls-cert-file={pair.cert}", f"--tls-private-key-file={pair.key}",
                     f"--lister-kubeconfig={kc}", f"--authentication-kubeconfig={kc}", f"--authorization-kubeconfig={kc}"]
        elif comp == "kube-state-metrics":
            argv += [f"--kubeconfig={kc}", f"--host={ip}", f"--telemetry-host={ip}"]
        return argv, env

    def _prometheus_config(self, path: Path, kubeconfig: str) -> Path:
        cfg = yaml.safe_load(path.read_text())
        for job in cfg.get("scrape_configs", []):
            for sd in job.get("kubernetes_sd_configs", []):
                sd["kubeconfig_file"] = kubeconfig
        out = path.with_name("prometheus.kwok.yml")
        out.write_text(yaml.safe_dump(cfg))
        return out

    def check(self) -> None:
        """RunFailed when a service process exited during the run."""
        for ch in self.children:
            if not ch.alive() and not ch.stop_requested:
                raise RunFailed(f"kwok: {ch.name} exited during the run (exit {ch.returncode()}): "
                                + " | ".join(ch.log_tail(6).splitlines()))

    def stop(self, hosts: Callable[[Mapping[tuple[str, str], str]], None] = write_hosts) -> None:
        self.sup.close(grace_s=5.0)
        if self.hosts:
            self.hosts.clear()
            hosts(self.hosts)
