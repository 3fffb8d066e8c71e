"""``validate``'s check that every query a user's objects read can match a series.

A user's HPA or ScaledObject whose PromQL selects ``namespace="llm-d"`` or a ``model_name``
that is not the scenario's validates (it is well-formed) and then runs at its minimum, blind.
Rather than re-deriving which series a backend exports (names, labels, recording rules,
adapter templates), the probe runs the autoscaler for real on the simulator for the first
``PROBE_S`` seconds of the scenario: the in-memory Prometheus holds the series the local and
Kubernetes backends export too (the names and labels of contracts/series.py), with the
objects' own recording rules and adapter rules applied. The decisions are then read by
``reports.signal_health``, the same check a finished run gets, so validate and the end of a
run can never disagree on what "missing" means.

Probed: ``kubernetes`` autoscalers (the user's objects) and ``keda`` with PromQL triggers, the
autoscalers whose queries a user writes. Built-in presets read named signals that always exist.
"""
from __future__ import annotations

import itertools
from typing import Any

from scalearena.contracts.series import NAMESPACE
from scalearena.reports.signal_health import signal_health

PROBE_S = 120.0  # eight 15 s HPA syncs: enough reads that one empty scrape is not "never"


def probed(cfg: Any) -> bool:
    """Whether ``cfg`` reads queries a user wrote (a ``kubernetes`` autoscaler, or ``keda`` with PromQL)."""
    if cfg.kind == "kubernetes":  # an llm-d recipe has its own kind (llmd-queue, ...): shipped queries
        return True
    return cfg.kind == "keda" and any(not t.is_signal for t in cfg.triggers or ())


def probe_length(sc: Any) -> float:
    return min(PROBE_S, sc.duration_s)


def probe_signals(sc: Any, cfg: Any) -> list[dict[str, Any]]:
    """The signals ``cfg`` never received a value for over the first ``PROBE_S`` s of ``sc`` on the simulator
    (``signal_health``'s missing rows)."""
    from scalearena.harness.backends.sim import scratch_run
    from scalearena.workloads.generate import iter_requests

    probe_s = probe_length(sc)
    probe = sc.model_copy(update={"duration_s": probe_s, "drain_s": 0.0, "faults": []})
    requests = itertools.takewhile(lambda r: r.arrival_s < probe_s, iter_requests(probe))
    _, decisions = scratch_run(probe, cfg, requests, {"slo": sc.slo.model_dump(mode="json"), "duration_s": probe_s})
    return signal_health(decisions)[1]


def blind_signals(sc: Any) -> list[str]:
    """validate's warnings: per probed autoscaler of ``sc``, each signal it never received a value for."""
    out = []
    models = " or ".join(repr(m) for m in dict.fromkeys(v.model for v in sc.cluster.variants))
    for cfg in sc.autoscaler_configs():
        if probed(cfg):
            out += [f"autoscaler {cfg.label!r}: {m['signal']} had no value in the first {probe_length(sc):g} s "
                    f"on the simulator ({m['reads']} reads: {m['why'] or 'no value'}); its queries select no series of "
                    f"this scenario, which exports namespace {NAMESPACE!r}, model_name {models} and one Deployment "
                    "per variant, named after it (docs/autoscalers.md#signals-that-never-arrive)"
                    for m in probe_signals(sc, cfg)]
    return out
