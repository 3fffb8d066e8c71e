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

The package: ``loop`` (the event heap, scrapes, decisions, samples, faults),
``requests`` (arrival, routing, engine progress, one record per request),
``pods`` (ReplicaSet reconcile, GPU scheduling, cold start, termination, and
what the control plane reads and changes of them).
"""
from __future__ import annotations

from .loop import SimBackend, Simulation

__all__ = ["SimBackend", "Simulation"]
