"""Backend conformance: one scripted scenario through every backend's control plane.

In the style of inference-perf's parity tests: the same script of pod
lifecycle states, scraped metric samples, gateway queues and live load is
fed to the sim, local and kube backends through their own adapters, each
faked at its outer boundary (sim: the engines and the memory TSDB; local:
the Prometheus HTTP client and the router's /admin/state; kube: the API
server and the Prometheus HTTP client, with local and kube on a wall clock
that runs at another speed and origin than scenario time). The decisions,
the replica changes handed to the actuator and the time-series rows must be
the same for all three. A view-echo policy writes everything it saw into its
reasons, so any drift in what a backend's view holds shows up as a diff; the
``oracle`` checks a real policy (and the forecast) the same way.

Also here: the check that no backend builds its own ``ClusterView`` (an AST
scan) and a regression test for each of the two defects the per-backend
copies caused (no forecast on kube; KV blocks not derived on local).
"""
from __future__ import annotations

import ast
import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from scalearena.controllers.base import AutoscalerBase, ClusterView, Decision, Reason
from scalearena.controllers.registry import REGISTRY
from scalearena.harness.config.scenario import load_scenario
from scalearena.harness.control.loop import LoopHooks, WallLoop
from scalearena.harness.control.ports import WallClock
from scalearena.harness.kube.sampling import Sampler
from scalearena.harness.kube.scenario import NAMESPACE
from scalearena.harness.kube.wva.fake import FakeKubeAPI
from scalearena.harness.local import (
    backend as local_backend,
    pods as local_pods,
    prometheus as local_prometheus,
)
from scalearena.harness.metrics.memory import Sample
from scalearena.harness.metrics.prometheus import PrometheusMetrics, PromQL
from scalearena.harness.sim.backend import Simulation
from scalearena.harness.sim.engine.cluster import PENDING, READY, STARTING, TERMINATING, Pod
from scalearena.harness.sim.engine.histogram import E2E_BUCKETS, ITL_BUCKETS, TTFT_BUCKETS
from scalearena.harness.sim.router import RoutedPod
from scalearena.reports.results import RunWriter
from scalearena.workloads.base import RequestSpec

ROOT = Path(__file__).resolve().parents[4]
SCENARIO = """
name: conformance
duration_s: 60
drain_s: 0
seed: 3
cluster:
  variants:
    - {name: small, model: m, gpu: A100-80GB, cost: 1.0, min_replicas: 0, max_replicas: 4, startup_s: 30,
       engine: {max_num_seqs: 8, kv_cache_blocks: 256, block_size: 16,
                latency: {kind: constant, ttft_ms: 200, itl_ms: 20}}}
    - {name: big, model: m, gpu: A100-80GB, cost: 2.0, min_replicas: 0, max_replicas: 3, startup_s: 60,
       engine: {max_num_seqs: 256, block_size: 16, latency: {kind: roofline, model_shape: llama3-8b, tp: 1}}}
workload:
  arrivals: {kind: constant, rate_rps: 1}
  input_tokens: {kind: fixed, value: 100}
  output_tokens: {kind: fixed, value: 50}
autoscalers:
  - {kind: static}
  - {kind: oracle}
"""


# ---- the script ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PodScript:
    name: str
    state: str  # ready | pending (phase Pending) | starting (phase Running, not Ready: loading) | terminating
    kv: float = 0.0  # live KV usage (ready pods)
    waiting: int = 0
    running: int = 0
    util: float = 0.0  # busy fraction since the previous sample
    scraped: tuple[float, float, int, int] | None = None  # (scrape time, kv, waiting, running) in Prometheus


@dataclass(frozen=True)
class Step:
    t: float
    spec: dict[str, int]
    pods: dict[str, tuple[PodScript, ...]]
    queue: int = 0  # requests of model m held at the gateway
    completed: dict[str, int] = field(default_factory=dict)  # cumulative ok completions
    outage: bool = False


# Times and fractions are dyadic, so scaling by the wall clocks below (x 1/2 + 1000) is exact.
STEPS = (
    Step(10.0, {"small": 1, "big": 1},
         {"small": (PodScript("small-0", "ready", 0.25, 0, 2, 0.5, (9.0, 0.25, 0, 2)),),
          "big": (PodScript("big-0", "pending"),)}, queue=0, completed={"small": 4, "big": 0}),
    Step(20.0, {"small": 2, "big": 1},
         {"small": (PodScript("small-0", "ready", 0.875, 3, 8, 1.0, (19.0, 0.875, 3, 8)),
                    PodScript("small-1", "starting")),
          "big": (PodScript("big-0", "ready", 0.125, 0, 1, 0.25, (18.5, 0.125, 0, 1)),)},
         queue=2, completed={"small": 9, "big": 1}),
    Step(30.0, {"small": 2, "big": 0},
         {"small": (PodScript("small-0", "ready", 0.5, 1, 4, 0.75, (29.0, 0.5, 1, 4)),
                    PodScript("small-1", "ready", 0.0625, 0, 1, 0.125, (28.0, 0.0625, 0, 1))),
          "big": (PodScript("big-0", "terminating", scraped=(27.0, 0.375, 0, 2)),)},  # scraped, not ready
         queue=0, completed={"small": 17, "big": 2}),
    Step(40.0, {"small": 2, "big": 0},
         {"small": (PodScript("small-0", "ready", 0.5, 0, 4, 0.5), PodScript("small-1", "ready", 0.25, 0, 2, 0.5)),
          "big": ()}, queue=0, completed={"small": 25, "big": 2}, outage=True),
)
NO_HISTOGRAMS = tuple((0.0,) * (len(b) + 1) for b in (TTFT_BUCKETS, ITL_BUCKETS, E2E_BUCKETS))  # empty, with +Inf
OUTAGES = {s.t for s in STEPS if s.outage}
REQUESTS = [RequestSpec(i, "m", float(i), 100 + i, 50) for i in range(50)]  # arrivals at 0, 1, ..., 49 s


class ViewEcho(AutoscalerBase):
    """Writes the whole view into its reasons; wants one more replica while requests wait."""

    kind = "static"

    @property
    def period_s(self) -> float:
        return 10.0

    def decide(self, now: float, view: ClusterView) -> list[Decision]:
        out = []
        for v in view.variants:
            seen = {
                "now": now, "spec": v.spec_replicas, "ready": v.ready, "pending": v.pending,
                "terminating": v.terminating, "starting": v.starting, "available": v.metrics_available, "target": v.target_exists,
                "pods": [list(map(str, (p.pod, p.ts, p.kv_usage, p.waiting, p.running, p.gpu_util, p.num_gpu_blocks,
                                        p.block_size))) for p in v.pods],
                "kv_cache_blocks": v.engine.get("kv_cache_blocks"), "startup_s": v.startup_s,
                "queue": view.router_queue.get(v.model, 0), "forecast": [len(f.arrival_s) for f in view.forecast],
                "gpu_capacity": dict(view.gpu_capacity or {}),
            }
            want = v.spec_replicas + (1 if seen["queue"] or any(p.waiting for p in v.pods) else 0)
            out.append(Decision(v.name, v.spec_replicas, want, (Reason("echo", "view", seen),)))
        return out


# ---- a Prometheus HTTP client that answers from the script --------------------------------------------
class ScriptedPrometheus:
    """``custom_query`` of prometheus-api-client: reads the metric and variant out of the PromQL."""

    def __init__(self, wall_of: Any, blocks: dict[str, int]) -> None:
        self.wall_of, self.blocks = wall_of, blocks
        self.step: Step | None = None

    def custom_query(self, query: str, params: dict | None = None) -> list[dict]:
        step = self.step
        assert step is not None
        if step.outage:
            raise ConnectionError("scripted outage")
        if query.startswith("sum(llm_d_epp_flow_control_queue_size"):  # the gateway's queue (serve-router's
            return [{"metric": {}, "value": [0, str(step.queue)]}]  # flow-control and scale-from-zero holds)
        variant = query.split('variant="')[1].split('"')[0]
        out = []
        for p in step.pods.get(variant, ()):
            if p.scraped is None:
                continue
            ts, kv, waiting, running = p.scraped
            value = {"vllm:kv_cache_usage_perc": kv, "vllm:num_requests_waiting": waiting,
                     "vllm:num_requests_running": running, "gpu_utilization": p.util}
            labels: dict[str, str] = {"pod": p.name}
            if "timestamp(" in query:
                v: float = self.wall_of(ts)
            elif "cache_config_info" in query:
                v, labels = 1.0, {**labels, "num_gpu_blocks": str(self.blocks[variant]), "block_size": "16"}
            else:
                v = next(val for name, val in value.items() if f"({name}{{" in query)
            out.append({"metric": labels, "value": [0, repr(float(v))]})
        return out


# ---- one rig per backend ------------------------------------------------------------------------------
def scenario(tmp_path: Path) -> Any:
    path = tmp_path / "conformance.yaml"
    path.write_text(SCENARIO)
    return load_scenario(path)


class RowsWriter(RunWriter):
    """A RunWriter that also keeps its timeseries rows in memory (the comparison reads them back)."""

    def __init__(self, run_dir: Path, meta: dict[str, Any]) -> None:
        super().__init__(run_dir, meta)
        self.timeseries: list[Any] = []

    def add_timeseries(self, rec: Any) -> None:
        self.timeseries.append(rec)
        super().add_timeseries(rec)


class SimRig:
    """The simulator's own adapters; engines are stubs, the pod lifecycle is the script's."""

    def __init__(self, sc: Any, cfg: Any, policy: Any, tmp: Path) -> None:
        self.writer = RowsWriter(tmp / "sim", {})
        self.sim = Simulation(sc, cfg, self.writer, REQUESTS, policy=policy)
        self.scaled: list[tuple[str, int]] = []
        self.seq = itertools.count()
        self.control = self.sim.control
        self.control.actuator = _ScriptedActuator(self.sim, self.scaled)  # the pod lifecycle comes from the script

    def apply(self, step: Step) -> None:
        sim = self.sim
        sim.clock.t = step.t
        sim.metrics.available = not step.outage
        since = self.control.last_sample
        for d in sim.deps:
            d.replicas = step.spec[d.name]
            d.pods = []
            for p in step.pods[d.name]:
                engine = _StubEngine(p.kv, p.waiting, p.running, p.util * (step.t - since))
                pod = Pod(p.name, d.name, d.spec.model, 0.0, engine, RoutedPod(p.name, engine), next(self.seq))
                pod.state = {"ready": READY, "pending": PENDING, "starting": STARTING, "terminating": TERMINATING}[p.state]
                pod.ready_s, pod.sample_busy = 0.0, 0.0
                d.pods.append(pod)
                if p.scraped is not None and not step.outage:
                    ts, kv, waiting, running = p.scraped
                    sim.metrics.record(d.name, p.name, Sample(ts, kv, waiting, running, p.util, 0.0, *NO_HISTOGRAMS))
            sim._ok_total[d.name] = step.completed[d.name]
        sim.gateway["m"] = [object()] * step.queue  # type: ignore[list-item]


class _ScriptedActuator:
    """The simulator's Actuator with the pod lifecycle left to the script: ``scale`` sets the replicas
    (the simulator's own also reconciles the pods), each call recorded."""

    def __init__(self, sim: Any, scaled: list[tuple[str, int]]) -> None:
        self.sim, self.scaled = sim, scaled

    def replicas(self, variant: str) -> Any:
        return self.sim.replicas(variant)

    def scale(self, variant: str, replicas: int) -> None:
        self.scaled.append((variant, replicas))
        self.sim.dep(variant).replicas = replicas


@dataclass
class _StubEngine:
    kv: float
    num_waiting: int
    num_running: int
    busy_s: float

    def kv_usage(self, t: float) -> float:
        return self.kv


class LocalRig:
    """The local backend's adapters: PodSet (engine processes), Prometheus over HTTP, the router's state."""

    def __init__(self, sc: Any, cfg: Any, policy: Any, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        ports = itertools.count(20000)
        monkeypatch.setattr(local_pods, "free_port", lambda: next(ports))  # no socket in a unit test
        self.writer = RowsWriter(tmp / "local", {})
        self.wall = 0.0
        clock = WallClock(2.0, wall=lambda: self.wall, t0=1000.0)  # scenario time runs twice as fast as wall
        self.prom = ScriptedPrometheus(lambda ts: 1000.0 + ts / 2.0, _blocks(sc))
        metrics = PrometheusMetrics("http://prometheus.invalid", {v.name: v.model for v in sc.cluster.variants},
                                    promql=PromQL(time_scale=2.0), client=self.prom, clock=clock)
        self.processes = ScriptedProcesses()
        self.pods = local_pods.PodSet(self.processes, list(sc.cluster.variants), 2.0, lambda: None,  # type: ignore[arg-type]
                                      lambda kind, details: None)
        self.state: dict[str, Any] = {}
        probe = local_backend.RouterProbe(lambda: self.state, sc.cluster.variants)
        self.control = local_backend.local_control_plane(sc, cfg, self.writer, REQUESTS, clock=clock, metrics=metrics,
                                                         pods=self.pods, probe=probe, policy=policy)
        self.scaled: list[tuple[str, int]] = []
        real_scale = self.pods.scale
        self.pods.scale = lambda v, n: (self.scaled.append((v, n)), real_scale(v, n))  # type: ignore[method-assign]

    def apply(self, step: Step) -> None:
        self.wall = 1000.0 + step.t / 2.0
        self.prom.step = step
        states = {"ready": local_pods.READY, "pending": local_pods.PENDING, "starting": local_pods.PENDING,
                  "terminating": local_pods.TERMINATING}
        self.pods.pods = {p.name: local_pods.Pod(p.name, v, "m", 0, states[p.state], 0.0)
                          for v, ps in step.pods.items() for p in ps}
        # an engine process runs for every pod but a Pending one (not started yet)
        self.processes.running = {p.name for ps in step.pods.values() for p in ps if p.state != "pending"}
        self.pods.desired.update(step.spec)
        self.state = {
            "queue": {"m": step.queue}, "completed": dict(step.completed),
            "pods": {p.name: {"variant": v, "state": "ready" if p.state == "ready" else "draining",
                              "kv_usage": p.kv, "gpu_util": p.util, "waiting": p.waiting, "running": p.running}
                     for v, ps in step.pods.items() for p in ps if p.state not in ("pending", "starting")},
        }


class ScriptedProcesses:
    """The local backend's ``Supervisor`` as PodSet reads it: which engine processes are alive."""

    def __init__(self) -> None:
        self.running: set[str] = set()

    def get(self, name: str) -> Any:
        alive = name in self.running
        return type("Child", (), {"alive": lambda self: alive})() if alive else None


class KubeRig:
    """The kube backend's adapters: Deployments and pods from the API server, Prometheus over HTTP."""

    def __init__(self, sc: Any, cfg: Any, policy: Any, tmp: Path) -> None:
        self.writer = RunWriter(tmp / "kube", {})
        self.wall = 0.0
        self.api = FakeKubeAPI()
        self.prom = ScriptedPrometheus(lambda ts: 5000.0 + ts, _blocks(sc))
        metrics = PrometheusMetrics("http://prometheus.invalid", {v.name: v.model for v in sc.cluster.variants},
                                    promql=PromQL(extra_labels={"namespace": NAMESPACE}), client=self.prom)
        self.sampler = Sampler(sc, cfg, self.writer, self.api, metrics, native=False, clock=lambda: self.wall)
        self.sampler.t0 = 5000.0
        self.sampler.set_arrivals(REQUESTS)
        self.control = self.sampler.control
        self.control.policy = policy
        self.scaled: list[tuple[str, int]] = []
        real_scale = self.sampler.scale
        self.sampler.scale = lambda v, n: (self.scaled.append((v, n)), real_scale(v, n))  # type: ignore[method-assign]

    def apply(self, step: Step) -> None:
        self.wall = 5000.0 + step.t
        self.prom.step = step
        self.api.store.clear()
        for v, n in step.spec.items():
            self.api.put({"kind": "Deployment", "metadata": {"name": v, "namespace": NAMESPACE},
                          "spec": {"replicas": n, "selector": {"matchLabels": {"scalearena.io/variant": v}}}})
            for p in step.pods[v]:
                md: dict[str, Any] = {"name": p.name, "namespace": NAMESPACE, "labels": {"scalearena.io/variant": v}}
                status: dict[str, Any] = {"phase": "Pending", "conditions": []}
                if p.state == "starting":  # the container runs, the server is still loading
                    status = {"phase": "Running", "conditions": [{"type": "Ready", "status": "False"}]}
                elif p.state != "pending":
                    status = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
                if p.state == "terminating":
                    md["deletionTimestamp"] = "2026-01-01T00:00:00Z"
                self.api.put({"kind": "Pod", "metadata": md, "status": status})


def _blocks(sc: Any) -> dict[str, int]:
    """What each engine's vllm:cache_config_info reports: small 256 (explicit); big derived (see below)."""
    assert [v.name for v in sc.cluster.variants] == ["small", "big"]
    return {"small": 256, "big": BIG_BLOCKS}


# A100-80GB x 0.9 utilisation = 0.9 x 80 x 2^30 = 77_309_411_328 B; minus llama3-8b weights 16_059_990_016 B and
# 2 GiB activations = 59_101_937_664 B; a block = 16 tokens x 131_072 B (2 x 32 layers x 8 kv heads x 128 x 2 B)
# = 2_097_152 B -> floor(59_101_937_664 / 2_097_152) = floor(28_182.08) = 28_182 blocks.
BIG_BLOCKS = 28_182


def drive(rig: Any) -> tuple[list[dict], list[Any], list[tuple[str, int]]]:
    for step in STEPS:
        rig.apply(step)
        rig.control.decide()
        rig.control.sample()
    rows = rig.sampler.rows if isinstance(rig, KubeRig) else rig.writer.timeseries  # kube writes rows at the end
    return list(rig.writer.decisions), list(rows), rig.scaled


def _rigs(kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    sc = scenario(tmp_path)
    cfg = sc.autoscaler(kind)

    def policy() -> Any:
        return ViewEcho(cfg) if kind == "static" else REGISTRY.build(cfg)

    return {"sim": SimRig(sc, cfg, policy(), tmp_path), "local": LocalRig(sc, cfg, policy(), tmp_path, monkeypatch),
            "kube": KubeRig(sc, cfg, policy(), tmp_path)}


@pytest.mark.parametrize("kind", ["static", "oracle"])  # static = the view-echo policy; oracle = the real one
def test_every_backend_decides_and_samples_alike(kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    results = {name: drive(rig) for name, rig in _rigs(kind, tmp_path, monkeypatch).items()}
    sim_dec, sim_rows, sim_scaled = results["sim"]
    assert len(sim_dec) == 2 * len(STEPS) and len(sim_rows) == 2 * len(STEPS)
    for name in ("local", "kube"):
        dec, rows, scaled = results[name]
        assert dec == sim_dec, name
        assert scaled == sim_scaled, name
        for a, b in zip(rows, sim_rows, strict=True):
            got, want = _row(a), _row(b)
            if name == "kube":  # kube counts completions from the request records after the run
                got.pop("completed_rps"), want.pop("completed_rps")
                if a.t_s in OUTAGES:  # and measures load through Prometheus, which the outage takes away
                    for k in ("kv_usage_mean", "kv_usage_max", "gpu_util_mean", "waiting", "running"):
                        got.pop(k), want.pop(k)
            assert got == want, (name, a.t_s, a.variant)


class ScriptHooks(LoopHooks):
    """Feeds the script to a rig as the wall-clock loop ticks: the step due at each tick's time."""

    def __init__(self, rig: Any) -> None:
        self.rig, self.steps = rig, {s.t: s for s in STEPS}

    def tick(self, t: float) -> None:
        self.rig.apply(self.steps[t])


def drive_loop(rig: Any, scale: float) -> tuple[list[dict], list[Any], list[tuple[str, int]]]:
    """The script through the shared wall-clock loop (harness.control.loop) instead of direct calls: the
    rig's own clock, a sleep that moves its wall clock (one 10 s step = 10 / scale wall seconds), decisions
    on the policy's 10 s period and samples on the scenario's grid must land on the script's times."""
    rig.wall = (1000.0 if scale == 2.0 else 5000.0) + STEPS[0].t / scale
    last = STEPS[-1].t
    done = []

    def sleep(wall_s: float) -> None:
        if rig.control.clock.now() >= last:
            done.append(True)  # the script is over: stop where it ends (no closing sample past it)
        else:
            rig.wall += wall_s

    loop = WallLoop(rig.control, rig.control.clock, end_s=60.0, sample_every_s=10.0, load_alive=lambda: True,
                    tick_s=10.0 / scale, hooks=ScriptHooks(rig), sleep=sleep, stopped=lambda: bool(done))
    loop.run()
    rows = rig.sampler.rows if isinstance(rig, KubeRig) else rig.writer.timeseries
    return list(rig.writer.decisions), list(rows), rig.scaled


def test_the_wall_clock_loop_drives_local_and_kube_like_the_script(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    rigs = _rigs("static", tmp_path, monkeypatch)
    want = drive(rigs.pop("sim"))
    assert [d["t_s"] for d in want[0]] == [10.0, 10.0, 20.0, 20.0, 30.0, 30.0, 40.0, 40.0]
    got = {"local": drive_loop(rigs["local"], 2.0), "kube": drive_loop(rigs["kube"], 1.0)}
    for name, (dec, rows, scaled) in got.items():
        assert dec == want[0], name
        assert scaled == want[2], name
        assert [(r.t_s, r.variant) for r in rows] == [(r.t_s, r.variant) for r in want[1]], name
        if name == "local":  # kube's load columns differ by design (see above); the decisions carry its view
            assert [_row(r) for r in rows] == [_row(r) for r in want[1]]


def _row(r: Any) -> dict[str, Any]:
    from dataclasses import asdict

    return asdict(r)


def test_the_echoed_view_and_rows_hold_the_scripted_values(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    decisions, rows, scaled = drive(_rigs("static", tmp_path, monkeypatch)["sim"])
    seen = {(d["t_s"], d["variant"]): d["reasons"][0]["values"] for d in decisions}
    # t=20: small has small-0 ready (scraped at 19 with kv 0.875, 3 waiting) and small-1 pending; queue 2
    s20 = seen[(20.0, "small")]
    assert (s20["spec"], s20["ready"], s20["pending"], s20["queue"]) == (2, 1, 1, 2)
    # small-1 runs but is not Ready yet: of the 1 pending, 1 is starting; at t=10 big-0 is phase Pending (0)
    assert (s20["starting"], seen[(10.0, "big")]["pending"], seen[(10.0, "big")]["starting"]) == (1, 1, 0)
    assert s20["pods"] == [["small-0", "19.0", "0.875", "3", "8", "1.0", "256", "16"]]
    assert s20["forecast"] == [50]  # 50 scheduled arrivals of model m
    # t=30: big-0 is terminating; its scrape is not a ready pod's, so the view holds no pod for big
    assert seen[(30.0, "big")]["pods"] == [] and seen[(30.0, "big")]["terminating"] == 1
    assert seen[(30.0, "big")]["kv_cache_blocks"] == BIG_BLOCKS  # derived from GPU memory
    assert seen[(40.0, "small")]["available"] is False  # the scripted outage
    # echo wants +1 where a request waits: t=20 small (queue 2) 2 -> 3, big 1 -> 2; t=30 small (1 waiting) 2 -> 3
    assert scaled == [("small", 3), ("big", 2), ("small", 3)]
    small = [r for r in rows if r.variant == "small"]
    # t=20: one ready pod, kv 0.875, util 1.0; waiting 3 running 8; arrivals in (10, 20] = 10 -> 1 rps;
    # completions 9 - 4 = 5 in 10 s -> 0.5 rps; queue 2
    r = small[1]
    assert (r.kv_usage_mean, r.gpu_util_mean, r.waiting, r.running) == (0.875, 1.0, 3, 8)
    assert (r.offered_rps, r.completed_rps, r.router_queue) == (1.0, 0.5, 2)
    # t=10, the first sample: arrivals at 0..10 inclusive = 11 in 10 s
    assert small[0].offered_rps == 1.1


def test_oracle_gets_its_forecast_on_kube(tmp_path: Path) -> None:
    """Defect: on kind/cluster the oracle held every variant with reason no_forecast."""
    rig = KubeRig(scenario(tmp_path), scenario(tmp_path).autoscaler("oracle"), None, tmp_path)
    rig.control.policy = REGISTRY.build(scenario(tmp_path).autoscaler("oracle"))
    rig.apply(STEPS[1])
    rig.sampler.sample(STEPS[1].t)
    rig.sampler.decide(STEPS[1].t, fast=False)
    rules = {r["rule"] for d in rig.writer.decisions for r in d["reasons"]}
    assert rig.writer.decisions and "no_forecast" not in rules, rules


def test_local_view_derives_kv_blocks_like_the_simulator(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Defect: on hetero-roofline.yaml the local view had no kv_cache_blocks (oracle sized by max_num_seqs)."""
    sc = load_scenario(ROOT / "workloads/scenarios/hetero-roofline.yaml")
    ports = itertools.count(21000)
    monkeypatch.setattr(local_pods, "free_port", lambda: next(ports))
    monkeypatch.setattr(local_backend, "free_port", lambda: next(ports))
    monkeypatch.setattr(local_prometheus, "free_port", lambda: next(ports))  # no socket in a unit test
    run = local_backend.LocalRun(sc, sc.autoscaler("wva"), RunWriter(tmp_path / "run", {}), None,
                                 local_backend.LocalBackend(time_scale=1.0))
    blocks = {v.name: v.engine["kv_cache_blocks"] for v in run.control.variants}
    # llama-a100: 28_182 (worked out above); H100-SXM has the same 80 GiB, so the same count; every variant's
    # count is the one the simulator's engine is built with.
    assert blocks["llama-a100"] == BIG_BLOCKS and blocks["llama-h100"] == BIG_BLOCKS
    sim = Simulation(sc, sc.autoscaler("wva"), RunWriter(tmp_path / "sim", {}), [])
    assert blocks == {d.name: d.num_gpu_blocks for d in sim.deps}


HARNESS = ROOT / "harness"
VIEW_TYPES = {"ClusterView", "VariantView"}


def view_constructions(root: Path) -> list[str]:
    """Every call of ClusterView(...) / VariantView(...) under ``root``, as 'path:line'."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call):
                fn = node.func
                name = fn.id if isinstance(fn, ast.Name) else fn.attr if isinstance(fn, ast.Attribute) else None
                if name in VIEW_TYPES:
                    found.append(f"{path.relative_to(root.parent)}:{node.lineno}")
    return found


def test_only_the_control_plane_builds_a_view() -> None:
    found = view_constructions(HARNESS)
    assert found and all(f.startswith("harness/control/view.py:") for f in found), found


def test_the_view_scan_catches_a_backend_that_builds_its_own(tmp_path: Path) -> None:
    pkg = tmp_path / "harness" / "local"
    pkg.mkdir(parents=True)
    (pkg / "rogue.py").write_text("from x import ClusterView\n\ndef v():\n    return ClusterView(now=0, variants=())\n")
    assert view_constructions(tmp_path / "harness") == ["harness/local/rogue.py:4"]
