"""Scaling KPIs and per-token efficiency: the ``scaling`` and ``efficiency`` keys of summary.json.

Users comparing autoscalers ask how often and how far an autoscaler moved, whether it flapped,
how long a scale-up took to become capacity, and what a million tokens cost (issue 15 item 3;
llm-d-autoscaling #1428/#890 scale-event KPIs, #1033 cost next to attainment). Everything here is
computed from the three files every backend writes (decisions.jsonl, timeseries.parquet,
requests.parquet), so sim, local and kube runs get the same numbers. ``reports.metrics.summarize``
calls these; docs/metrics.md gives each exact definition.

Written by hand: the matching of decisions to the timeseries is specific to our record layout and
no library does it.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from scalearena.reports.request_table import RequestTable, as_table
from scalearena.reports.usage import Timeseries, TimeseriesColumns, as_float, timeseries_columns

# Two applied changes of one variant in opposite directions at most this far apart are one oscillation.
OSCILLATION_WINDOW_S = 300.0
LAG_PERCENTILES = (50, 95)
_DIRECTION = {"scale_up": 1, "scale_down": -1}


def applied_changes(decisions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Recorded decisions that change the replica count (desired != current), in time order.

    The control plane applies every such decision (clamped to the variant's bounds); the kube
    backend records only spec changes it observed, so all three backends mean the same thing."""
    rows = [d for d in decisions
            if d.get("desired_replicas") is not None and d.get("current_replicas") is not None
            and int(d["desired_replicas"]) != int(d["current_replicas"])]
    return sorted(rows, key=lambda d: float(d.get("t_s") or 0.0))


def _direction(d: dict[str, Any]) -> int:
    return 1 if int(d["desired_replicas"]) > int(d["current_replicas"]) else -1


def _step(d: dict[str, Any]) -> int:
    return abs(int(d["desired_replicas"]) - int(d["current_replicas"]))


def count_oscillations(changes: list[dict[str, Any]], window_s: float = OSCILLATION_WINDOW_S) -> int:
    """Direction reversals: consecutive applied changes of one variant in opposite directions
    whose times differ by at most ``window_s`` (up then down, or down then up)."""
    n = 0
    last: dict[str, tuple[float, int]] = {}
    for d in changes:
        v, t, sign = str(d.get("variant")), float(d.get("t_s") or 0.0), _direction(d)
        prev = last.get(v)
        if prev is not None and prev[1] != sign and t - prev[0] <= window_s:
            n += 1
        last[v] = (t, sign)
    return n


def _variant_counts(changes: list[dict[str, Any]]) -> dict[str, Any]:
    ups = sum(1 for d in changes if _direction(d) > 0)
    return {
        "scale_up_count": ups,
        "scale_down_count": len(changes) - ups,
        "largest_step": max((_step(d) for d in changes), default=None),
        "oscillations": count_oscillations(changes),
    }


def ready_lags(changes: list[dict[str, Any]], ts: Timeseries) -> tuple[list[float], int]:
    """Seconds from each scale-up decision to the first timeseries sample of its variant, at or
    after the decision, with ``ready_replicas >= desired_replicas``. A scale-up that a later
    scale-down of the same variant overtakes before that sample, or that the run never sees
    ready, is unmatched. Returns (lags, unmatched)."""
    lags: list[float] = []
    unmatched = 0
    ts = timeseries_columns(ts)
    by_variant = _samples_by_variant(ts) if len(ts["t_s"]) and changes else {}
    for i, d in enumerate(changes):
        if _direction(d) < 0:
            continue
        v, t0, want = str(d.get("variant")), float(d.get("t_s") or 0.0), int(d["desired_replicas"])
        g = by_variant.get(v)
        cutoff = next((float(e.get("t_s") or 0.0) for e in changes[i + 1:]
                       if str(e.get("variant")) == v and _direction(e) < 0), np.inf)
        if g is None:
            unmatched += 1
            continue
        t, ready = g
        hit = np.flatnonzero((t >= t0) & (ready >= want))
        if hit.size == 0 or t[hit[0]] > cutoff:
            unmatched += 1
        else:
            lags.append(float(t[hit[0]] - t0))
    return lags, unmatched


def _samples_by_variant(ts: TimeseriesColumns) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Each variant's sample times and ready replicas, in time order (numpy: a pandas group-by and a
    sort per variant cost ~0.5 ms of a paper run's summary). Rows at one time keep their order; which
    of them comes first cannot change a lag, all having the same time."""
    variant = ts["variant"]
    t_all = as_float(ts["t_s"])
    ready_all = as_float(ts["ready_replicas"])
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for v in {x for x in variant.tolist() if x is not None and x == x}:  # group-by drops null keys
        mine = variant == v
        order = np.argsort(t_all[mine], kind="stable")
        out[str(v)] = (t_all[mine][order], ready_all[mine][order])
    return out


def scaling_kpis(req: pd.DataFrame | RequestTable, ts: Timeseries, decisions: list[dict[str, Any]]) -> dict[str, Any]:
    """summary.json ``scaling``: counts, steps, oscillations, decision-to-ready lag, killed requests."""
    changes = applied_changes(decisions)
    lags, unmatched = ready_lags(changes, ts)
    variants = sorted({str(d.get("variant")) for d in changes})
    lag_stats: dict[str, Any] = {f"p{q}": float(np.percentile(lags, q)) if lags else None for q in LAG_PERCENTILES}
    return {
        **_variant_counts(changes),
        "oscillation_window_s": OSCILLATION_WINDOW_S,
        "by_variant": {v: _variant_counts([d for d in changes if str(d.get("variant")) == v]) for v in variants},
        "decision_to_ready_lag_s": {**lag_stats, "matched": len(lags), "unmatched": unmatched},
        "requests_lost_to_scale_down": as_table(req).status_counts().get("killed", 0),
    }


def _per_million(amount: float | None, tokens: float) -> float | None:
    return None if amount is None or tokens <= 0 else amount / tokens * 1e6


def efficiency_kpis(req: pd.DataFrame | RequestTable, cost: float, cost_usd: float | None,
                    energy_kwh: float | None) -> dict[str, Any]:
    """summary.json ``efficiency``: run cost and energy per million tokens of requests that finished ok."""
    table = as_table(req)  # null token counts count 0 (nansum)
    out_tok = float(np.nansum(table.column("output_tokens", ok_only=True)))
    all_tok = out_tok + float(np.nansum(table.column("input_tokens", ok_only=True)))
    return {
        "cost_per_1m_output_tokens": _per_million(cost, out_tok),
        "cost_per_1m_total_tokens": _per_million(cost, all_tok),
        "cost_usd_per_1m_output_tokens": _per_million(cost_usd, out_tok),
        "cost_usd_per_1m_total_tokens": _per_million(cost_usd, all_tok),
        "energy_kwh_per_1m_tokens": _per_million(energy_kwh, all_tok),
    }
