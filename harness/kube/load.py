"""Where the load comes from on Kubernetes: the host through port-forward, or Locust in the cluster.

One Locust process sustains about 500 req/s of open-loop streaming with a
send-lag p99 under 50 ms (measured, docs/local.md), and a ``kubectl
port-forward`` is one tunnel through the API server. Above that the load
must run where the gateway is: ``in-cluster`` renders manifests/load/locust
with one worker per ``RATE_PER_WORKER`` req/s of the schedule's peak (80 % of
the measured 500, for headroom), each worker on its own core.

Selection: the backend option ``load=`` wins over ``$SCALEARENA_LOAD``
(``port-forward`` | ``in-cluster`` | ``auto``, default ``auto``: in-cluster
only when the peak rate over any one-second window exceeds
``RATE_PER_WORKER``). ``$SCALEARENA_LOAD_WORKERS`` fixes the worker count.

The run, in-cluster: the backend applies the Jobs, waits until the master and
every worker pod are Ready, copies each worker its share of the schedule
(``request_id % N == index``, the same split the local user makes), then
picks the start time ``t0`` a few seconds ahead and copies ``go.json`` with it
to every worker; after the run it copies each ``records-<index>.jsonl`` back
into the run directory and the pods' logs into ``logs/``. Records then go
through the same ``Sampler.finish`` as port-forward runs: one row per
scheduled request, an ``error`` row for any a worker never reported. All
through ``Kubectl``, so tests replay it against a recording shell.
"""
from __future__ import annotations

import json
import math
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from scalearena.contracts.errors import UserError
from scalearena.harness.kube.cluster import Kubectl
from scalearena.harness.kube.render import Obj, render
from scalearena.harness.kube.scenario import NAMESPACE
from scalearena.workloads import load_handoff as load

LOADS = ("port-forward", "in-cluster", "auto")
RATE_PER_WORKER = 400.0  # req/s per Locust process: 80 % of the ~500 req/s measured in docs/local.md
GATEWAY_URL = f"http://gateway.{NAMESPACE}.svc:8080"
WORKER_LABEL = "scalearena.io/load=locust-worker"
MASTER_LABEL = "scalearena.io/load=locust-master"
INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index"


def peak_rps(arrivals: Sequence[float]) -> int:
    """Most requests scheduled in any one-second bin [k, k+1)."""
    counts = Counter(math.floor(a) for a in arrivals)
    return max(counts.values(), default=0)


def choose_load(option: str | None, requests: Sequence[Any], workers: int | None = None) -> tuple[str, int]:
    """(``port-forward`` or ``in-cluster``, worker count) for these requests. ``option`` and ``workers`` are the
    resolved backend options (harness/run/registry.py applies $SCALEARENA_LOAD / _LOAD_WORKERS)."""
    mode = option or "auto"
    if mode not in LOADS:
        raise UserError(f"unknown load mode {mode!r}", where="backend option load", expected=" or ".join(LOADS))
    peak = peak_rps([r.arrival_s for r in requests])
    if mode == "auto":
        mode = "in-cluster" if peak > RATE_PER_WORKER else "port-forward"
    if mode == "port-forward":
        return mode, 0
    if workers is not None:
        if workers < 1:
            raise UserError(f"load_workers={workers!r}", where="backend option load_workers", expected="a whole number >= 1")
        return mode, workers
    return mode, max(1, math.ceil(peak / RATE_PER_WORKER))


def locust_objects(manifests: Path, workers: int, end_s: float, image: Callable[[str], str] = lambda s: s,
                   hold_s: int = 900) -> list[Obj]:
    """manifests/load/locust for ``workers`` workers and a run ending at ``end_s`` (scenario seconds)."""
    deadline = int(math.ceil(end_s)) + 1800 + hold_s  # readiness + copies + run + hold, generously
    objs = render(manifests / "load" / "locust")
    for o in objs:
        if o["kind"] != "Job":
            continue
        o["spec"]["activeDeadlineSeconds"] = deadline
        c = o["spec"]["template"]["spec"]["containers"][0]
        c["image"] = image(c["image"])
        if o["metadata"]["name"] == "locust-master":
            c["args"] = [f"--workers={workers}", f"--host={GATEWAY_URL}",
                         f"--run-time-s={int(math.ceil(end_s)) + 120}", "--dir=/work"]
        else:
            o["spec"]["completions"] = o["spec"]["parallelism"] = workers
            c["args"] = ["--master-host=locust-master", "--dir=/work", f"--hold-s={hold_s}"]
    return objs


class InClusterLoad:
    """Drives the applied Locust Jobs: ready, schedule in, go, records out."""

    def __init__(self, kubectl: Kubectl, workers: int, run_dir: Path, *, ready_timeout_s: float = 600.0,
                 start_margin_s: float = 10.0, clock: Callable[[], float] = time.time,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.kubectl, self.workers, self.run_dir = kubectl, workers, run_dir
        self.ready_timeout_s, self.start_margin_s = ready_timeout_s, start_margin_s
        self.clock, self.sleep = clock, sleep
        self.pods: dict[int, str] = {}  # worker index -> pod name
        self.master = ""

    def _ready(self, pod: dict[str, Any]) -> bool:
        conds = (pod.get("status") or {}).get("conditions") or []
        return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds)

    def wait_ready(self) -> None:
        deadline = self.clock() + self.ready_timeout_s
        while True:
            workers = self.kubectl.get_json("pods", "-n", NAMESPACE, "-l", WORKER_LABEL).get("items", [])
            masters = self.kubectl.get_json("pods", "-n", NAMESPACE, "-l", MASTER_LABEL).get("items", [])
            ready = {int(p["metadata"]["annotations"][INDEX_ANNOTATION]): p["metadata"]["name"]
                     for p in workers if self._ready(p)}
            up = [p["metadata"]["name"] for p in masters if self._ready(p)]
            if len(ready) == self.workers and up:
                self.pods, self.master = ready, up[0]
                return
            if self.clock() >= deadline:
                raise UserError(f"in-cluster Locust: {len(ready)}/{self.workers} workers and {len(up)}/1 master "
                                f"Ready after {self.ready_timeout_s:g} s", where=f"namespace {NAMESPACE}",
                                expected="schedulable Locust pods (one CPU each); see `kubectl describe pod -l "
                                         "scalearena.io/component=load`")
            self.sleep(2.0)

    def _cp_in(self, local: Path, index: int, remote: str) -> None:
        self.kubectl.run("cp", str(local), f"{NAMESPACE}/{self.pods[index]}:/work/{remote}", "-c", "locust",
                         timeout=600)

    def start(self, requests: Sequence[Any], end_s: float, timeout_s: float) -> float:
        """Ship the schedule and the start time; returns t0 (epoch seconds of scenario time 0)."""
        self.wait_ready()
        for i in range(self.workers):
            shard = self.run_dir / f"schedule-{i}.jsonl"
            load.write_schedule(shard, [r for r in requests if r.request_id % self.workers == i])
            self._cp_in(shard, i, "schedule.jsonl")
        t0 = self.clock() + self.start_margin_s + 0.5 * self.workers  # the go copies take ~0.5 s each
        go = self.run_dir / "go.json"
        go.write_text(json.dumps({"t0": t0, "end_s": end_s, "timeout_s": timeout_s,
                                  "worker_count": self.workers}) + "\n")
        for i in range(self.workers):
            self._cp_in(go, i, "go.json")
        return t0

    def alive(self) -> bool:
        # the workers stop themselves at the run's end; the sampler's loop ends 15 s after it
        return True

    def collect(self) -> list[Path]:
        """Copy every worker's records back (a missing file: its requests count as errors) and the logs."""
        logs = self.run_dir / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        out = []
        for i, pod in sorted(self.pods.items()):
            dest = self.run_dir / f"records-{i}.jsonl"
            self.kubectl.run("cp", f"{NAMESPACE}/{pod}:/work/records-{i}.jsonl", str(dest), "-c", "locust",
                             timeout=600, check=False)
            out.append(dest)
            r = self.kubectl.run("-n", NAMESPACE, "logs", pod, "-c", "locust", check=False, timeout=120)
            (logs / f"locust-worker-{i}.log").write_text(r.stdout or "")
            self.kubectl.run("-n", NAMESPACE, "exec", pod, "-c", "locust", "--", "python", "-c",
                             "open('/work/collected', 'w').close()", check=False, timeout=60)
        if self.master:
            r = self.kubectl.run("-n", NAMESPACE, "logs", self.master, "-c", "locust", check=False, timeout=120)
            (logs / "locust-master.log").write_text(r.stdout or "")
        return out
