"""The simulator's event loop: one heap of events on a virtual clock.

``Simulation`` pops events in (time, kind priority, sequence) order and hands
each to its handler; requests (requests.RequestFlow), their prefill/decode
hand-off (handoff.Handoff), pods (pods.PodLifecycle) and scrapes (scrapes.Scrapes) are mixins over
the same state. Scrapes fill ``MemoryMetrics`` on their own phase; decisions and samples go through the
control plane (harness.control.plane.ControlPlane), the same one the local
and kube backends run.
"""
from __future__ import annotations

import gc
import itertools
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from heapq import heappop, heappush
from typing import Any, cast

from scalearena.contracts.records import RequestRecord
from scalearena.controllers.base import ArrivalForecast, Autoscaler, AutoscalerConfig
from scalearena.controllers.registry import REGISTRY
from scalearena.harness.config.fault_spec import PodCrash
from scalearena.harness.config.scenario import Scenario
from scalearena.harness.control.loop import first_tick
from scalearena.harness.control.plane import ControlPlane
from scalearena.harness.control.ports import VirtualClock
from scalearena.harness.control.view import (
    LazyForecast,
    OraclePlanStream,
    forecast_from_requests,
    scenario_variants,
)
from scalearena.harness.metrics.memory import MemoryMetrics
from scalearena.harness.objects import rule_groups
from scalearena.harness.run.backend import Progress
from scalearena.harness.sim.engine.cluster import READY, Deployment, GPUPool
from scalearena.harness.sim.engine.histogram import EppLatency
from scalearena.harness.sim.engine.latency import build_latency
from scalearena.harness.sim.engine.nodes import NodePool
from scalearena.harness.sim.events import (
    ARRIVAL,
    CA_SCAN,
    DECIDE,
    DECIDE_FAST,
    END,
    ENGINE,
    FAULT,
    FLOW,
    GRACE_END,
    HPA_SYNC,
    KV_DONE,
    NODE_READY,
    POD_READY,
    POD_SCHEDULABLE,
    SAMPLE,
    SCRAPE,
    STANDBY_EXPIRE,
    TIMEOUT,
)
from scalearena.harness.sim.flow_control import FlowQueues
from scalearena.harness.sim.handoff import Handoff
from scalearena.harness.sim.pods import PodLifecycle
from scalearena.harness.sim.requests import RequestFlow, _Req
from scalearena.harness.sim.router import Router
from scalearena.harness.sim.scrapes import Scrapes
from scalearena.harness.sim.startup import StartupLifecycle
from scalearena.reports.results import RunWriter
from scalearena.workloads.base import RequestSpec
from scalearena.workloads.generate import iter_requests


class Simulation(RequestFlow, Handoff, PodLifecycle, StartupLifecycle, Scrapes):
    """One simulated run. ``requests``: the run's requests in send order, a list (the oracle's
    forecast is read from it) or a stream generated from ``sc`` (``iter_requests``: never held
    whole; the forecast is generated again from ``sc`` if, and when, a policy reads it)."""

    def __init__(self, sc: Scenario, config: AutoscalerConfig, writer: RunWriter, requests: Iterable[RequestSpec],
                 progress: Progress | None = None, policy: Autoscaler | None = None) -> None:
        self.sc, self.config, self.writer, self.progress = sc, config, writer, progress
        # one tuple per request (RunWriter.add_request_row); a writer without it gets RequestRecords
        self.emit_request: Callable[[tuple[Any, ...]], None] = getattr(writer, "add_request_row", None) or \
            (lambda row: writer.add_request(RequestRecord(*row)))
        self._arrivals: Iterator[RequestSpec] = iter(requests)
        self._next_spec: RequestSpec | None = next(self._arrivals, None)
        policy = policy or REGISTRY.build(config)
        self.router = Router(sc.router, seed=sc.seed)
        self.metrics = MemoryMetrics(sc.metrics.staleness_s)
        if groups := rule_groups(config):  # a kubernetes autoscaler's PrometheusRules / rule files
            self.metrics.add_rules(groups, sc.phases.rules_s, start=-sc.phases.control_lead_s)
        self.pool = GPUPool(sc.cluster.gpu_capacity)
        self.node_pools: dict[str, NodePool] = {}
        self.deps: list[Deployment] = []
        for i, v in enumerate(sc.cluster.variants):
            lat, blocks = build_latency(v.engine, sc.cluster.gpu(v.gpu), where=f"cluster.variants[{i}].engine")
            self.deps.append(Deployment(v, lat, blocks, v.start_replicas,
                                        kv_hold_timeout_s=sc.cluster.kv_transfer.abort_timeout_s))
        self._kv_bytes = self.kv_sizes()
        self.models = list(dict.fromkeys(v.model for v in sc.cluster.variants))
        self.gateway: dict[str, list[_Req]] = {m: [] for m in self.models}
        adm = sc.router.admission
        self.flows = {m: FlowQueues(adm.queue_limit, adm.ttl_s) for m in self.models} \
            if adm.kind == "flow_control" else {}
        self._flow_tick: dict[str, float] = {}
        self.clock = VirtualClock()
        self.end_s = sc.window_s
        self._heap: list[tuple[float, int, int, int, Any]] = []
        self._seq = 0  # events pushed so far: the same-time, same-kind order
        self._pod_seq = itertools.count()
        self.inflight = 0
        self._deadlines: deque[tuple[float, _Req]] = deque()
        self._timeout_s, self._duration_s = float(sc.client.timeout_s), float(sc.duration_s)
        self._epp: dict[str, EppLatency] = {}
        self._fast_next: float | None = None  # next time of the fast loop's chain; None: no fast loop
        self._fast_armed = False
        self._ok_total = {d.name: 0 for d in self.deps}
        # the EPP's request counters per model: received, their prompt tokens, output tokens of ok ones, ok count
        self._objective: dict[str, list[float]] = {}
        self._slow, self._warm = [f for f in sc.faults if f.kind == "slow_cold_start"], False
        self._scrape_phase, self._pool_phase = sc.metrics.scrape_interval_s, cast("float | None", None)  # run() sets
        self._last_scrape: float | None = None  # what a published target's HPA reads (on_hpa_sync)
        for d in self.deps:
            self.metrics.cache_config[d.name] = (d.num_gpu_blocks, d.spec.engine.block_size)
            self.metrics.models[d.name] = d.spec.model
        # A list of requests: the forecast, offered load and oracle plan come from it (as on local and
        # kube). A stream: offered load is counted as requests arrive, the oracle's plan is built
        # window by window from them, and the forecast is generated again only if a policy reads it.
        self._arrived = {m: 0 for m in self.models}  # arrivals so far per model
        variants = scenario_variants(sc)
        listed = isinstance(requests, Sequence)
        forecast: Sequence[ArrivalForecast] = forecast_from_requests(requests, self.models) \
            if isinstance(requests, Sequence) else LazyForecast(lambda: iter_requests(sc), self.models)
        self._plan = None if listed else OraclePlanStream(variants)
        self.control = ControlPlane(
            policy, config.label, variants, clock=self.clock, metrics=self.metrics, actuator=self,
            probe=self, writer=writer, forecast=forecast, gpu_capacity=sc.cluster.gpu_capacity,
            arrived=None if listed else lambda: self._arrived, plan_oracle=listed, last_scrape=self.scraped_by)

    @property
    def t(self) -> float:
        return self.clock.t

    def loop_periods(self, policy: Autoscaler) -> tuple[float, float]:
        """The periods of the policy's loop and of a published target's actuation HPA. The HPA controller queues
        an HPA's next sync a period after the last one ended, so on a real cluster each sync falls one reconcile
        (``phases.sync_lag_s``) later: the loops that are an HPA's sync take it, a ticker of the policy's own
        (WVA's) does not."""
        lag = self.sc.phases.sync_lag_s
        pub = self.control.published
        return (policy.period_s + (lag if getattr(policy, "hpa_sync", False) else 0.0),
                (pub.sync_period_s if pub is not None else 0.0) + lag)

    # ---- the loop -----------------------------------------------------------------------------------
    def push(self, t: float, kind: int, payload: Any = None) -> None:
        self._seq = seq = self._seq + 1
        heappush(self._heap, (t, kind, seq, kind, payload))

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
            from scalearena.harness.run.meta import variant_meta

            meta["variants"] = variant_meta(sc)
        self._warm = sc.cluster.warm_start  # initial replicas skip the cold start
        self._pod_chains: dict[str, int] = {}  # pods on a scrape chain of their own so far (scrapes.pod_ready_scrape)
        self.init_node_pools()
        for d in self.deps:
            self.reconcile(d)
        self._warm = False
        self._scrape_phase, self._pool_phase = self.start_scrapes()
        assert self.control.policy is not None  # the simulator always runs a policy
        self.decide_period_s, self.hpa_sync_period_s = self.loop_periods(self.control.policy)
        if (grid := sc.phases.keda_query_grid_s) is not None:  # KEDA's whole-second queries (MemoryMetrics)
            self.metrics.query_grid = (grid[0], grid[1])
        lead = sc.phases.control_lead_s  # the control loops began this long before the load: their first tick after 0
        own = sc.phases.decide_lead_s  # a policy on a ticker of its own (WVA's) began apart from its HPA
        self.push(first_tick(self.decide_period_s, lead if own is None else own), DECIDE)
        if self.control.fast_period_s:
            self._fast_next = 0.0  # booked by arm_fast once a request waits at the gateway
        self.push(sc.metrics.sample_interval_s, SAMPLE)
        if self.control.published is not None:  # its HPA began with the policy's loop (WVA's objects: one apply)
            self.push(first_tick(self.hpa_sync_period_s, lead), HPA_SYNC)
        for i, f in enumerate(sc.faults):
            if f.kind == "metrics_outage":
                self.push(f.start_s, FAULT, ("outage_start", i))
                self.push(f.end_s, FAULT, ("outage_end", i))
            elif f.kind == "pod_crash":
                self.push(f.at_s, FAULT, ("crash", i))
        self.push(self.end_s, END)
        # The cyclic GC: what exists now lives through the run, so its full passes skip it (gc.freeze: -35 %
        # CPU in an hour at 100 RPS, whose buffered records trigger them), and a young pass waits for 100,000
        # new objects alive instead of 700 (-10 %): nearly every object of a request is freed by its count.
        threshold = gc.get_threshold()
        gc.freeze()
        gc.set_threshold(100_000, *threshold[1:])
        try:
            self.events()
        finally:  # what the run made and still holds goes to the oldest generation untraversed (freeze,
            gc.freeze()  # then unfreeze): the restored young threshold would else walk it at once (~10 ms
            gc.set_threshold(*threshold)  # in a paper run)
            gc.unfreeze()
        self.finish_run()

    def events(self) -> None:
        """Pop and handle events until END: the end of the run's window (``Scenario.window_s``), which every
        backend samples and bills to, so the drain after the last request is simulated like the rest (the
        autoscaler still decides, idle replicas still cost) and not cut where the simulator has nothing left."""
        handlers: dict[int, Callable[[float, Any], None]] = {
            POD_READY: self.on_ready, GRACE_END: self.on_grace_end, FAULT: self.on_fault, SCRAPE: self.on_scrape,
            DECIDE: self.on_decide, DECIDE_FAST: self.on_decide_fast, SAMPLE: self.on_sample, FLOW: self.on_flow,
            KV_DONE: self.on_kv_done,
            NODE_READY: self.on_node_ready, CA_SCAN: self.on_ca_scan, POD_SCHEDULABLE: self.on_schedulable,
            STANDBY_EXPIRE: self.on_standby_expire, HPA_SYNC: self.on_hpa_sync,
        }
        heap, clock = self._heap, self.clock
        t: float
        kind: int
        payload: Any
        while True:
            # The next request is not on the heap: it is due first when its (time, ARRIVAL) comes before the
            # heap's first (time, kind), as its event would have been popped (one ARRIVAL is ever due at a
            # time, so no sequence number is needed between them).
            spec = self._next_spec
            if spec is not None and (not heap or spec.arrival_s < heap[0][0] or
                                     (spec.arrival_s == heap[0][0] and ARRIVAL < heap[0][1])):
                t, kind, payload = spec.arrival_s, ARRIVAL, None
            elif heap:
                t, _, _, kind, payload = heappop(heap)
            else:
                break
            clock.t = t
            if kind == ENGINE:  # the three kinds of nearly every event, called directly
                self.on_engine(t, payload)
            elif kind == ARRIVAL:
                self.on_arrival(t, payload)
            elif kind == TIMEOUT:
                self.on_timeout(t, payload)
            elif kind == END:
                break
            else:
                handlers[kind](t, payload)

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
            fq = self.flows.get(m)
            while fq is not None and len(fq):
                self.record(fq.pop(), t, "timeout", 0, 0)
        while (spec := self._next_spec) is not None:  # arrivals after the end (none by design)
            self.inflight += 1
            if self._plan is not None:
                self._plan.add(spec.model, spec.arrival_s, spec.input_tokens, spec.output_tokens)
            self.record(_Req(spec), t, "timeout", 0, 0)
            self._next_spec = next(self._arrivals, None)
        self.finish_pods()
        if self._plan is not None and "oracle_plan" not in self.writer.meta:
            self.writer.meta["oracle_plan"] = self._plan.plan()
        self.writer.meta["sim_end_s"] = round(t, 6)
        if self.progress:
            self.progress(t, self.end_s)

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
                ready[0].record["end"] = "crashed"
                self.kill(ready[0], t, "error", 500)
                self.reconcile(d)  # the ReplicaSet replaces it (cold start again)

    # ---- scrapes, decisions, samples ----------------------------------------------------------------
    def on_hpa_sync(self, t: float, _: Any) -> None:
        assert self.control.published is not None  # booked only then
        if self.metrics.available:  # an outage: prometheus-adapter answers nothing, the HPA holds
            self.control.sync_published(t)
        self.push(t + self.hpa_sync_period_s, HPA_SYNC)

    def on_decide(self, t: float, _: Any) -> None:
        self.control.decide()
        self.push(t + self.decide_period_s, DECIDE)

    def on_decide_fast(self, t: float, _: Any) -> None:
        self.control.decide(fast=True)
        self._fast_next = t + float(self.control.fast_period_s)  # type: ignore[arg-type]
        self._fast_armed = any(self.gateway.values())
        if self._fast_armed:
            self.push(self._fast_next, DECIDE_FAST)

    def arm_fast(self, t: float) -> None:
        """A request now waits at the gateway: book the fast loop's next tick at or after ``t``.

        The fast loop ticks at 0, p, 2p, ... (each time the previous plus ``fast_period_s``, as a
        chain of events would) but the control plane runs its policy only while requests wait at
        the gateway (``ControlPlane.decide``), so the simulator books a tick only then instead of
        ten events a second for nothing."""
        if self._fast_next is None or self._fast_armed:
            return
        period = float(self.control.fast_period_s)  # type: ignore[arg-type]
        nxt = self._fast_next
        while nxt < t:
            nxt = nxt + period
        self._fast_next, self._fast_armed = nxt, True
        self.push(nxt, DECIDE_FAST)

    def on_sample(self, t: float, _: Any, reschedule: bool = True) -> None:
        self.control.sample()
        self.writer.checkpoint()
        if self.progress:
            self.progress(t, self.end_s)
        if reschedule:
            self.push(t + self.sc.metrics.sample_interval_s, SAMPLE)

