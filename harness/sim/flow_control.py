"""llm-d EPP flow control: gateway queues that hold requests while the pool is saturated.

Semantics from kubernetes-sigs/gateway-api-inference-extension ``pkg/epp/flowcontrol`` (the
flow controller llm-d's EPP runs), scaled down to what a benchmark needs:

- a request belongs to a *flow* keyed by (fairness id, priority): the fairness id comes from the
  ``x-gateway-inference-fairness-id`` header (a tenant), the priority from the request's
  InferenceObjective (higher number = more important); requests without either share the flow
  ("", 0);
- dispatch order: strict priority across bands (a lower band waits while a higher one has work),
  round-robin over the flows of a band (``round-robin-fairness-policy``: each flow in turn, so one
  tenant's burst cannot starve another's trickle), first come first served within a flow
  (``fcfs-ordering-policy``);
- a request is dispatched only while the saturation detector says the pool has room (the router
  decides: every ready pod at ``waiting >= queue_threshold`` or ``kv_usage >= kv_threshold`` is
  saturated, upstream defaults 5 and 0.8);
- capacity: at most ``capacity`` requests held in all (upstream bounds bytes, 1 GB per band by
  default; a request count is what a simulated request has); beyond it a new request is rejected
  with 429 (``QueueOutcomeRejectedCapacity``);
- TTL: a request held longer than ``ttl_s`` is evicted with 503 (``QueueOutcomeEvictedTTL``);
  no TTL by default (upstream ``DefaultRequestTTL`` 0: the client's own timeout ends the wait).

Clock-free like the engine: callers pass ``now``; the simulator and serve-router both use it.
Hand-written: the upstream controller is Go and no Python library implements it.
"""
from __future__ import annotations

import math
from collections import OrderedDict, deque
from typing import Any

Flow = tuple[str, int]  # (fairness id, priority)


class FlowQueues:
    """Per-(fairness id, priority) FCFS queues with strict priority and round-robin fairness."""

    def __init__(self, capacity: int, ttl_s: float | None = None) -> None:
        self.capacity = capacity
        self.ttl_s = ttl_s
        self._bands: dict[int, OrderedDict[str, deque[tuple[float, Any]]]] = {}  # priority -> flows in turn
        self._where: dict[int, Flow] = {}  # id(item) -> its flow
        self.size = 0

    def __len__(self) -> int:
        return self.size

    def enqueue(self, now: float, item: Any, fairness_id: str = "", priority: int = 0) -> bool:
        """Hold ``item``; False when the queues are full (the caller answers 429)."""
        if self.size >= self.capacity:
            return False
        band = self._bands.setdefault(priority, OrderedDict())
        band.setdefault(fairness_id, deque()).append((now, item))
        self._where[id(item)] = (fairness_id, priority)
        self.size += 1
        return True

    def peek(self) -> Any | None:
        """The item ``pop`` would return, or None."""
        for p in sorted(self._bands, reverse=True):
            band = self._bands[p]
            if band:
                return next(iter(band.values()))[0][1]
        return None

    def pop(self) -> Any | None:
        """The next request to dispatch: highest band, the flow whose turn it is, its oldest request."""
        for p in sorted(self._bands, reverse=True):
            band = self._bands[p]
            if not band:
                continue
            fid, q = next(iter(band.items()))
            _, item = q.popleft()
            del band[fid]
            if q:
                band[fid] = q  # back of the round
            self._forget(item, p)
            return item
        return None

    def remove(self, item: Any) -> bool:
        """Take a held request out (its client gave up); False if it is not held."""
        flow = self._where.get(id(item))
        if flow is None:
            return False
        fid, p = flow
        q = self._bands[p][fid]
        for i, (_, it) in enumerate(q):
            if it is item:
                del q[i]
                break
        if not q:
            del self._bands[p][fid]
        self._forget(item, p)
        return True

    def expired(self, now: float) -> list[Any]:
        """Evict and return the requests held longer than the TTL (heads first: FCFS keeps them oldest)."""
        if self.ttl_s is None or not self.size:
            return []
        out = []
        for band in self._bands.values():
            for fid in list(band):
                q = band[fid]
                while q and q[0][0] + self.ttl_s <= now:  # the same sum next_expiry gives
                    out.append(q.popleft()[1])
                if not q:
                    del band[fid]
        for item in out:
            self._forget(item, None)
        return out

    def next_expiry(self) -> float:
        """When the oldest held request reaches its TTL (inf without a TTL or with nothing held)."""
        if self.ttl_s is None or not self.size:
            return math.inf
        return min(q[0][0] for band in self._bands.values() for q in band.values()) + self.ttl_s

    def _forget(self, item: Any, priority: int | None) -> None:
        self._where.pop(id(item), None)
        self.size -= 1
        if priority is not None and not self._bands[priority]:
            del self._bands[priority]
