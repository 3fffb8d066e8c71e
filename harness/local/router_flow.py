"""serve-router's flow control: the simulator's ``FlowQueues`` behind an asyncio wait.

With ``admission.kind: flow_control`` a request that the picker answers ``hold`` (every ready
engine saturated), or that arrives while others of its model are held, waits here, keyed by its
``x-gateway-inference-fairness-id`` header (the tenant) and ``x-scalearena-priority`` (an integer;
llm-d reads the priority from the InferenceObjective that ``x-gateway-inference-objective`` names,
a CRD serve-router does not have). ``pump`` runs after every metrics refresh: it evicts requests
past ``admission.ttl_s`` (503) and hands held requests to the picker, highest priority first,
tenants in turn, FCFS within one, while it finds room. A full queue is 429 at once; a client that
goes away leaves the queue. ``llm_d_epp_flow_control_queue_size`` counts the held requests on
the router's /metrics (router_metrics.py), next to ``..._pool_saturation``, as the EPP exports them.
"""
from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

from scalearena.harness.local.openai_api import ApiError
from scalearena.harness.sim.flow_control import FlowQueues
from scalearena.harness.sim.router import Route, Router
from scalearena.workloads.base import RequestSpec
from scalearena.workloads.load_handoff import FAIRNESS_HEADER, PRIORITY_HEADER


def flow_tags(headers: Mapping[str, str]) -> tuple[str, int]:
    """(tenant, priority) of a request from its headers; ApiError 400 for a priority that is no integer."""
    try:
        priority = int(headers.get(PRIORITY_HEADER, "0"))
    except ValueError:
        raise ApiError(400, "invalid_request_error", f"{PRIORITY_HEADER}: expected an integer") from None
    return headers.get(FAIRNESS_HEADER, "")[:128], priority


class _Waiter:
    __slots__ = ("spec", "units", "fut")

    def __init__(self, spec: RequestSpec, units: tuple[tuple[int, int], ...], fut: asyncio.Future) -> None:
        self.spec, self.units, self.fut = spec, units, fut


class FlowGate:
    def __init__(self, router: Router, spec: Any, now: Callable[[], float],
                 on_route: Callable[[Route, str], None] | None = None) -> None:
        self.router, self.adm, self.now = router, spec.admission, now
        self.on_route = on_route  # told of every held request it dispatches (serve-router's --trace-file)
        self.queues: dict[str, FlowQueues] = {}

    def busy(self, model: str) -> bool:
        q = self.queues.get(model)
        return q is not None and len(q) > 0

    async def wait(self, spec: RequestSpec, units: tuple[tuple[int, int], ...], timeout_s: float) -> Route:
        """Hold the request until the picker routes it; ApiError 429 (full), 503 (TTL or timeout)."""
        q = self.queues.setdefault(spec.model, FlowQueues(self.adm.queue_limit, self.adm.ttl_s))
        w = _Waiter(spec, units, asyncio.get_running_loop().create_future())
        if not q.enqueue(self.now(), w, spec.tenant, spec.priority):
            raise ApiError(429, "rate_limit_exceeded", f"flow-control queue of model {spec.model!r} is full")
        try:
            self.pump()
            return await asyncio.wait_for(w.fut, timeout=timeout_s)
        except TimeoutError:
            raise ApiError(503, "service_unavailable", "request timed out in queue") from None
        finally:
            q.remove(w)  # no-op when it was dispatched or evicted

    def pump(self) -> None:
        now = self.now()
        for q in self.queues.values():
            for w in q.expired(now):
                if not w.fut.done():
                    w.fut.set_exception(ApiError(503, "service_unavailable", "request timed out in queue: TTL"))
            head: _Waiter | None = q.peek()
            while head is not None:
                route = self.router.route(now, head.spec, head.units)
                if route.kind != "pod":
                    break
                q.pop()
                if not head.fut.done():
                    head.fut.set_result(route)
                    if self.on_route is not None:
                        self.on_route(route, "flow")
                head = q.peek()
