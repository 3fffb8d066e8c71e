"""Requests in the simulator: arrival, routing, engine progress, one record each.

A mixin of ``loop.Simulation`` (it shares the simulation's heap, clock, router
and gateway queues); kept apart so the request path can be read on its own.
Every request ends in exactly one ``RequestRecord`` (``record`` ignores a
second outcome for a request already done).
"""
from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterator
from typing import Any

from mypy_extensions import trait

from scalearena.harness.sim.engine.cluster import GONE, TERMINATING, Pod
from scalearena.harness.sim.engine.core import Engine, SubmitResult
from scalearena.harness.sim.engine.histogram import EppLatency
from scalearena.harness.sim.events import ENGINE, FLOW, TIMEOUT
from scalearena.harness.sim.router import NO_BOOKING, Route, Router
from scalearena.harness.sim.state import SimState
from scalearena.workloads.base import RequestSpec, prefix_units


class _Req:
    __slots__ = ("spec", "units", "pod", "first_token_s", "done", "prefill_pod", "booked")

    def __init__(self, spec: RequestSpec) -> None:
        self.spec = spec
        self.units = prefix_units(spec)  # its prompt's (hash, tokens) units, for the router and the engine
        self.pod: Pod | None = None  # the pod that decodes and streams it
        self.first_token_s: float | None = None
        self.done = False
        self.prefill_pod: Pod | None = None  # P/D: the pod that prefilled it (handoff.py)
        self.booked = NO_BOOKING  # the router's in-flight tokens, released at the first token


@trait
class RequestFlow(SimState):
    """Arrival -> router -> engine -> record. Needs the Simulation's state (see loop.Simulation)."""

    sc: Any
    _arrivals: Iterator[RequestSpec]  # the run's requests still to come, in send order
    _next_spec: RequestSpec | None  # the next of them (None: all sent)
    _arrived: dict[str, int]  # requests sent so far per model
    _plan: Any  # harness.control.view.OraclePlanStream of a streamed run (None: from the list's forecast)
    emit_request: Any  # the writer's add_request_row (a RequestRecord's values as a tuple)
    router: Router
    metrics: Any  # harness.metrics.memory.MemoryMetrics (the EPP's request histograms live there)
    _epp: dict[str, EppLatency]  # model -> its EPP request histograms (metrics.epp_latency), held once
    _timeout_s: float  # sc.client.timeout_s, and below sc.duration_s: read per request, held as floats
    _duration_s: float
    writer: Any
    gateway: dict[str, list[_Req]]
    flows: dict[str, Any]  # model -> harness.sim.flow_control.FlowQueues (admission flow_control only)
    _flow_tick: dict[str, float]
    inflight: int
    _ok_total: dict[str, int]
    _objective: dict[str, list[float]]
    _deadlines: deque[tuple[float, _Req]]  # (client deadline, request) in arrival order

    def on_arrival(self, t: float, _: Any) -> None:
        spec = self._next_spec
        assert spec is not None  # the loop calls it only for a request still to come
        self._next_spec = next(self._arrivals, None)  # due when the loop finds it first (loop.events)
        arrived = self._arrived
        arrived[spec.model] = arrived[spec.model] + 1
        if self._plan is not None:
            self._plan.add(spec.model, spec.arrival_s, spec.input_tokens, spec.output_tokens)
        req = _Req(spec)
        obj = self._counters(spec.model)
        obj[0] = obj[0] + 1.0
        obj[1] = obj[1] + spec.input_tokens
        self.inflight += 1
        deadlines = self._deadlines
        deadlines.append((t + self._timeout_s, req))
        if len(deadlines) == 1:
            self.push(deadlines[0][0], TIMEOUT)
        self.dispatch(t, req)

    def _counters(self, model: str) -> list[float]:
        """The EPP's request counters of a model: received, their prompt tokens, output tokens of the ok
        ones, ok count (floats: the series' values)."""
        obj = self._objective.get(model)
        if obj is None:
            obj = self._objective[model] = [0.0, 0.0, 0.0, 0.0]
        return obj

    def arm_timeout(self) -> None:
        """Book the TIMEOUT event of the earliest client deadline still to look at.

        Deadlines come in arrival order (arrival + one ``client.timeout_s``), so one event at a
        time is enough; a request already done whose deadline falls before the end of the
        arrivals (``duration_s``) is dropped without an event, since its timeout would do nothing
        (after ``duration_s`` an event still ends the run when nothing is left in flight)."""
        deadlines, end = self._deadlines, self._duration_s
        while deadlines and deadlines[0][1].done and deadlines[0][0] < end:
            deadlines.popleft()
        if deadlines:
            self.push(deadlines[0][0], TIMEOUT)

    def dispatch(self, t: float, req: _Req) -> None:
        spec = req.spec
        fq = self.flows.get(spec.model)
        if fq is not None and len(fq):  # others are held: join the queues behind them, then let the pool pick
            self.hold(t, req)
            self.pump(t, spec.model)
            return
        route = self.router.route(t, spec, req.units)
        if route.kind == "hold":
            self.hold(t, req)
            return
        if route.kind == "reject":
            self.record(req, t, "rejected", 429, 0)
            return
        if route.kind == "queue":
            q = self.gateway.setdefault(spec.model, [])
            if len(q) >= self.sc.router.admission.queue_limit:
                self.record(req, t, "rejected", 429, 0)
            else:
                q.append(req)
                self.arm_fast(t)
            return
        self.send(t, req, route)

    def send(self, t: float, req: _Req, route: Route) -> None:
        """A routed request to its pod, or to its prefill pod first (P/D, handoff.py)."""
        req.booked = route.booked
        assert route.pod is not None  # a "pod" route names its pod
        if route.prefill is not None:
            self.start_pd(t, req, route.pod.owner, route.prefill.owner)
        else:
            self.submit(t, req, route.pod.owner)

    def submit(self, t: float, req: _Req, pod: Pod) -> None:
        spec = req.spec
        engine: Engine = pod.engine
        res = engine.submit(t, spec.request_id, spec.input_tokens, spec.output_tokens, t, req.units)
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

    # ---- flow control (harness/sim/flow_control.py) --------------------------------------------------------
    def hold(self, t: float, req: _Req) -> None:
        spec = req.spec
        if not self.flows[spec.model].enqueue(t, req, spec.tenant, spec.priority):
            self.record(req, t, "rejected", 429, 0)  # QueueOutcomeRejectedCapacity
            return
        self._book_flow(t, spec.model)

    def pump(self, t: float, model: str) -> None:
        """Evict expired requests (503), then dispatch held ones while the pool has room."""
        fq = self.flows[model]
        for req in fq.expired(t):
            self.record(req, t, "rejected", 503, 0)  # QueueOutcomeEvictedTTL
        while len(fq):
            held: _Req = fq.peek()
            route = self.router.route(t, held.spec, held.units)
            if route.kind != "pod":
                break
            self.send(t, fq.pop(), route)

    def on_flow(self, t: float, model: str) -> None:
        self._flow_tick.pop(model, None)
        self.pump(t, model)
        if len(self.flows[model]):
            self._book_flow(t, model)

    def _book_flow(self, t: float, model: str) -> None:
        """Look again at the next router refresh (or TTL expiry): only then can the pool's state change."""
        step = self.sc.router.refresh_s
        nxt = min((math.floor(t / step + 1e-9) + 1) * step, self.flows[model].next_expiry())
        if self._flow_tick.get(model, math.inf) > nxt:
            self._flow_tick[model] = nxt
            self.push(nxt, FLOW, model)

    def on_timeout(self, t: float, _: Any) -> None:
        _, req = self._deadlines.popleft()
        self.arm_timeout()
        if req.done:
            return
        pod = req.pod
        tokens = 0
        if req.prefill_pod is not None and req.spec.request_id in pod.inflight:  # type: ignore[union-attr]
            self.end_pd(t, req, "timeout", 0)  # both pods drop it; D's abort frees P's kept KV
            self.drain(pod, t)  # type: ignore[arg-type]
            return
        if pod is not None and req.spec.request_id in pod.inflight:
            tokens = pod.engine.abort(t, req.spec.request_id) or 0
            del pod.inflight[req.spec.request_id]
            self.record(req, t, "timeout", 0, tokens)
            self.drain(pod, t)
            return
        q = self.gateway.get(req.spec.model, [])
        fq = self.flows.get(req.spec.model)
        if req in q:
            q.remove(req)
        elif fq is not None:
            fq.remove(req)  # QueueOutcomeEvictedContextCancelled: the client gave up
        self.record(req, t, "timeout", 0, tokens)

    def record(self, req: _Req, t: float, status: str, http: int, tokens: int) -> None:
        if req.done:
            return
        req.done = True
        self.inflight -= 1
        req.booked.release()
        s = req.spec
        ft = req.first_token_s
        itl = None
        if status == "ok" and ft is not None and tokens > 1:
            itl = (t - ft) / (tokens - 1) * 1000.0
        pod = req.pod
        if status == "ok":
            obj = self._counters(s.model)
            obj[2] = obj[2] + tokens
            obj[3] = obj[3] + 1.0
            epp = self._epp.get(s.model)
            if epp is None:
                epp = self._epp[s.model] = self.metrics.epp_latency(s.model)
            epp.observe(None if ft is None else ft - s.arrival_s, t - s.arrival_s, tokens)
        # a RequestRecord's fields in order (contracts/records.py), as one tuple: no object per request
        self.emit_request((
            s.request_id, s.model, s.arrival_s, ft, t, s.input_tokens, tokens, status, http,
            pod.variant if pod else None, pod.name if pod else None,
            None if ft is None else (ft - s.arrival_s) * 1000.0, itl, (t - s.arrival_s) * 1000.0,
            None, s.output_tokens, req.prefill_pod.name if req.prefill_pod else None,
        ))

    def on_engine(self, t: float, payload: tuple[Pod, int]) -> None:
        pod, ver = payload
        if ver != pod.ver or pod.state == GONE:
            return
        pod.sched_t = None
        self.drain(pod, t)

    def drain(self, pod: Pod, t: float) -> None:
        """Handle what the pod's engine did up to t and book its next event."""
        engine: Engine = pod.engine
        for ev in engine.advance(t):
            req = pod.inflight.get(ev.rid)
            if req is None:
                continue
            if req.prefill_pod is pod:  # P/D, on its prefill pod: its one token is not streamed
                if ev.kind == "finished":
                    self.prefill_done(ev.t, req)
                continue
            if ev.kind == "first_token":
                req.first_token_s = ev.t
                req.booked.release()  # the EPP releases in-flight tokens at the first chunk (StartOfStream)
            elif ev.kind == "kv_pull":
                self.kv_pull(ev.t, req, ev.tokens)
            elif ev.kind == "finished":
                del pod.inflight[ev.rid]
                self._ok_total[pod.variant] += 1
                self.record(req, ev.t, "ok", 200, ev.tokens)
        if pod.state == TERMINATING and not pod.inflight:
            self.pod_gone(pod, t)
            return
        nxt = engine.next_event_time()
        if nxt != pod.sched_t and nxt < math.inf:
            pod.ver += 1
            pod.sched_t = nxt
            self.push(max(nxt, t), ENGINE, (pod, pod.ver))
