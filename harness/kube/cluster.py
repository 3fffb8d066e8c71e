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

from scalearena.contracts.errors import RunFailed, UserError
from scalearena.harness.kube.render import CLUSTER_SCOPED, Obj, dump_yaml

CLUSTER_NAME = "scalearena"
TOOLS = {  # tool -> (version built and documented for, where to get it)
    "docker": ("24 or newer (a running engine)", "https://docs.docker.com/engine/install/"),
    "kind": ("v0.29.0 (node image kindest/node:v1.33.1)", "https://kind.sigs.k8s.io/docs/user/quick-start/"),
    "kubectl": ("v1.33 (within one minor version of the cluster)", "https://kubernetes.io/docs/tasks/tools/"),
}
KEDA_VERSION = "2.18.0"  # supports Kubernetes v1.31-v1.33 (keda.sh operate/cluster compatibility table)
KEDA_MANIFEST = f"https://github.com/kedacore/keda/releases/download/v{KEDA_VERSION}/keda-{KEDA_VERSION}.yaml"
IMAGES = {"scalearena/serve-router:dev": "Dockerfile.router", "scalearena/wva-controller:dev": "Dockerfile.controller",
          "scalearena/serve-engine:dev": "Dockerfile.engine"}  # serve-engine: roofline scenarios on kind


def preflight(mode: str, which: Callable[[str], str | None] | None = None, need: Sequence[str] | None = None) -> None:
    """A missing tool is bad input (exit 2, one line naming each and where to get it); ``need`` narrows the check
    to the tools one command runs (``kind down`` needs kind only)."""
    if mode == "kwok":  # everything is built from source: the Go toolchain, unless every tool is built already
        from scalearena.harness.kube.tools import preflight as tools_preflight

        tools_preflight()
        return
    which = which or shutil.which  # looked up when called: tests replace shutil.which
    if need is None:
        need = ["docker", "kind", "kubectl"] if mode == "kind" else ["kubectl"]
    missing = [t for t in need if which(t) is None]
    if missing:
        lines = "; ".join(f"{t} {TOOLS[t][0]} from {TOOLS[t][1]}" for t in missing)
        raise UserError(f"CLUSTER={mode} needs {', '.join(missing)} on PATH", where="PATH",
                        expected=f"install {lines}")


def require_image_prefix(mode: str, image_prefix: str | None) -> None:
    """CLUSTER=cluster pulls scalearena's images from a registry: without the prefix, bad input (before any output)."""
    if mode == "cluster" and not image_prefix:
        raise UserError("CLUSTER=cluster needs the scalearena images in a registry the cluster can pull",
                        where="SCALEARENA_IMAGE_PREFIX",
                        expected="SCALEARENA_IMAGE_PREFIX=registry/org after `docker push` (see docs/kubernetes.md)")


def shown(argv: Sequence[str], limit: int = 160) -> str:
    """The whole command as typed, each argument cut at ``limit`` characters (JSON patches, configs)."""
    return " ".join(a if len(a) <= limit else a[:limit] + "..." for a in argv)


class Shell:
    """Runs commands; ``run`` raises RunFailed (exit 1) with the whole command and its stderr tail on failure.

    A failing kind/kubectl/docker command is an infrastructure failure, not bad input (exit 2).
    """

    def run(self, argv: Sequence[str], *, input: str | None = None, timeout: float | None = 600,
            check: bool = True) -> subprocess.CompletedProcess[str]:
        try:
            r = subprocess.run(list(argv), input=input, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise RunFailed(f"`{shown(argv)}` did not finish in {timeout:g} s") from None
        except OSError as e:
            raise RunFailed(f"`{shown(argv)}` could not start: {e.strerror}") from None
        if check and r.returncode != 0:
            tail = (r.stderr or r.stdout).strip().splitlines()[-5:]
            raise RunFailed(f"`{shown(argv)}` failed (exit {r.returncode}): " + " | ".join(tail))
        return r

    def popen(self, argv: Sequence[str], log: Path) -> subprocess.Popen[bytes]:
        f = open(log, "ab")  # noqa: SIM115 - owned by the child for its lifetime
        return subprocess.Popen(list(argv), stdout=f, stderr=subprocess.STDOUT)


class Kubectl:
    """kubectl on a context of the user's kubeconfig, or (CLUSTER=kwok) on a kubeconfig of our own with the kubectl
    built for it."""

    def __init__(self, shell: Shell, context: str | None = None, *, kubeconfig: str | None = None,
                 binary: str = "kubectl") -> None:
        self.shell = shell
        self.context = context
        self.kubeconfig, self.binary = kubeconfig, binary

    def argv(self, *args: str) -> list[str]:
        return [self.binary, *(["--kubeconfig", self.kubeconfig] if self.kubeconfig else []),
                *(["--context", self.context] if self.context else []), *args]

    def run(self, *args: str, input: str | None = None, timeout: float | None = 600,
            check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.shell.run(self.argv(*args), input=input, timeout=timeout, check=check)

    def current_context(self) -> str:
        r = self.shell.run(self.argv("config", "current-context"), check=False, timeout=30)
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


MARKER = ("kube-system", "scalearena-cluster")  # ConfigMap that says who made this kind cluster, and for what


def fake_gpu_demand(scenarios: list[Any]) -> dict[str, int]:
    """GPUs each node product must offer so every variant can reach max_replicas at once.

    Per scenario: the sum over its variants on a product of max_replicas x gpus_per_replica; per suite:
    the maximum over its scenarios (runs go one at a time).
    """
    from scalearena.harness.kube.scenario import GPU_PRODUCT

    need: dict[str, int] = {}
    for sc in scenarios:
        per: dict[str, int] = {}
        for v in sc.cluster.variants:
            product = GPU_PRODUCT.get(v.gpu, v.gpu)
            per[product] = per.get(product, 0) + v.max_replicas * v.gpus_per_replica
        for product, n in per.items():
            need[product] = max(need.get(product, 0), n)
    return need


class KindCluster:
    """Create / reuse / delete the kind cluster and give its workers their fake GPUs.

    ``owner``: ``suite`` for a cluster made by ``scalearena kind up`` (reused by every run of a
    suite, deleted by ``scalearena kind down``), ``run`` for one a single run makes and deletes.
    A cluster with this name but no marker, or a ``run`` marker (left by a run that died), is
    stale: it is refused rather than reused with whatever objects it still holds.
    """

    def __init__(self, shell: Shell, config: Path, name: str = CLUSTER_NAME) -> None:
        self.shell, self.config, self.name = shell, config, name
        self.kubectl = Kubectl(shell, context=f"kind-{name}")
        self.reused = False

    def exists(self) -> bool:
        r = self.shell.run(["kind", "get", "clusters"], check=False, timeout=60)
        return self.name in r.stdout.split()

    def marker(self) -> dict[str, str] | None:
        r = self.kubectl.run("-n", MARKER[0], "get", "configmap", MARKER[1], "-o", "json", check=False, timeout=60)
        if r.returncode != 0 or not r.stdout.strip():
            return None
        return dict(json.loads(r.stdout).get("data") or {})

    def create(self, need: dict[str, int] | None = None, owner: str = "run") -> None:
        """Make the cluster, or reuse one ``kind up`` made; either way it must hold ``need`` fake GPUs."""
        if self.exists():
            mark = self.marker()
            if mark is None or mark.get("owner") != "suite" or owner == "suite":
                made = f"made by a {mark['owner']} at {mark.get('created', '?')}" if mark else "not made by scalearena"
                raise UserError(f"a kind cluster named {self.name!r} already exists ({made}); reusing it would run "
                                "on its leftover objects", where=f"kind cluster {self.name}",
                                expected=f"`kind delete cluster --name {self.name}` (or `scalearena kind down`) "
                                         "first; `scalearena kind up` makes a cluster a suite may reuse")
            self.reused = True
            self.check_capacity(need or {})
            return
        self.shell.run(["kind", "create", "cluster", "--name", self.name, "--config", str(self.config),
                        "--wait", "120s"], timeout=900)
        self.patch_fake_gpus(need or {})
        import time

        data = {"owner": owner, "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        self.kubectl.run("-n", MARKER[0], "create", "configmap", MARKER[1],
                         *[f"--from-literal={k}={v}" for k, v in data.items()], timeout=60)

    def delete(self) -> None:
        self.shell.run(["kind", "delete", "cluster", "--name", self.name], check=False, timeout=300)

    def _gpu_nodes(self) -> list[Obj]:
        return list(self.kubectl.get_json("nodes", "-l", "scalearena.io/fake-gpus").get("items", []))

    def _plan_gpus(self, nodes: list[Obj], need: dict[str, int]) -> dict[str, int]:
        """Fake GPUs per node: the node's label, raised so its product's nodes together hold ``need``."""
        by_product: dict[str, list[str]] = {}
        for n in nodes:
            by_product.setdefault(n["metadata"]["labels"].get("nvidia.com/gpu.product", ""), []).append(
                n["metadata"]["name"])
        missing = sorted(p for p, k in need.items() if k > 0 and p not in by_product)
        if missing:
            raise UserError(f"the kind cluster has no worker with GPU product {', '.join(missing)}",
                            where=str(self.config), expected="a worker labelled nvidia.com/gpu.product="
                            f"{missing[0]} (add one to manifests/kind/cluster.yaml), or a scenario on "
                            "A100-80GB / H100-SXM / H200 variants")
        out = {}
        for n in nodes:
            labels = n["metadata"]["labels"]
            names = by_product[labels.get("nvidia.com/gpu.product", "")]
            share = -(-need.get(labels.get("nvidia.com/gpu.product", ""), 0) // len(names))
            out[n["metadata"]["name"]] = max(int(labels["scalearena.io/fake-gpus"]), share)
        return out

    def patch_fake_gpus(self, need: dict[str, int] | None = None) -> None:
        """Extended resources cannot be declared in a kind config: patch node status, as the docs do."""
        for node, count in self._plan_gpus(self._gpu_nodes(), need or {}).items():
            patch = [{"op": "add", "path": "/status/capacity/nvidia.com~1gpu", "value": str(count)}]
            self.kubectl.run("patch", "node", node, "--subresource=status", "--type=json", "-p", json.dumps(patch))

    def check_capacity(self, need: dict[str, int]) -> None:
        """A reused cluster must already offer ``need``: the scheduler would leave the rest Pending."""
        nodes = self._gpu_nodes()
        have: dict[str, int] = {}
        for n in nodes:
            product = n["metadata"]["labels"].get("nvidia.com/gpu.product", "")
            cap = (n.get("status") or {}).get("capacity", {}).get("nvidia.com/gpu", "0")
            have[product] = have.get(product, 0) + int(cap)
        short = {p: (k, have.get(p, 0)) for p, k in need.items() if k > have.get(p, 0)}
        if short:
            p, (k, h) = next(iter(short.items()))
            raise UserError(f"the reused kind cluster offers {h} fake {p} GPUs, this scenario needs {k} "
                            "(sum of max_replicas x gpus_per_replica)", where=f"kind cluster {self.name}",
                            expected="`scalearena kind down` then `scalearena kind up --suite SUITE` with this "
                                     "scenario in the suite")

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
