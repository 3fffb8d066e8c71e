"""``scalearena doctor``: is this machine ready for CLUSTER=kind / CLUSTER=cluster, and what to fix if not.

Every check runs a read-only command through ``Shell`` (so tests replay canned
output) and yields a line: OK, WARN (works, but a known pitfall) or FAIL, with
what to do. Facts checked, and where they come from:

* tool versions: the pins in docs/kubernetes.md (kind v0.29.0 / node v1.33.1,
  kubectl within one minor of the cluster — Kubernetes' version-skew policy,
  Docker 24+). helm is optional (scalearena installs nothing with helm).
* inotify limits: kind's "Known Issues" page — ``fs.inotify.max_user_watches``
  >= 524288 and ``max_user_instances`` >= 512, else pods fail with "too many
  open files" on multi-node clusters.
* the containerd image store: Docker with the containerd snapshotter
  (``driver-type io.containerd.snapshotter.v1`` in ``docker info``) makes
  ``kind load docker-image`` fail with "content digest ... not found" for
  multi-platform images (kubernetes-sigs/kind#3795, open; the workaround
  upstream documents is ``docker image save --platform`` + ``kind load
  image-archive``, or turning the snapshotter off).
* cluster mode: the context answers (``kubectl version``), and the RBAC verbs the
  backend needs (``kubectl auth can-i``).

Exit codes (documented in docs/kubernetes.md): 0 every check passed (warnings
allowed), 1 at least one FAIL.
"""
from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scalearena.harness.kube.cluster import CLUSTER_NAME, Shell

KUBE_MINOR = 33  # kindest/node:v1.33.1
MIN_DOCKER = 24
MIN_KIND = (0, 29)
INOTIFY = {"max_user_watches": 524288, "max_user_instances": 512}
RBAC = [("create", "deployments"), ("create", "services"), ("create", "configmaps"), ("create", "secrets"),
        ("create", "horizontalpodautoscalers"), ("create", "networkpolicies"), ("create", "roles"),
        ("create", "rolebindings"), ("patch", "deployments/scale")]
RBAC_CLUSTER = [("create", "customresourcedefinitions"), ("create", "apiservices"), ("create", "clusterroles")]


@dataclass(frozen=True)
class Check:
    name: str
    status: str  # OK | WARN | FAIL
    detail: str
    fix: str = ""


def _version(text: str, pattern: str) -> tuple[int, ...] | None:
    m = re.search(pattern, text)
    return tuple(int(g) for g in m.groups()) if m else None


class Doctor:
    def __init__(self, shell: Shell, which: Callable[[str], str | None], proc: Path = Path("/proc")) -> None:
        self.shell, self.which, self.proc = shell, which, proc

    def _run(self, *argv: str, timeout: float = 20) -> tuple[int, str]:
        try:
            r = self.shell.run(list(argv), check=False, timeout=timeout)
        except Exception as e:  # noqa: BLE001 - a hanging tool is a finding, not a crash
            return 124, str(e)
        return r.returncode, (r.stdout or "") + (r.stderr or "")

    def docker(self) -> list[Check]:
        if not self.which("docker"):
            return [Check("docker", "FAIL", "not on PATH", "install Docker Engine 24+: "
                          "https://docs.docker.com/engine/install/")]
        rc, out = self._run("docker", "version", "--format", "{{.Server.Version}}")
        v = _version(out, r"^(\d+)\.(\d+)")
        if rc != 0 or v is None:
            return [Check("docker", "FAIL", f"engine not reachable: {out.strip()[-200:]}",
                          "start the Docker daemon and make sure this user may use it (docker group)")]
        checks = [Check("docker", "OK" if v[0] >= MIN_DOCKER else "FAIL", f"engine {v[0]}.{v[1]}",
                        "" if v[0] >= MIN_DOCKER else f"upgrade Docker to {MIN_DOCKER}+")]
        rc, info = self._run("docker", "info", "--format", "{{json .DriverStatus}}")
        if rc == 0 and "io.containerd.snapshotter" in info:
            checks.append(Check("containerd image store", "WARN", "Docker uses the containerd snapshotter",
                                "`kind load docker-image` can fail with 'content digest ... not found' "
                                "(kubernetes-sigs/kind#3795): set \"features\": {\"containerd-snapshotter\": "
                                "false} in /etc/docker/daemon.json and restart Docker, or build with "
                                "--provenance=false"))
        return checks

    def kind(self) -> list[Check]:
        if not self.which("kind"):
            return [Check("kind", "FAIL", "not on PATH", "install kind v0.29.0: "
                          "https://kind.sigs.k8s.io/docs/user/quick-start/#installation")]
        _, out = self._run("kind", "version")
        v = _version(out, r"v(\d+)\.(\d+)")
        ok = v is not None and v >= MIN_KIND
        checks = [Check("kind", "OK" if ok else "FAIL", out.strip() or "no version output",
                        "" if ok else "install kind v0.29.0 or newer")]
        rc, clusters = self._run("kind", "get", "clusters")
        if rc == 0 and CLUSTER_NAME in clusters.split():
            checks.append(Check("kind cluster", "WARN", f"a kind cluster named {CLUSTER_NAME!r} already exists",
                                "scalearena reuses it only when `scalearena kind up` made it; otherwise "
                                f"`kind delete cluster --name {CLUSTER_NAME}`"))
        return checks

    def kubectl(self) -> list[Check]:
        if not self.which("kubectl"):
            return [Check("kubectl", "FAIL", "not on PATH", "install kubectl v1.33: "
                          "https://kubernetes.io/docs/tasks/tools/")]
        _, out = self._run("kubectl", "version", "--client", "-o", "json")
        try:
            minor = int(re.sub(r"\D", "", json.loads(out)["clientVersion"]["minor"]))
        except (ValueError, KeyError, TypeError):
            return [Check("kubectl", "FAIL", "cannot read `kubectl version --client`", "reinstall kubectl v1.33")]
        ok = abs(minor - KUBE_MINOR) <= 1
        return [Check("kubectl", "OK" if ok else "FAIL", f"client v1.{minor}",
                      "" if ok else f"use kubectl v1.{KUBE_MINOR - 1}..v1.{KUBE_MINOR + 1} (version skew policy)")]

    def helm(self) -> list[Check]:
        if not self.which("helm"):
            return [Check("helm", "OK", "not installed (optional: scalearena installs nothing with helm)")]
        _, out = self._run("helm", "version", "--short")
        return [Check("helm", "OK", out.strip() or "present (optional)")]

    def inotify(self) -> list[Check]:
        out = []
        for key, need in INOTIFY.items():
            path = self.proc / "sys/fs/inotify" / key
            try:
                have = int(path.read_text().strip())
            except (OSError, ValueError):
                out.append(Check(f"inotify {key}", "WARN", f"cannot read {path}", ""))
                continue
            ok = have >= need
            out.append(Check(f"inotify {key}", "OK" if ok else "FAIL", f"{have}",
                             "" if ok else f"sudo sysctl fs.inotify.{key}={need} (kind Known Issues)"))
        return out

    def cluster(self) -> list[Check]:
        if not self.which("kubectl"):
            return []
        rc, ctx = self._run("kubectl", "config", "current-context")
        if rc != 0 or not ctx.strip():
            return [Check("kubeconfig context", "FAIL", "no current context",
                          "`kubectl config use-context NAME`")]
        rc, out = self._run("kubectl", "version", "-o", "json", timeout=30)
        try:
            server = json.loads(out)["serverVersion"]["gitVersion"]
        except (ValueError, KeyError, TypeError):
            return [Check("cluster", "FAIL", f"context {ctx.strip()} does not answer: {out.strip()[-200:]}",
                          "check the API server address, VPN and credentials of this context")]
        checks = [Check("cluster", "OK", f"context {ctx.strip()}, server {server}")]
        for verb, res in RBAC:
            checks.append(self._can_i(verb, res, ["-n", "scalearena"]))
        for verb, res in RBAC_CLUSTER:
            checks.append(self._can_i(verb, res, []))
        return checks

    def _can_i(self, verb: str, resource: str, ns: list[str]) -> Check:
        rc, out = self._run("kubectl", "auth", "can-i", verb, resource, *ns)
        ok = out.strip().startswith("yes")
        where = " in namespace scalearena" if ns else " (cluster-wide)"
        return Check(f"RBAC {verb} {resource}", "OK" if ok else "FAIL", out.strip() or "no answer",
                     "" if ok else f"ask a cluster admin to grant `{verb}` on {resource}{where}")

    def kwok(self) -> list[Check]:
        """CLUSTER=kwok: the Go toolchain and the module proxy (to build), the built tools, /etc/hosts (the cluster
        DNS names of the stack's services), prometheus (Debian's), and a control plane left running."""
        from scalearena.harness.kube import tools

        checks = []
        if not self.which("go"):
            checks.append(Check("go", "FAIL", "not on PATH", "install Go 1.25.7 or newer "
                                "(https://go.dev/doc/install); every tool is built from source with it"))
        else:
            _, out = self._run("go", "version")
            checks.append(Check("go", "OK", out.strip()))
            rc, proxy = self._run("go", "env", "GOPROXY")
            rc2, out = self._run("go", "list", "-m", "-json", f"k8s.io/kubernetes@{tools.versions()['kubernetes']}",
                                 timeout=60)
            ok = rc2 == 0
            checks.append(Check("Go module proxy", "OK" if ok else "FAIL", proxy.strip() or "default",
                                "" if ok else f"the proxy does not answer ({out.strip()[-160:]}): set GOPROXY to a "
                                "reachable proxy, or GOFLAGS=-mod=mod with a filled module cache"))
        missing = [n for n in tools.BINARIES if not tools.binary(n).exists()]
        checks.append(Check("built tools", "OK" if not missing else "WARN",
                            f"{len(tools.BINARIES) - len(missing)} of {len(tools.BINARIES)} binaries in "
                            f"{tools.cache_dir()}"
                            + (f" (missing: {', '.join(missing)})" if missing else ""),
                            "" if not missing else "`make kwok-tools` (or `scalearena kwok tools`) builds them; "
                            "the first build takes tens of minutes on 2 cores (docs/kubernetes.md)"))
        checks.append(self._loopback())
        from scalearena.harness.kube.relay import netns_supported

        ok = netns_supported()
        checks.append(Check("network namespaces", "OK" if ok else "WARN", "a sim pod gets one of its own" if ok else
                            "not available (not root)", "" if ok else "llm-d-inference-sim then listens on a free "
                            "port of the host, relayed from its pod IP (docs/kubernetes.md)"))
        hosts = Path("/etc/hosts")
        ok = os.access(hosts, os.W_OK)
        checks.append(Check("/etc/hosts", "OK" if ok else "FAIL", "writable" if ok else "not writable by this user",
                            "" if ok else "run as root (the stack's Service names are written there for the run), "
                            "or in a container or VM where you are"))
        from scalearena.harness.kube.kwok import KwokCluster

        c = KwokCluster()
        if c.running():
            assert c.state is not None
            checks.append(Check("kwok cluster", "WARN", f"running since {c.state.created} ({c.state.owner}) in "
                                f"{c.folder}", "runs reuse it when `scalearena kwok up` made it; else "
                                "`scalearena kwok down`"))
        return checks

    @staticmethod
    def _loopback() -> Check:
        """Pods get IPs in 127.<i>.0.0/16 (kube/kwok.py): the kernel must accept binds there, and give free ports."""
        import socket

        try:
            for host in ("127.0.0.1", "127.1.0.1", "127.4.0.1"):
                with socket.socket() as s:
                    s.bind((host, 0))
        except OSError as e:
            return Check("loopback", "FAIL", f"cannot bind {host}: {e.strerror}",
                         "the pods' IPs are in 127.0.0.0/8 on lo: run where all of 127.0.0.0/8 is local (Linux)")
        return Check("loopback", "OK", "127.0.0.0/8 bindable, free ports available")

    def checks(self, mode: str) -> list[Check]:
        if mode == "kwok":
            return self.kwok()
        if mode == "kind":
            return self.docker() + self.kind() + self.kubectl() + self.helm() + self.inotify()
        return self.kubectl() + self.helm() + self.cluster()


def report(checks: list[Check]) -> tuple[list[str], int]:
    """Printable lines and the exit code (1 when any check failed)."""
    lines = []
    for c in checks:
        line = f"{c.status:<4}  {c.name}: {c.detail}"
        if c.fix:
            line += f"\n      fix: {c.fix}"
        lines.append(line)
    failed = sum(c.status == "FAIL" for c in checks)
    lines.append(f"{len(checks)} checks: {failed} failed, {sum(c.status == 'WARN' for c in checks)} warnings")
    return lines, (1 if failed else 0)


def run_doctor(mode: str, shell: Any = None, which: Callable[[str], str | None] | None = None,
               proc: Path = Path("/proc")) -> tuple[list[str], int]:
    import shutil

    return report(Doctor(shell or Shell(), which or shutil.which, proc).checks(mode))
