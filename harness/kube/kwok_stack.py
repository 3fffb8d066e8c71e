"""CLUSTER=kwok, per run: what plays the kubelet's and the container runtime's part on KWOK nodes.

The kube backend (kube/backend.py) runs kind and kwok through the same steps (render, apply, readiness, load,
sample, teardown); only the cluster (kube/kwok.py instead of kind) and the start of containers differ, and the
second is this one object:

* ``objects``: the kind objects as a kwok run applies them (APIServices pointed at local processes:
  kube/kwok_infra.py ``local_objects``);
* ``start_pods``: the pod launcher (kube/launcher.py) runs the engine pods' containers on their pod IPs;
* ``start_services``: the stack's service Deployments run as processes (kube/kwok_infra.py ``LocalServices``);
* ``check`` fails the run when any of them exited; ``stop`` stops them all.

From its start to its ``stop`` the stack holds the host's kwok run lock (kube/kwok_net.py ``RunLock``): the
services' names in /etc/hosts are the host's, so two kwok runs on one host take turns.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from scalearena.harness.kube.kwok_net import RunLock
from scalearena.harness.kube.render import Obj

if TYPE_CHECKING:
    from scalearena.harness.kube.kwok import KwokCluster


class LocalStack:
    def __init__(self, cluster: KwokCluster, folder: Path, ready_timeout_s: float, time_scale: float = 1.0) -> None:
        # absolute: the processes run with cwd in their own folders, and `--out` may be relative
        self.cluster, self.folder = cluster, folder.resolve()
        self.ready_timeout_s, self.time_scale = ready_timeout_s, time_scale
        self.folder.mkdir(parents=True, exist_ok=True)
        self.launcher: Any = None
        self.services: Any = None
        self.lock = RunLock()
        self.lock.acquire()

    @property
    def ca(self) -> Path:
        return self.cluster.folder / "pki" / "ca.crt"

    def objects(self, objs: list[Obj]) -> list[Obj]:
        from scalearena.harness.kube.kwok_infra import local_objects

        return local_objects(objs, self.ca.read_bytes())

    def start_pods(self) -> None:
        from scalearena.harness.kube.launcher import PodLauncher

        self.launcher = PodLauncher(self.cluster.kubeconfig, "scalearena", self.folder / "pods",
                                    time_scale=self.time_scale)
        self.launcher.start()

    def start_services(self, objs: list[Obj]) -> dict[str, str]:
        from scalearena.harness.kube.kwok_infra import LocalServices

        self.services = LocalServices(objs, self.folder / "services", self.cluster.kubectl, self.cluster.api_url(),
                                      self.ca, self.cluster.binary, ready_timeout_s=self.ready_timeout_s)
        return dict(self.services.start())

    def check(self) -> None:
        for part in (self.launcher, self.services):
            if part is not None and hasattr(part, "check"):
                part.check()

    def stop(self) -> None:
        try:
            for part in (self.launcher, self.services):
                if part is not None:
                    part.stop()
        finally:
            self.lock.release()
