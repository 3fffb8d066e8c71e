"""The embedded simulated cluster: virtual time, one heap-ordered event loop.

Everything the other backends do with processes or Kubernetes happens here as
events on a virtual clock: arrivals, the router (harness.router), one
vLLM-like engine per pod (harness.engine.core), pod lifecycle and scale-down
ordering (harness.engine.cluster), Prometheus-like scrapes into
``MemoryMetrics``, the autoscaler's ``decide`` / ``decide_fast`` loops and
faults. A simulated hour takes seconds because engines jump from event to
event instead of stepping token by token.

Request outcomes (every request gets exactly one RequestRecord):
ok 200; ``rejected`` 429 (router admission, full gateway queue, full engine
waiting queue); ``killed`` 0 (still running when its pod's termination grace
ran out); ``error`` 500 (its pod crashed); ``too_long`` 400 (prompt + max_tokens
can never fit the engine: max_model_len or the whole KV cache);
``timeout`` 0 (the client gave up after ``client.timeout_s``, or the run
ended with it still in flight).

Same-time events run in a fixed order (engine events, pod transitions,
arrivals, timeouts, faults, scrapes, decisions, samples, then a sequence
number), so a scenario and seed give byte-identical results.
"""
from __future__ import annotations

import heapq
import itertools
import math
import random
from collections.abc import Callable
from typing import Any

from scalearena.controllers.base import Autoscaler, AutoscalerConfig
from scalearena.controllers.registry import REGISTRY

from ..control.plane import ControlPlane
from ..control.ports import LoadSample, ReplicaStatus, VirtualClock
from ..control.view import forecast_from_requests, scenario_variants
from ..engine.cluster import GONE, PENDING, READY, STARTING, TERMINATING, Deployment, GPUPool, Pod
from ..engine.core import SubmitResult
from ..engine.latency import build_latency
from ..metrics.memory import MemoryMetrics, Sample
from ..records import RequestRecord
from ..results import RunWriter
from ..router import RoutedPod, Router
from ..scenario import PodCrash, Scenario
from .base import Progress

# event kinds; the number is the same-time priority
ENGINE, POD_READY, GRACE_END, ARRIVAL, TIMEOUT, FAULT, SCRAPE, DECIDE, DECIDE_FAST, SAMPLE, END = range(11)


class _Req:
    __slots__ = ("spec", "pod", "first_token_s", "done")

    def __init__(self, spec: Any) -> None:
        self.spec = spec
        self.pod: Pod | None = None
        self.first_token_s: float | None = None
        self.done = False


class SimBackend:
    """``Backend`` for ``--cluster sim``."""

    def __init__(self, **options: Any) -> None:
        self.options = options

    def run(self, scenario: Scenario, autoscaler: AutoscalerConfig, writer: RunWriter,
            progress: Progress | None = None) -> None:
        from dataclasses import asdict

        from scalearena.workloads.generate import WorkloadStats, build_requests

        stats = WorkloadStats()
        requests = build_requests(scenario, stats)
        writer.meta["workload_generation"] = {
            "requests": list(stats.requests), "clipped": stats.clipped,
            "traces": [asdict(t) if t is not None else None for t in stats.traces],
        }
        Simulation(scenario, autoscaler, writer, requests, progress).run()


class Simulation:
    def __init__(self, sc: Scenario, config: AutoscalerConfig, writer: RunWriter, requests: list,
                 progress: Progress | None = None, policy: Autoscaler | None = None) -> None:
        self.sc, self.config, self.writer, self.progress = sc, config, writer, progress
        self.requests = requests
        policy = policy or REGISTRY.build(config)
        self.router = Router(sc.router, seed=sc.seed)
        self.metrics = MemoryMetrics(sc.metrics.staleness_s)
        self.pool = GPUPool(sc.cluster.gpu_capacity)
        self.deps: list[Deployment] = []
        for i, v in enumerate(sc.cluster.variants):
            lat, blocks = build_latency(v.engine, sc.cluster.gpu(v.gpu), where=f"cluster.variants[{i}].engine")
            self.deps.append(Deployment(v, lat, blocks, v.start_replicas))
        self.models = list(dict.fromkeys(v.model for v in sc.cluster.variants))
        self.gateway: dict[str, list[_Req]] = {m: [] for m in self.models}
        self.clock = VirtualClock()
        self.end_s = sc.duration_s + sc.drain_s
        self._heap: list[tuple[float, int, int, int, Any]] = []
        self._seq = itertools.count()
        self._pod_seq = itertools.count()
        self._next_arrival = 0
        self.inflight = 0
        self._ok_total = {d.name: 0 for d in self.deps}
        self._slow = [f for f in sc.faults if f.kind == "slow_cold_start"]
        self._warm = False
        self._scrape_phase = sc.metrics.scrape_interval_s
        for d in self.deps:
            self.metrics.cache_config[d.name] = (d.num_gpu_blocks, d.spec.engine.block_size)
            self.metrics.models[d.name] = d.spec.model
        self.control = ControlPlane(
            policy, config.label, scenario_variants(sc), clock=self.clock, metrics=self.metrics, actuator=self,
            probe=self, writer=writer, forecast=forecast_from_requests(requests, self.models),
            gpu_capacity=sc.cluster.gpu_capacity)

    @property
    def t(self) -> float:
        return self.clock.t

    # ---- the loop -----------------------------------------------------------------------------------
    def push(self, t: float, kind: int, payload: Any = None) -> None:
        heapq.heappush(self._heap, (t, kind, next(self._seq), kind, payload))

    def run(self) -> None:
        sc = self.sc
        meta = self.writer.meta
        meta.setdefault("scenario", sc.name)
        meta.setdefault("autoscaler", self.config.label)
        meta.setdefault("cluster", "sim")
        meta.setdefault("seed", sc.seed)
        meta.setdefault("duration_s", sc.duration_s)
        meta.setdefault("slo", sc.slo.model_dump(mode="json"))
        meta.setdefault("sample_interval_s", sc.metrics.sample_interval_s)
        meta.setdefault("scrape_interval_s", sc.metrics.scrape_interval_s)
        if "variants" not in meta:
            from ..runner import variant_meta

            meta["variants"] = variant_meta(sc)
        self._warm = sc.cluster.warm_start  # initial replicas skip the cold start
        for d in self.deps:
            self.reconcile(d)
        self._warm = False
        if self.requests:
            self.push(self.requests[0].arrival_s, ARRIVAL)
        # Prometheus scrapes on its own phase, not in step with the controllers' loops (which all start
        # at t=0): the first scrape at 0 fills the view, the next at a seeded offset in (0, interval].
        # Aligned loops would hide the scrape interval entirely (every decision would see a fresh scrape).
        interval = sc.metrics.scrape_interval_s
        self._scrape_phase = interval * (1.0 - random.Random(f"scrape-phase-{sc.seed}").random())
        self.push(0.0, SCRAPE)
        self.push(0.0, DECIDE)
        if self.control.fast_period_s:
            self.push(0.0, DECIDE_FAST)
        self.push(sc.metrics.sample_interval_s, SAMPLE)
        for i, f in enumerate(sc.faults):
            if f.kind == "metrics_outage":
                self.push(f.start_s, FAULT, ("outage_start", i))
                self.push(f.end_s, FAULT, ("outage_end", i))
            elif f.kind == "pod_crash":
                self.push(f.at_s, FAULT, ("crash", i))
        self.push(self.end_s, END)
        handlers: dict[int, Callable[[float, Any], None]] = {
            ENGINE: self.on_engine, POD_READY: self.on_ready, GRACE_END: self.on_grace_end,
            ARRIVAL: self.on_arrival, TIMEOUT: self.on_timeout, FAULT: self.on_fault, SCRAPE: self.on_scrape,
            DECIDE: self.on_decide, DECIDE_FAST: self.on_decide_fast, SAMPLE: self.on_sample,
        }
        heap, clock = self._heap, self.clock
        while heap:
            t, _, _, kind, payload = heapq.heappop(heap)
            clock.t = t
            if kind == END:
                break
            handlers[kind](t, payload)
            if (t >= sc.duration_s and self.inflight == 0 and self._next_arrival >= len(self.requests)
                    and kind in (ENGINE, TIMEOUT, SAMPLE)):
                break
        self.finish_run()

    def finish_run(self) -> None:
        t = self.t
        if t - self.control.last_sample > 1e-9:
            self.on_sample(t, None, reschedule=False)
        for d in self.deps:
            for pod in list(d.pods):
                for rid, req in list(pod.inflight.items()):
                    tokens = pod.engine.tokens_generated(rid, t)
                    self.record(req, t, "timeout", 0, tokens)
        for m in self.models:
            for req in self.gateway[m]:
                self.record(req, t, "timeout", 0, 0)
            self.gateway[m] = []
        for i in range(self._next_arrival, len(self.requests)):  # arrivals after the end (none by design)
            self.record(_Req(self.requests[i]), t, "timeout", 0, 0)
        self.writer.meta["sim_end_s"] = round(t, 6)
        if self.progress:
            self.progress(t, self.end_s)

    # ---- requests -----------------------------------------------------------------------------------
    def on_arrival(self, t: float, _: Any) -> None:
        spec = self.requests[self._next_arrival]
        self._next_arrival += 1
        if self._next_arrival < len(self.requests):
            self.push(self.requests[self._next_arrival].arrival_s, ARRIVAL)
        req = _Req(spec)
        self.inflight += 1
        self.push(t + self.sc.client.timeout_s, TIMEOUT, req)
        self.dispatch(t, req)

    def dispatch(self, t: float, req: _Req) -> None:
        spec = req.spec
        route = self.router.route(t, spec)
        if route.kind == "reject":
            self.record(req, t, "rejected", 429, 0)
            return
        if route.kind == "queue":
            q = self.gateway.setdefault(spec.model, [])
            if len(q) >= self.sc.router.admission.queue_limit:
                self.record(req, t, "rejected", 429, 0)
            else:
                q.append(req)
            return
        pod = route.pod.owner  # type: ignore[union-attr]
        res = pod.engine.submit(t, spec.request_id, spec.input_tokens, spec.output_tokens, t)
        if res is SubmitResult.ACCEPTED:
            req.pod = pod
            pod.inflight[spec.request_id] = req
        elif res is SubmitResult.REJECTED_FULL:
            req.pod = pod
            self.record(req, t, "rejected", 429, 0)
        else:
            req.pod = pod
            self.record(req, t, "too_long", 400, 0)
        self.drain(pod, t)

    def on_timeout(self, t: float, req: _Req) -> None:
        if req.done:
            return
        pod = req.pod
        tokens = 0
        if pod is not None and req.spec.request_id in pod.inflight:
            tokens = pod.engine.abort(t, req.spec.request_id) or 0
            del pod.inflight[req.spec.request_id]
            self.record(req, t, "timeout", 0, tokens)
            self.drain(pod, t)
            return
        q = self.gateway.get(req.spec.model, [])
        if req in q:
            q.remove(req)
        self.record(req, t, "timeout", 0, tokens)

    def record(self, req: _Req, t: float, status: str, http: int, tokens: int) -> None:
        if req.done:
            return
        req.done = True
        self.inflight -= 1
        s = req.spec
        ft = req.first_token_s
        itl = None
        if status == "ok" and ft is not None and tokens > 1:
            itl = (t - ft) / (tokens - 1) * 1000.0
        pod = req.pod
        self.writer.add_request(RequestRecord(
            request_id=s.request_id, model=s.model, arrival_s=s.arrival_s, first_token_s=ft, end_s=t,
            input_tokens=s.input_tokens, output_tokens=tokens, status=status, http_status=http,
            variant=pod.variant if pod else None, pod=pod.name if pod else None,
            ttft_ms=None if ft is None else (ft - s.arrival_s) * 1000.0, itl_ms=itl,
            e2e_ms=(t - s.arrival_s) * 1000.0, requested_output_tokens=s.output_tokens,
        ))

    # ---- engines ------------------------------------------------------------------------------------
    def on_engine(self, t: float, payload: tuple[Pod, int]) -> None:
        pod, ver = payload
        if ver != pod.ver or pod.state == GONE:
            return
        pod.sched_t = None
        self.drain(pod, t)

    def drain(self, pod: Pod, t: float) -> None:
        """Handle what the pod's engine did up to t and book its next event."""
        for ev in pod.engine.advance(t):
            req = pod.inflight.get(ev.rid)
            if req is None:
                continue
            if ev.kind == "first_token":
                req.first_token_s = ev.t
            elif ev.kind == "finished":
                del pod.inflight[ev.rid]
                self._ok_total[pod.variant] += 1
                self.record(req, ev.t, "ok", 200, ev.tokens)
        if pod.state == TERMINATING and not pod.inflight:
            self.pod_gone(pod, t)
            return
        nxt = pod.engine.next_event_time()
        if nxt != pod.sched_t and nxt < math.inf:
            pod.ver += 1
            pod.sched_t = nxt
            self.push(max(nxt, t), ENGINE, (pod, pod.ver))

    # ---- pods ---------------------------------------------------------------------------------------
    def dep(self, name: str) -> Deployment:
        for d in self.deps:
            if d.name == name:
                return d
        raise KeyError(name)

    def reconcile(self, d: Deployment) -> None:
        active = d.active()
        if len(active) < d.replicas:
            for _ in range(d.replicas - len(active)):
                self.create_pod(d)
        elif len(active) > d.replicas:
            for pod in d.victims(len(active) - d.replicas):
                self.terminate(pod)
        self.schedule_pending()

    def create_pod(self, d: Deployment) -> None:
        name = f"{d.name}-{d.counter}"
        d.counter += 1
        engine = d.new_engine()
        routed = RoutedPod(name, engine, d.spec.engine.block_size)
        pod = Pod(name, d.name, d.spec.model, self.t, engine, routed, next(self._pod_seq))
        routed.owner = pod
        d.pods.append(pod)

    def schedule_pending(self) -> None:
        pending = sorted((p for d in self.deps for p in d.pods if p.state == PENDING), key=lambda p: p.seq)
        for pod in pending:
            d = self.dep(pod.variant)
            if not self.pool.can_bind(d.spec.gpu, d.spec.gpus_per_replica):
                continue
            self.pool.bind(d.spec.gpu, d.spec.gpus_per_replica)
            pod.state = STARTING
            startup = 0.0 if self._warm else d.spec.startup_s
            for f in self._slow:
                if f.start_s <= self.t < f.end_s:
                    startup *= f.factor
            self.push(self.t + startup, POD_READY, pod)

    def on_ready(self, t: float, pod: Pod) -> None:
        if pod.state != STARTING:
            return
        pod.state = READY
        pod.ready_s = t
        pod.engine.t = t  # the engine's clock starts at readiness
        pod.last_scrape = t
        self.router.add_pod(pod.model, pod.routed)
        q = self.gateway.get(pod.model, [])
        self.gateway[pod.model] = []
        for req in q:
            self.dispatch(t, req)

    def terminate(self, pod: Pod) -> None:
        if pod.state in (PENDING, STARTING):
            self.pod_gone(pod, self.t)
            return
        self.router.remove_pod(pod.model, pod.routed)
        pod.state = TERMINATING
        if not pod.inflight:
            self.pod_gone(pod, self.t)
            return
        grace = self.dep(pod.variant).spec.termination_grace_s
        pod.grace_end_s = self.t + grace
        self.push(pod.grace_end_s, GRACE_END, pod)

    def on_grace_end(self, t: float, pod: Pod) -> None:
        if pod.state != TERMINATING:
            return
        self.drain(pod, t)
        if pod.state == GONE:
            return
        self.kill(pod, t, "killed", 0)

    def kill(self, pod: Pod, t: float, status: str, http: int) -> None:
        for rid, tokens in pod.engine.kill_all(t):
            req = pod.inflight.pop(rid, None)
            if req is not None:
                self.record(req, t, status, http, tokens)
        self.pod_gone(pod, t)

    def pod_gone(self, pod: Pod, t: float) -> None:
        prev = pod.state
        if prev == READY:
            self.router.remove_pod(pod.model, pod.routed)
        pod.state = GONE
        d = self.dep(pod.variant)
        d.pods.remove(pod)
        if prev in (STARTING, READY, TERMINATING):
            self.pool.release(d.spec.gpu, d.spec.gpus_per_replica)
        self.schedule_pending()

    def on_fault(self, t: float, payload: tuple[str, int]) -> None:
        what, i = payload
        f = self.sc.faults[i]
        self.writer.add_event(t, f.kind if what == "crash" else what)
        if what == "outage_start":
            self.metrics.available = False
        elif what == "outage_end":
            self.metrics.available = True
        else:
            if not isinstance(f, PodCrash):  # run() schedules "crash" events for pod_crash faults only
                raise TypeError(f"fault event {what!r} on a {f.kind} fault")
            d = self.dep(f.variant) if f.variant else self.deps[0]
            ready = [p for p in d.pods if p.state == READY]
            if ready:
                self.kill(ready[0], t, "error", 500)
                self.reconcile(d)  # the ReplicaSet replaces it (cold start again)

    # ---- metrics ------------------------------------------------------------------------------------
    def on_scrape(self, t: float, _: Any) -> None:
        for d in self.deps:
            for pod in d.pods:
                if pod.state != READY:
                    continue
                m = pod.engine.metrics(t)
                self.drain(pod, t)
                dt = t - (pod.last_scrape if pod.last_scrape is not None else t)
                util = None if dt <= 0 else min(1.0, (m.busy_s - pod.last_busy) / dt)
                pod.last_busy, pod.last_scrape = m.busy_s, t
                self.metrics.record(d.name, pod.name, Sample(
                    t, m.kv_usage, m.waiting, m.running, util, float(m.request_success_total),
                    m.ttft.cumulative(), m.itl.cumulative(), m.e2e.cumulative(),
                ))
        nxt = t + self.sc.metrics.scrape_interval_s
        if t == 0.0 and self._scrape_phase < self.sc.metrics.scrape_interval_s:
            nxt = self._scrape_phase
        self.push(nxt, SCRAPE)

    # ---- control plane: decisions (Actuator) -------------------------------------------------------
    def on_decide(self, t: float, _: Any) -> None:
        self.control.decide()
        self.push(t + self.control.policy.period_s, DECIDE)

    def on_decide_fast(self, t: float, _: Any) -> None:
        self.control.decide(fast=True)
        self.push(t + float(self.control.fast_period_s), DECIDE_FAST)  # type: ignore[arg-type]

    def replicas(self, variant: str) -> ReplicaStatus:
        d = self.dep(variant)
        return ReplicaStatus(spec=d.replicas, ready=tuple(p.name for p in d.pods if p.state == READY),
                             pending=d.count(PENDING) + d.count(STARTING), terminating=d.count(TERMINATING))

    def scale(self, variant: str, replicas: int) -> None:
        d = self.dep(variant)
        d.replicas = replicas
        self.reconcile(d)

    # ---- control plane: samples (LoadProbe) ---------------------------------------------------------
    def router_queue(self) -> dict[str, int]:
        return {m: len(self.gateway.get(m, [])) for m in self.models}

    def load(self, now: float, since: float) -> dict[str, LoadSample]:
        """True engine state (not scraped): KV usage of ready pods, busy fraction since ``since``."""
        out = {}
        for d in self.deps:
            ready = [p for p in d.pods if p.state == READY]
            kvs = [p.engine.kv_usage(now) for p in ready]
            utils = []
            for p in ready:
                busy = p.engine.busy_s
                start = max(p.ready_s or 0.0, since)
                if now > start:
                    utils.append(min(1.0, (busy - p.sample_busy) / (now - start)))
                p.sample_busy = busy
            for p in d.pods:
                if p.state != READY:
                    p.sample_busy = p.engine.busy_s
            out[d.name] = LoadSample(
                kv_usage=tuple(kvs), gpu_util=tuple(utils), waiting=sum(p.engine.num_waiting for p in d.pods),
                running=sum(p.engine.num_running for p in d.pods), completed_ok=self._ok_total[d.name])
        return out

    def on_sample(self, t: float, _: Any, reschedule: bool = True) -> None:
        self.control.sample()
        self.writer.checkpoint()
        if self.progress:
            self.progress(t, self.end_s)
        if reschedule:
            self.push(t + self.sc.metrics.sample_interval_s, SAMPLE)
