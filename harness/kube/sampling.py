"""The measured part of a Kubernetes run: load, sampling, decisions, records.

Kept apart from backend.py (cluster lifecycle) so it can be tested against a fake
API and a fake metrics reader with virtual time: nothing here shells out.

Every ``sample_interval_s`` it reads each variant's Deployment and pods from
the API server (spec / ready / pending / terminating replicas) and the latest
vLLM samples from Prometheus, and writes a ``TimeseriesRecord``. Decisions:
for ``wva`` it reads VariantAutoscaling status (the in-cluster controller
decides); for ``hpa``/``keda`` each change of a Deployment's spec.replicas is
recorded as the in-cluster scaler's decision; any other autoscaler runs here
through the shared control plane (harness.control: the same view, with the
run's forecast and KV sizing, as on sim and local) and patches the scale
subresource. Requests: the Locust user's record files, one row per request,
plus an ``error`` row for every scheduled request it never reported. The
load runs on the host (port-forward) or in the cluster (kube/load.py's
``InClusterLoad``); the records are the same either way. Behind the EPP
gateway a record names its pod by ``IP:port`` (Envoy's picked endpoint);
``finish`` maps it to the pod and variant seen in the pod reads.
"""
from __future__ import annotations

import bisect
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from scalearena.contracts.errors import MetricsUnavailable
from scalearena.contracts.records import TimeseriesRecord
from scalearena.controllers.base import AutoscalerConfig, Decision, Reason
from scalearena.controllers.registry import REGISTRY
from scalearena.harness.config.scenario import Scenario
from scalearena.harness.control.loop import LoopHooks, WallLoop
from scalearena.harness.control.plane import ControlPlane
from scalearena.harness.control.ports import LoadSample, ReplicaStatus, WallClock
from scalearena.harness.control.view import forecast_from_requests, metrics_router_queue, scenario_variants
from scalearena.harness.kube.births import HpaBirths
from scalearena.harness.kube.scenario import NAMESPACE
from scalearena.harness.kube.wva.actuator import ScaleActuator
from scalearena.harness.kube.wva.controller import pod_counts
from scalearena.harness.kube.wva.kubeapi import NotFound, selector_string
from scalearena.harness.local.locust_process import LocustProcess
from scalearena.harness.sim.startup_phases import kube_pod_record
from scalearena.reports.results import RunWriter
from scalearena.workloads import load_handoff as load


class Sampler(LoopHooks):
    """The kube run's measured part. It is the run's ``Actuator`` (Deployments and pods read from
    the API server, the scale subresource) and ``LoadProbe`` (the latest vLLM samples in
    Prometheus); the control plane (``self.control``) builds the view, decides, applies, samples."""

    def __init__(self, sc: Scenario, autoscaler: AutoscalerConfig, writer: RunWriter, api: Any, metrics: Any, *,
                 native: bool, clock: Callable[[], float] = time.time, sleep: Callable[[float], None] = time.sleep,
                 time_scale: float = 1.0, births: HpaBirths | None = None) -> None:
        self.sc, self.cfg, self.writer, self.api, self.metrics = sc, autoscaler, writer, api, metrics
        self.births = births  # when the run's HPAs came to be, from its apply on: its controllers' phase
        self.native, self.sleep = native, sleep
        self.clock = WallClock(time_scale, wall=clock)  # scenario time: (wall - t0) x time_scale (kube/timescale.py)
        if getattr(metrics, "clock", "absent") is None:  # PrometheusMetrics: sample times on the run's axis
            metrics.clock = self.clock
        self.scaler = ScaleActuator(api)
        self.end_s = sc.window_s  # the run's window (Scenario.window_s)
        self.rows: list[TimeseriesRecord] = []
        self._last_spec: dict[str, int] = {}
        self._last_desired: dict[str, int] = {}
        self._status: dict[str, ReplicaStatus] = {}  # variant -> its last read (load() filters by it)
        self._pod_ips: dict[str, tuple[str, str]] = {}  # pod IP -> (pod name, variant), from every pod read
        self._variants = scenario_variants(sc)
        self._pods_seen: dict[str, tuple[dict[str, Any], str, bool, float]] = {}  # pod -> (last read, variant, ...)
        self._variant_read: dict[str, float] = {}  # variant -> time of its last pod list
        self.control = self._plane(())

    def _plane(self, forecast: tuple[Any, ...]) -> ControlPlane:
        policy = None if self.native else REGISTRY.build(self.cfg)
        return ControlPlane(policy, self.cfg.label, self._variants, clock=self.clock, metrics=self.metrics,
                            actuator=self, probe=self, writer=self.writer, forecast=forecast,
                            gpu_capacity=self.sc.cluster.gpu_capacity, emit_row=self.rows.append)

    @property
    def t0(self) -> float:
        return self.clock.t0

    @t0.setter
    def t0(self, value: float) -> None:
        self.clock.t0 = value

    # ---- Actuator: the API server ------------------------------------------------------------------
    def read_variant(self, name: str) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        try:
            dep = self.api.get_deployment(NAMESPACE, name)
        except NotFound:
            return None, []
        sel = dep.get("spec", {}).get("selector", {}).get("matchLabels", {})
        pods = self.api.list_pods(NAMESPACE, selector_string(sel))
        now = self.clock.now()
        self._variant_read[name] = now
        for p in pods:
            ip = (p.get("status") or {}).get("podIP")
            if ip:
                self._pod_ips[ip] = (p["metadata"]["name"], name)
            self._note_pod(p, name, now)
        return dep, pods

    def _note_pod(self, p: dict[str, Any], variant: str, now: float) -> None:
        """Keep the newest read of every pod (pods.jsonl from its conditions at the end, harness/sim/startup_phases.py)."""
        pod = str((p.get("metadata") or {}).get("name"))
        conds = (p.get("status") or {}).get("conditions") or []
        seen = self._pods_seen.get(pod)
        unschedulable = bool(seen and seen[2]) or any(
            c.get("type") == "PodScheduled" and c.get("status") == "False" and c.get("reason") == "Unschedulable"
            for c in conds)
        self._pods_seen[pod] = (p, variant, unschedulable, now)

    def write_pods(self) -> None:
        """One pods.jsonl row per pod seen; a pod missing from its variant's last read went after its own."""
        for _, (obj, variant, unsched, t) in sorted(self._pods_seen.items()):
            listed = t >= self._variant_read.get(variant, t)
            self.writer.add_pod(kube_pod_record(obj, variant, self.clock.from_wall, unsched, None if listed else t))

    def replicas(self, variant: str) -> ReplicaStatus:
        dep, pods = self.read_variant(variant)
        c = pod_counts(pods)
        st = ReplicaStatus(spec=int(dep["spec"].get("replicas", 0)) if dep else 0, ready=tuple(c.ready),
                           pending=c.pending, terminating=c.terminating, target_exists=dep is not None,
                           starting=c.starting)
        self._status[variant] = st
        return st

    def scale(self, variant: str, replicas: int) -> None:
        self.scaler.scale(NAMESPACE, variant, replicas)

    # ---- LoadProbe: Prometheus ----------------------------------------------------------------------
    def router_queue(self) -> dict[str, int]:
        return metrics_router_queue(self.metrics, (v.model for v in self.sc.cluster.variants))

    def load(self, now: float, since: float) -> dict[str, LoadSample]:
        """The latest scraped sample of each ready pod; completions are counted after the run (``finish``)."""
        out = {}
        for v in self.sc.cluster.variants:
            st = self._status.get(v.name)
            ready = set(st.ready) if st else set()
            try:
                samples = [p for p in self.metrics.latest_pod_samples(v.name) if p.pod in ready]
            except MetricsUnavailable:
                samples = []
            out[v.name] = LoadSample(
                kv_usage=tuple(p.kv_usage for p in samples),
                gpu_util=tuple(p.gpu_util for p in samples if p.gpu_util is not None),
                waiting=sum(p.waiting for p in samples), running=sum(p.running for p in samples), completed_ok=None)
        return out

    # ---- samples and decisions ----------------------------------------------------------------------
    def sample(self, t: float) -> list[TimeseriesRecord]:
        rows = self.control.sample(t)
        self.sampled(t, rows)
        return rows

    def sampled(self, t: float, rows: Sequence[TimeseriesRecord]) -> None:
        """After each sample: what an in-cluster scaler did becomes its decision; results checkpointed."""
        if self.native and self.cfg.kind != "wva":
            for row in rows:
                if self._status[row.variant].target_exists:
                    self._record_spec_change(t, row.variant, row.spec_replicas)
        if self.native and self.cfg.kind == "wva":
            self.record_wva_status(t)
        self.writer.checkpoint()

    def _record_spec_change(self, t: float, name: str, spec: int) -> None:
        prev = self._last_spec.get(name)
        self._last_spec[name] = spec
        if prev is not None and prev != spec:
            who = f"{self.cfg.kind}.kube"
            by = self.cfg.kind.upper() if self.cfg.kind in ("hpa", "keda") else f"{self.cfg.label} (its objects)"
            self.writer.add_decision(t, self.cfg.label, Decision(
                variant=name, current_replicas=prev, desired_replicas=spec,
                reasons=(Reason(who, f"in-cluster {by} set spec.replicas {prev} -> {spec}"),)))

    def record_wva_status(self, t: float) -> None:
        for va in self.api.list_variant_autoscalings(NAMESPACE):
            alloc = (va.get("status") or {}).get("desiredOptimizedAlloc") or {}
            name, desired = va["metadata"]["name"], alloc.get("numReplicas")
            if desired is None or self._last_desired.get(name) == desired:
                continue
            current = int(((va.get("status") or {}).get("currentAlloc") or {}).get("numReplicas", desired))
            self._last_desired[name] = int(desired)
            self.writer.add_decision(t, self.cfg.label, Decision(
                variant=name, current_replicas=current, desired_replicas=int(desired),
                reasons=(Reason("wva.status", alloc.get("reason") or "VariantAutoscaling status"),)))

    def decide(self, t: float, fast: bool) -> None:
        self.control.decide(fast=fast, now=t)

    # ---- the run ------------------------------------------------------------------------------------
    def set_arrivals(self, requests: list[Any]) -> None:
        """The run's schedule: offered load in the time series and the oracle's forecast."""
        models = dict.fromkeys(v.model for v in self.sc.cluster.variants)
        self.control = self._plane(forecast_from_requests(requests, models))

    def drive(self, gateway: str, logs: Path, progress: Callable[[float, float], None] | None,
              requests: list[Any] | None = None, load_runner: Any = None) -> None:
        from scalearena.workloads.generate import build_requests

        requests = build_requests(self.sc) if requests is None else requests
        self.set_arrivals(requests)
        if load_runner is not None:  # in-cluster Locust (kube.load.InClusterLoad)
            self.t0 = load_runner.start(requests, self.end_s, self.sc.client.timeout_s)
            self.record_lead()
            try:
                self.loop(load_runner.alive, progress)
            finally:
                self.finish(load_runner.collect(), requests)
            return
        locust = LocustProcess(logs.parent, gateway, end_s=self.end_s, timeout_s=self.sc.client.timeout_s,
                               time_scale=self.clock.time_scale, log=logs / "locust.log", wall=self.clock.wall)
        self.t0 = locust.start(requests, lead_s=3.0)
        self.record_lead()
        try:
            self.loop(locust.alive, progress)
        finally:
            locust.stop(10.0)
            self.finish(locust.record_files(), requests)

    def record_lead(self) -> None:
        """The in-cluster controllers' phase against the load. An HPA syncs at its creation + k x its sync period
        (harness.control.loop.first_tick); the run's own HPAs are made by its apply, KEDA's when its operator
        first reconciles the ScaledObject (kube/births.py). The lead from the first HPA's creation to the load's
        start, in scenario seconds, is recorded as the event ``control_lead`` at its negative time; the
        simulator given it as ``phases.control_lead_s`` ticks in the same phase."""
        if self.births is None or not self.native:
            return
        self.births.poll()  # one more list: an HPA made since the last
        self.births.stop()
        origin, what = self.births.origin()
        lead = (self.t0 - origin) * self.clock.time_scale
        self.writer.add_event(-lead, "control_lead", control_lead_s=round(lead, 3), origin=what)

    def loop(self, load_alive: Callable[[], bool], progress: Callable[[float, float], None] | None) -> None:
        """The shared wall-clock loop (harness.control.loop); here the first sample is taken at once."""
        every = self.sc.metrics.sample_interval_s
        WallLoop(self.control, self.clock, self.end_s, every, load_alive, overstay_s=15.0 * self.clock.time_scale,
                 tick_s=min(0.1, every / self.clock.time_scale),
                 sample_at_start=True, hooks=self, progress=progress, sleep=self.sleep,
                 lead_s=self.sc.phases.control_lead_s).run()

    def resolve_pod(self, row: dict[str, Any]) -> dict[str, Any]:
        """A record whose pod is the EPP's ``IP:port`` gets the pod name and variant of that IP."""
        pod = row.get("pod")
        if not pod or row.get("variant"):
            return row
        ip = str(pod).rsplit(":", 1)[0] if str(pod).count(":") == 1 else str(pod)
        if ip in self._pod_ips:
            name, variant = self._pod_ips[ip]
            return {**row, "pod": name, "variant": variant}
        return row

    def finish(self, record_files: list[Path], requests: list[Any]) -> None:
        rows = {k: self.resolve_pod(r) for k, r in load.read_records(record_files).items()}
        end = self.clock.now()
        self.write_pods()
        ok_ends: dict[str, list[float]] = {}
        for spec in requests:
            row = rows.get(spec.request_id)
            r = load.to_request_record(row) if row else load.unsent_record(spec, end)
            self.writer.add_request(r)
            if r.status == "ok" and r.variant:
                ok_ends.setdefault(r.variant, []).append(r.end_s)
        for ends in ok_ends.values():
            ends.sort()
        prev: dict[str, float] = {}
        for ts in self.rows:
            lo = prev.get(ts.variant, 0.0)
            ends = ok_ends.get(ts.variant, [])
            n = bisect.bisect_right(ends, ts.t_s) - bisect.bisect_right(ends, lo)
            ts.completed_rps = n / max(ts.t_s - lo, 1e-9)
            prev[ts.variant] = ts.t_s
            self.writer.add_timeseries(ts)
