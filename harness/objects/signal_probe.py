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

from scalearena.contracts.series import NAMESPACE, epp_labels
from scalearena.reports.signal_health import signal_health

PROBE_S = 120.0  # eight 15 s HPA syncs: enough reads that one empty scrape is not "never"


def probed(cfg: Any) -> bool:
    """Whether ``cfg`` reads queries a user wrote (a ``kubernetes`` autoscaler, or ``keda`` with PromQL)."""
    if cfg.kind == "kubernetes":  # an llm-d recipe has its own kind (llmd-queue, ...): shipped queries
        return True
    return cfg.kind == "keda" and any(not t.is_signal for t in cfg.triggers or ())


def probe_length(sc: Any) -> float:
    return min(PROBE_S, sc.duration_s)


def probe_decisions(sc: Any, cfg: Any) -> list[dict[str, Any]]:
    """The decisions ``cfg`` makes over the first ``PROBE_S`` s of ``sc`` on the simulator."""
    from scalearena.harness.sim.backend import scratch_run
    from scalearena.workloads.generate import iter_requests

    probe_s = probe_length(sc)
    probe = sc.model_copy(update={"duration_s": probe_s, "drain_s": 0.0, "faults": []})
    requests = itertools.takewhile(lambda r: r.arrival_s < probe_s, iter_requests(probe))
    _, decisions = scratch_run(probe, cfg, requests, {"slo": sc.slo.model_dump(mode="json"), "duration_s": probe_s})
    return decisions


def object_queries(target: Any) -> list[tuple[str, str]]:
    """(signal, PromQL) of each query one translated object reads (its HPA metrics, its KEDA triggers)."""
    from scalearena.controllers.hpa.engine import metric_label

    a = target.autoscaler
    if a.kind == "hpa":
        return [(metric_label(m), m.query) for m in a.metrics if m.query is not None]
    if a.kind == "keda":
        return [(label, t.query) for label, t in zip(a.trigger_labels, a.trigger_list, strict=True) if not t.is_signal]
    return []


def _read_text(row: dict[str, Any] | None) -> str:
    if row is None:
        return "not read in the probe"
    if row["valid"] == 0:
        return f"NO SERIES: read {row['reads']} times, never a value"
    return f"ok: read {row['reads']} times, {row['valid']} with a value"


def object_lines(cfg: Any, decisions: list[dict[str, Any]] | None) -> list[str]:
    """validate's listing for a ``kubernetes`` autoscaler: per object, the variant it scales and, per query,
    the PromQL it sends (after the mapping onto the scenario's names) and whether the probe found series
    (queries only where the autoscaler was probed: ``decisions`` not None)."""
    out = []
    for t in getattr(cfg, "targets", []):
        out.append(f"  {cfg.label}: {t.source.rsplit(': ', 1)[-1]} -> variant {t.variant} ({t.autoscaler.kind})")
        if decisions is None:
            continue
        rows = {r["signal"]: r for r in signal_health([d for d in decisions if d.get("variant") == t.variant])[0]}
        out += [f"    {signal}: {query}  [{_read_text(rows.get(signal))}]" for signal, query in object_queries(t)]
    return out


def _blind(sc: Any, cfg: Any, decisions: list[dict[str, Any]]) -> list[str]:
    models = list(dict.fromkeys(v.model for v in sc.cluster.variants))
    epps = " or ".join(repr(epp_labels(m)["service"]) for m in models)
    hint = (" (map yours with --target DEPLOYMENT=VARIANT, --model-name SERVED=MODEL and --epp NAME=MODEL, or "
            "deployments: / model_names: / epp_names: in the scenario)" if cfg.kind == "kubernetes" else "")
    return [f"autoscaler {cfg.label!r}: {m['signal']} had no value in the first {probe_length(sc):g} s "
            f"on the simulator ({m['reads']} reads: {m['why'] or 'no value'}); its queries select no series of "
            f"this scenario, which exports namespace {NAMESPACE!r}, model_name {' or '.join(map(repr, models))}, "
            f"EPP service {epps} and one Deployment per variant, named after it{hint} (docs/autoscalers.md#signals-that-never-arrive)"
            for m in signal_health(decisions)[1]]


def probe_report(sc: Any) -> tuple[list[str], list[str]]:
    """validate's (listing, warnings): the objects and their queries, and each signal of a probed autoscaler
    that never received a value. Autoscalers whose queries a user did not write are not probed."""
    lines: list[str] = []
    warnings: list[str] = []
    for cfg in sc.autoscaler_configs():
        decisions = probe_decisions(sc, cfg) if probed(cfg) else None
        lines += object_lines(cfg, decisions)
        warnings += _blind(sc, cfg, decisions or [])
    return lines, warnings
