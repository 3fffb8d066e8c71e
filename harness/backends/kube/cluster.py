"""The command-line tools the kube backend drives: kind, kubectl, docker.

Shelling out (rather than re-implementing kind or server-side apply) keeps
the backend honest: it does exactly what docs/kubernetes.md tells a user to
type. Every command goes through ``Shell`` so unit tests replace it with a
recorder and assert the command sequence; nothing here opens a socket itself.

Missing tools are reported once, all together, with the versions this
backend was built for; a missing kubeconfig context on CLUSTER=cluster names
what was looked for.
"""
from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from scalearena.contracts.errors import UserError

from .render import CLUSTER_SCOPED, Obj, dump_yaml

CLUSTER_NAME = "scalearena"
TOOLS = {  # tool -> (version built and documented for, where to get it)
    "docker": ("24 or newer (a running engine)", "https://docs.docker.com/engine/install/"),
    "kind": ("v0.29.0 (node image kindest/node:v1.33.1)", "https://kind.sigs.k8s.io/docs/user/quick-start/"),
    "kubectl": ("v1.33 (within one minor version of the cluster)", "https://kubernetes.io/docs/tasks/tools/"),
}
KEDA_VERSION = "2.17.2"
KEDA_MANIFEST = f"https://github.com/kedacore/keda/releases/download/v{KEDA_VERSION}/keda-{KEDA_VERSION}.yaml"
IMAGES = {"scalearena/serve-router:dev": "Dockerfile.router", "scalearena/wva-controller:dev": "Dockerfile.controller"}


def preflight(mode: str, which: Callable[[str], str | None] = shutil.which) -> None:
    need = ["docker", "kind", "kubectl"] if mode == "kind" else ["kubectl"]
    missing = [t for t in need if which(t) is None]
    if missing:
        lines = "; ".join(f"{t} {TOOLS[t][0]} from {TOOLS[t][1]}" for t in missing)
        raise UserError(f"CLUSTER={mode} needs {', '.join(missing)} on PATH", where="PATH",
                        expected=f"install {lines}")


class Shell:
    """Runs commands; ``run`` raises a UserError with the command's stderr tail on failure."""

    def run(self, argv: Sequence[str], *, input: str | None = None, timeout: float | None = 600,
            check: bool = True) -> subprocess.CompletedProcess[str]:
        try:
            r = subprocess.run(list(argv), input=input, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise UserError(f"`{' '.join(argv[:4])} ...` did not finish in {timeout:g} s") from None
        if check and r.returncode != 0:
            tail = (r.stderr or r.stdout).strip().splitlines()[-5:]
            raise UserError(f"`{' '.join(argv[:4])} ...` failed: " + " | ".join(tail))
        return r

    def popen(self, argv: Sequence[str], log: Path) -> subprocess.Popen[bytes]:
        f = open(log, "ab")  # noqa: SIM115 - owned by the child for its lifetime
        return subprocess.Popen(list(argv), stdout=f, stderr=subprocess.STDOUT)


class Kubectl:
    def __init__(self, shell: Shell, context: str | None = None) -> None:
        self.shell = shell
        self.context = context

    def argv(self, *args: str) -> list[str]:
        return ["kubectl", *(["--context", self.context] if self.context else []), *args]

    def run(self, *args: str, input: str | None = None, timeout: float | None = 600,
            check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.shell.run(self.argv(*args), input=input, timeout=timeout, check=check)

    def current_context(self) -> str:
        r = self.shell.run(["kubectl", "config", "current-context"], check=False, timeout=30)
        if r.returncode != 0 or not r.stdout.strip():
            raise UserError("no current kubeconfig context", where="kubeconfig ($KUBECONFIG or ~/.kube/config)",
                            expected="a context selected with `kubectl config use-context NAME`")
        return r.stdout.strip()

    def apply(self, objs: list[Obj]) -> None:
        if objs:
            self.run("apply", "--server-side", "--force-conflicts", "--field-manager=scalearena", "-f", "-",
                     input=dump_yaml(objs))

    def delete(self, objs: list[Obj]) -> None:
        if objs:
            self.run("delete", "--ignore-not-found", "--wait=false", "-f", "-", input=dump_yaml(objs),
                     check=False, timeout=300)

    def get_json(self, *args: str) -> Any:
        return json.loads(self.run("get", *args, "-o", "json", timeout=60).stdout)

    def exists(self, *args: str) -> bool:
        return self.run("get", *args, "--ignore-not-found", "-o", "name", check=False, timeout=60).stdout.strip() != ""

    def wait_established(self, crd: str, timeout_s: int = 60) -> None:
        self.run("wait", "--for=condition=Established", f"crd/{crd}", f"--timeout={timeout_s}s")

    def rollout(self, namespace: str, deployment: str, timeout_s: int) -> None:
        self.run("-n", namespace, "rollout", "status", f"deployment/{deployment}", f"--timeout={timeout_s}s",
                 timeout=timeout_s + 30)

    def port_forward(self, namespace: str, target: str, local: int, remote: int, log: Path) -> Any:
        return self.shell.popen(self.argv("-n", namespace, "port-forward", target, f"{local}:{remote}"), log)


class KindCluster:
    """Create / delete the kind cluster and give its workers their fake GPUs."""

    def __init__(self, shell: Shell, config: Path, name: str = CLUSTER_NAME) -> None:
        self.shell, self.config, self.name = shell, config, name
        self.kubectl = Kubectl(shell, context=f"kind-{name}")

    def exists(self) -> bool:
        r = self.shell.run(["kind", "get", "clusters"], check=False, timeout=60)
        return self.name in r.stdout.split()

    def create(self) -> None:
        if not self.exists():
            self.shell.run(["kind", "create", "cluster", "--name", self.name, "--config", str(self.config),
                            "--wait", "120s"], timeout=900)
        self.patch_fake_gpus()

    def delete(self) -> None:
        self.shell.run(["kind", "delete", "cluster", "--name", self.name], check=False, timeout=300)

    def patch_fake_gpus(self) -> None:
        """Extended resources cannot be declared in a kind config: patch node status, as the docs do."""
        nodes = self.kubectl.get_json("nodes", "-l", "scalearena.io/fake-gpus")
        for n in nodes.get("items", []):
            count = n["metadata"]["labels"]["scalearena.io/fake-gpus"]
            patch = [{"op": "add", "path": "/status/capacity/nvidia.com~1gpu", "value": count}]
            self.kubectl.run("patch", "node", n["metadata"]["name"], "--subresource=status", "--type=json",
                             "-p", json.dumps(patch))

    def load_images(self, images: list[str]) -> None:
        for image in images:
            self.shell.run(["kind", "load", "docker-image", image, "--name", self.name], timeout=900)


def build_images(shell: Shell, root: Path, rename: Callable[[str], str] = lambda s: s) -> list[str]:
    out = []
    for image, dockerfile in IMAGES.items():
        tag = rename(image)
        shell.run(["docker", "build", "-f", str(root / dockerfile), "-t", tag, str(root)], timeout=1800)
        out.append(tag)
    return out


def split_scope(objs: list[Obj]) -> tuple[list[Obj], list[Obj]]:
    """(namespaced, cluster-scoped) objects."""
    cluster = [o for o in objs if o["kind"] in CLUSTER_SCOPED]
    return [o for o in objs if o["kind"] not in CLUSTER_SCOPED], cluster
