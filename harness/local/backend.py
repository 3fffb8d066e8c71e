"""``--cluster local``: a scenario against real processes on this host.

What runs (all on 127.0.0.1, all children of a ``Supervisor``):
one ``serve-engine`` process per pod (or, with ``engine=llm-d-inference-sim``,
the real llm-d-inference-sim: inference_sim.py), one ``serve-router`` gateway, a real
Prometheus scraping both through file-SD (and the kube-state-metrics endpoint
this process serves, kube_state.py), and Locust sending the run's request
stream open-loop (one process, or a master and ``locust_workers`` workers). The autoscaler is the same policy object as
on ``sim``; it reads metrics through the Prometheus ``MetricsReader`` with the
upstream PromQL, and its decisions start and stop engine processes
(pods.PodSet).

Time: scenario time is ``(wall - t0) x time_scale``. With time scale s a 60 s
scenario takes 60/s wall seconds; every duration handed to a child (cold
start, grace, TTFT, ITL, scrape interval, PromQL windows, the autoscaler's
period) is divided by s, and every time recorded is in scenario seconds.
Process boot (about a second of wall time per engine) adds to the simulated
cold start: it is the floor of a cold start on this backend.

Accounting: Locust writes one record per request; a request the load
generator never reported (it crashed, or the run was cut short) is recorded
as ``error`` so requests_total always equals the schedule. Partial results
survive Ctrl-C and failures (the runner calls ``RunWriter.abort``).
"""
from __future__ import annotations

import functools
import json
import math
import secrets
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import requests as http

from scalearena.contracts.errors import UserError
from scalearena.contracts.files import write_secret
from scalearena.contracts.series import NAMESPACE
from scalearena.controllers.base import AutoscalerConfig
from scalearena.controllers.registry import REGISTRY
from scalearena.harness.config.scenario import Scenario
from scalearena.harness.config.startup_spec import refuse_sim_only
from scalearena.harness.config.suite import RunPlan
from scalearena.harness.control.loop import LoopHooks, WallLoop
from scalearena.harness.control.plane import ControlPlane
from scalearena.harness.control.ports import LoadSample, WallClock
from scalearena.harness.control.view import forecast_from_requests, scenario_variants
from scalearena.harness.local.handoff_auth import new_key
from scalearena.harness.local.inference_sim import SIM, MetricsRelay, SimEngine
from scalearena.harness.local.kube_state import DeploymentCollector, KubeStateExporter
from scalearena.harness.local.locust_process import LocustProcess
from scalearena.harness.local.pods import PENDING, PodSet
from scalearena.harness.local.prometheus import PrometheusProcess, find_prometheus
from scalearena.harness.local.supervisor import LOOPBACK, Supervisor, free_port, wait_for_port
from scalearena.harness.metrics.prometheus import PrometheusMetrics, PromQL
from scalearena.harness.run.interrupts import Interrupted
from scalearena.reports.results import RunWriter
from scalearena.workloads import load_handoff as load

TICK_WALL_S = 0.05  # harness loop period (wall)


class LocalBackend:
    """``Backend`` for ``--cluster local``.

    Options (validated and documented in backends/registry.py ``LocalOptions``): ``time_scale``,
    ``api`` (completions | chat), ``prompt`` (words | field), ``locust_workers`` (load processes),
    ``engine`` (serve-engine | llm-d-inference-sim).
    """

    def __init__(self, time_scale: float = 1.0, api: str = "completions", prompt: str = "words",
                 locust_workers: int = 1, engine: str = "serve-engine") -> None:
        """Options as validated by backends/registry.py (LocalOptions)."""
        self.time_scale = float(time_scale)
        self.api, self.prompt, self.locust_workers = api, prompt, int(locust_workers)
        self.engine = engine
        if engine == SIM and prompt == "field":  # a scalearena extension the sim ignores: it would count 1 token
            raise UserError("prompt=field passes the prompt length in scalearena_prompt_tokens, which "
                            f"{SIM} ignores", where="--backend-option prompt", expected=f"prompt=words with engine={SIM}")

    def preflight(self, plans: Sequence[RunPlan]) -> None:
        """Prometheus installed; the engine's binary built and able to run each scenario's variants."""
        find_prometheus()
        for p in plans:
            self.check(p.scenario)

    def check(self, scenario: Scenario) -> None:
        """The UserError a run of ``scenario`` would raise for its engine, before anything starts."""
        if self.engine == SIM:
            SimEngine(scenario, self.time_scale)

    def run(self, scenario: Scenario, autoscaler: AutoscalerConfig, writer: RunWriter, progress: Any = None) -> None:
        LocalRun(scenario, autoscaler, writer, progress, self).run()


class LocalRun:
    def __init__(self, sc: Scenario, config: AutoscalerConfig, writer: RunWriter, progress: Any,
                 opts: LocalBackend) -> None:
        from scalearena.workloads.generate import build_requests

        refuse_sim_only(sc, "local")
        self.sc, self.config, self.writer, self.progress, self.opts = sc, config, writer, progress, opts
        self.scale = opts.time_scale
        self.sim = SimEngine(sc, self.scale) if opts.engine == SIM else None  # refused here, before any process
        self.dir = Path(writer.dir).resolve()  # children get absolute paths (a relative --out broke file-SD)
        self.sup = Supervisor(self.dir / "logs")
        self.requests = build_requests(sc)
        self.end_s = sc.window_s  # the run's window (Scenario.window_s)
        self.clock = WallClock(self.scale)
        self.models = list(dict.fromkeys(v.model for v in sc.cluster.variants))
        groups = getattr(config, "rule_groups", None)
        if groups is not None and self.scale != 1:
            raise UserError("a kubernetes autoscaler's PromQL (rule intervals, range windows) is written in real "
                            f"seconds and cannot be sped up by time_scale {self.scale:g}",
                            where=f"autoscaler {config.label}", expected="time_scale=1 on --cluster local")
        self.prom = PrometheusProcess(self.sup, self.dir, sc.metrics.scrape_interval_s, sc.metrics.staleness_s,
                                      self.scale, rule_groups=groups)
        self.reader = PrometheusMetrics(self.prom.url, {v.name: v.model for v in sc.cluster.variants},
                                        promql=PromQL(time_scale=self.scale), clock=self.clock)
        self.pods = PodSet(self.sup, list(sc.cluster.variants), self.scale, self._membership, self._event,
                           sc.cluster.gpu_types)
        self.pods.seed = sc.seed  # cold_start phases are drawn per pod from it
        self.pods.kv_transfer = sc.cluster.kv_transfer.model_dump(mode="json")  # P/D engines' hand-off
        self.pods.sim = self.sim
        # the sim's series carry no pod label: Prometheus scrapes its slots through the relay, which adds it
        self.relay = MetricsRelay(lambda port: self.pods.owners.get(port)) if self.sim is not None else None
        self.kube_state = DeploymentCollector([v.name for v in sc.cluster.variants])
        self.ksm = KubeStateExporter(self.kube_state)  # kube-state-metrics of the run's Deployments
        self.router_port = free_port()
        self.router_url = f"http://{LOOPBACK}:{self.router_port}"
        self._http = http.Session()
        # the router's admin API: a fresh token per run, in a file only this user can read
        self.admin_token_file = self.dir / "router-admin.token"
        token = secrets.token_urlsafe(32)
        write_secret(self.admin_token_file, token)
        self._http.headers["Authorization"] = f"Bearer {token}"
        self.handoff_key_file = write_secret(self.dir / "handoff.key", new_key())  # P/D: router signs, decode checks
        self.pods.handoff_key_file = str(self.handoff_key_file)
        self.locust: LocustProcess | None = None  # started when the run's load begins
        self.control = local_control_plane(sc, config, writer, self.requests, clock=self.clock, metrics=self.reader,
                                           pods=self.pods, probe=RouterProbe(self._router_state, sc.cluster.variants))

    # -- clock -----------------------------------------------------------------------------------
    @property
    def t0(self) -> float:
        return self.clock.t0

    def now(self) -> float:
        return self.clock.now()

    def _event(self, kind: str, details: dict[str, Any]) -> None:
        self.writer.add_event(self.now() if self.t0 else 0.0, kind, **details)

    def publish_replicas(self) -> None:
        """What kube-state-metrics reports: each variant's replicas as the actuator sees them now."""
        self.kube_state.update({v.name: self.pods.replicas(v.name) for v in self.sc.cluster.variants})

    def _membership(self) -> None:
        """Push engine membership to the router and to Prometheus' file-SD targets."""
        eps = self.pods.endpoints()
        try:
            self._http.put(self.router_url + "/admin/endpoints", json={"endpoints": eps}, timeout=2.0)
        except http.RequestException:
            pass  # router down: the run fails on its own check

    # -- the run ---------------------------------------------------------------------------------
    def run(self) -> None:
        meta = self.writer.meta
        meta.setdefault("cluster", "local")
        meta["time_scale"] = self.scale
        meta["prometheus_url"] = self.prom.url
        meta["engine"] = self.opts.engine
        old_term = None
        if threading.current_thread() is threading.main_thread():
            old_term = signal.signal(signal.SIGTERM, _raise_interrupt)
        try:
            self._start()
            self._loop()
            self._collect(final=True)
        except BaseException:
            self._collect(final=False)
            raise
        finally:
            self.sup.close(grace_s=3.0)
            self.ksm.stop()
            if self.relay is not None:
                self.relay.stop()
            if self.sim is not None:
                self.sim.close()
            if old_term is not None:
                signal.signal(signal.SIGTERM, old_term)

    def _start(self) -> None:
        relay = self.relay.start() if self.relay is not None else None
        for variant, ports in self.pods.slots.items():  # fixed slots (see pods.PodSet)
            for i, port in enumerate(ports):
                labels = {"variant": variant, "namespace": NAMESPACE}
                if relay is not None:
                    labels["__metrics_path__"] = MetricsRelay.path(port)
                self.prom.set_engine(f"{variant}-slot{i}", relay or f"{LOOPBACK}:{port}", labels, pod_label=False)
        self.publish_replicas()
        self.prom.set_kube_state(self.ksm.start())
        self.prom.start()
        argv = [sys.executable, "-m", "scalearena.harness.local.cli", "router", "--port",
                str(self.router_port), "--router-spec", self.sc.router.model_dump_json(), "--time-scale",
                repr(self.scale), "--queue-timeout", f"{self.sc.client.timeout_s}s",
                "--admin-token-file", str(self.admin_token_file), "--handoff-key-file", str(self.handoff_key_file),
                "--trace-file", str(self.dir / "logs" / "router-trace.jsonl"),  # its decisions, kept with the run
                *(a for m in self.models for a in ("--model", m))]
        router = self.sup.start("router", argv)
        if not wait_for_port(self.router_port, 30.0, router.proc):
            raise UserError(f"router did not start:\n{router.log_tail()}", where=str(router.log_path))
        self.prom.set_router(f"{LOOPBACK}:{self.router_port}", {"namespace": NAMESPACE})
        warm = self.sc.cluster.warm_start  # initial replicas start warm unless the scenario says not
        for v in self.sc.cluster.variants:
            for _ in range(v.start_replicas):
                self.pods.spawn(v.name, warm=warm)
        deadline = time.time() + 60.0
        while warm and any(p.state == PENDING for p in self.pods.pods.values()):
            if time.time() > deadline:
                raise UserError("initial engines not ready after 60 s", where=str(self.sup.log_dir))
            self.pods.poll()
            time.sleep(0.05)
        # fail now rather than run blind: first scrape within one interval, plus SD pick-up and boot
        self.prom.wait_for_up_targets(2.0 * self.sc.metrics.scrape_interval_s / self.scale + 5.0)
        self.locust = LocustProcess(
            self.dir, self.router_url, end_s=self.end_s, timeout_s=self.sc.client.timeout_s, time_scale=self.scale,
            options={load.ENV_API: self.opts.api, load.ENV_PROMPT: self.opts.prompt}, csv=self.dir / "locust",
            spawn=lambda name, argv, env: self.sup.start(name, argv, env=env).proc,  # the supervisor also owns it
            workers=self.opts.locust_workers)
        self.clock.t0 = self.locust.start(self.requests, lead_s=2.0)
        while time.time() < self.t0:
            time.sleep(0.01)

    def _loop(self) -> None:
        assert self.locust is not None, "_start starts the load"
        self.pods.startup_factor = self._startup_factor
        WallLoop(self.control, self.clock, self.end_s, self.sc.metrics.sample_interval_s, self.locust.alive,
                 overstay_s=15.0 * self.scale, tick_s=TICK_WALL_S, hooks=LocalHooks(self), progress=self.progress,
                 lead_s=self.sc.phases.control_lead_s).run()
        self.locust.stop(5.0)  # it overstayed its own end (15 s wall): stop it

    # -- faults ----------------------------------------------------------------------------------
    def _startup_factor(self) -> float:
        t = self.now()
        f = 1.0
        for x in self.sc.faults:
            if x.kind == "slow_cold_start" and x.start_s <= t < x.end_s:
                f *= x.factor
        return f

    def _fault(self, t: float, f: Any, start: bool) -> None:
        if f.kind == "metrics_outage":
            if start:
                self.writer.add_event(t, "outage_start")
                self.prom.kill()
            else:
                self.writer.add_event(t, "outage_end")
                self.prom.start()
        elif f.kind == "pod_crash":
            variant = f.variant or self.sc.cluster.variants[0].name
            pod = self.pods.crash(variant)
            self.writer.add_event(t, "pod_crash", pod=pod.name if pod else None, variant=variant)

    # -- the router's own view (the run's LoadProbe reads it) ------------------------------------------
    def _router_state(self) -> dict[str, Any]:
        try:
            return dict(self._http.get(self.router_url + "/admin/state", timeout=1.0).json())
        except (http.RequestException, ValueError):
            return {}

    # -- results ---------------------------------------------------------------------------------
    def _collect(self, final: bool) -> None:
        """Every scheduled request exactly once: Locust's record, else an unsent `error` record."""
        if not final and self.locust is not None:
            self.locust.stop(3.0)  # flushes what it has; records are line-buffered
        rows, duplicates = load.merge_records(self.dir.glob("records-*.jsonl"))
        end = self.now() if self.t0 else 0.0
        lags = sorted(r["lag_ms"] for r in rows.values() if r.get("lag_ms") is not None)
        recs = []
        for spec in self.requests:
            row = rows.get(spec.request_id)
            recs.append(load.to_request_record(row) if row else load.unsent_record(spec, end))
        self.writer.add_requests(recs)
        for row in self.pods.startup_records(self.clock.from_wall):  # pods.jsonl (harness/sim/startup_phases.py)
            self.writer.add_pod(row)
        if lags:
            def pct(q: float) -> float:
                return round(lags[min(len(lags) - 1, int(q * len(lags)))], 3)
            self.writer.meta["send_lag_ms"] = {"p50": pct(0.50), "p99": pct(0.99), "max": round(lags[-1], 3)}
        self.writer.meta["unreported_requests"] = sum(1 for s in self.requests if s.request_id not in rows)
        self.writer.meta["locust_workers"] = self.opts.locust_workers
        if duplicates:  # the load generator sent a request twice: counted once, and said
            self.writer.meta["duplicate_records"] = len(duplicates)
        (self.dir / "local.json").write_text(json.dumps({
            "time_scale": self.scale, "t0_wall": self.t0, "router": self.router_url, "prometheus": self.prom.url,
            "send_lag_ms": self.writer.meta.get("send_lag_ms"), "events": self.writer.meta.get("events", []),
            "unreported_requests": self.writer.meta["unreported_requests"],
            "locust_workers": self.opts.locust_workers, "duplicate_records": duplicates[:100],
        }, indent=2, default=str))


def local_control_plane(sc: Scenario, config: AutoscalerConfig, writer: Any, requests: Sequence[Any], *,
                        clock: WallClock, metrics: PrometheusMetrics, pods: PodSet, probe: RouterProbe,
                        policy: Any = None) -> ControlPlane:
    """The local run's control plane: engine processes act, the router measures, Prometheus informs."""
    models = dict.fromkeys(v.model for v in sc.cluster.variants)
    return ControlPlane(policy or REGISTRY.build(config), config.label, scenario_variants(sc), clock=clock,
                        metrics=metrics, actuator=pods, probe=probe, writer=writer,
                        forecast=forecast_from_requests(requests, models), gpu_capacity=sc.cluster.gpu_capacity,
                        last_scrape=functools.partial(scrape_grid, sc.metrics.scrape_interval_s))


def scrape_grid(interval_s: float, now: float) -> float:
    """When Prometheus last scraped, on a grid from the run's start: an approximation (its real offset is a
    hash of the target), used only to time a published target's HPA (harness/control/actuation.py)."""
    return math.floor(now / interval_s) * interval_s if now >= 0 else 0.0


class LocalHooks(LoopHooks):
    """The local run's part of each tick: the router's health, due faults, engine processes, checkpoints."""

    def __init__(self, run: LocalRun) -> None:
        sc = run.sc
        self.run = run
        self.faults = sorted(((f.start_s if f.kind != "pod_crash" else f.at_s), i) for i, f in enumerate(sc.faults))
        self.outage_ends = sorted((f.end_s, i) for i, f in enumerate(sc.faults) if f.kind == "metrics_outage")

    def tick(self, t: float) -> None:
        run = self.run
        if not run.sup.get("router").alive():  # type: ignore[union-attr]
            raise RuntimeError("the router process died; see logs/router.log")
        while self.faults and self.faults[0][0] <= t:
            run._fault(t, run.sc.faults[self.faults.pop(0)[1]], start=True)
        while self.outage_ends and self.outage_ends[0][0] <= t:
            run._fault(t, run.sc.faults[self.outage_ends.pop(0)[1]], start=False)
        run.pods.poll()
        run.publish_replicas()

    def after_decide(self, t: float) -> None:
        self.run.pods.reconcile()

    def sampled(self, t: float, rows: Sequence[Any]) -> None:
        self.run.writer.checkpoint()


class RouterProbe:
    """The local run's ``LoadProbe``: the router's ``/admin/state`` (``state`` returns its JSON,
    ``{}`` when the router cannot be reached)."""

    def __init__(self, state: Callable[[], dict[str, Any]], variants: Sequence[Any]) -> None:
        self.state, self.variants = state, list(variants)
        self.models = list(dict.fromkeys(v.model for v in self.variants))

    def router_queue(self) -> dict[str, int]:
        queue = self.state().get("queue", {})
        return {m: int(queue.get(m, 0)) for m in self.models}

    def load(self, now: float, since: float) -> dict[str, LoadSample]:
        """Per-pod KV usage, busy fraction and queue lengths as the router last polled them from the
        engines; completions as the router counted them."""
        state = self.state()
        pods_state = state.get("pods", {})
        completed = state.get("completed", {})
        out = {}
        for v in self.variants:
            mine = [s for s in pods_state.values() if s.get("variant") == v.name]
            live = [s for s in mine if s.get("state") == "ready"]
            out[v.name] = LoadSample(
                kv_usage=tuple(float(s["kv_usage"]) for s in live),
                gpu_util=tuple(float(s["gpu_util"]) for s in live if s.get("gpu_util") is not None),
                waiting=sum(int(s["waiting"]) for s in mine), running=sum(int(s["running"]) for s in mine),
                completed_ok=int(completed.get(v.name, 0)))
        return out


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise Interrupted(signum)  # the one SIGINT/SIGTERM contract (harness/run/interrupts.py)
