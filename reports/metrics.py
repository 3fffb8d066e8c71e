"""The one definition of every number in summary.json, the report and compare.

``summarize(requests, timeseries, decisions, meta)`` is called by
``reports.results.RunWriter`` for every checkpoint and at the end of a run; the
HTML report and the regression gate read the summary it wrote instead of
recomputing anything, so a metric cannot mean two things. docs/metrics.md
gives the formula of every key.

Latency percentiles are over requests that finished ok (a rejected request has
no TTFT); failures are counted separately and goodput charges them. Resource
integrals (replica time, GPU-hours, cost, energy) live in ``reports.usage``.
Every value is JSON-clean: NaN and infinities become null.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from scalearena.contracts.records import FAILURE_CAUSES
from scalearena.reports.provisioning import vs_oracle
from scalearena.reports.recovery import slo_recovery
from scalearena.reports.request_table import RequestTable, as_table
from scalearena.reports.scaling import efficiency_kpis, scaling_kpis
from scalearena.reports.signal_health import signal_health
from scalearena.reports.usage import (
    IDLE_POWER_FRACTION,
    Timeseries,
    TimeseriesColumns,
    as_float,
    integrate,
    meta_window,
    sum_or_none,
    timeseries_columns,
)
from scalearena.reports.verdict import DEFAULT_TARGET

PERCENTILES = (50, 90, 99)
SCALING_ACTIONS = ("scale_up", "scale_down")


def pct_stats(values: pd.Series | np.ndarray) -> dict[str, float | None]:
    """mean, p50, p90, p99 (linear interpolation between order statistics); nulls when empty."""
    if isinstance(values, pd.Series | np.ndarray) and isinstance(values.dtype, np.dtype) and values.dtype.kind in "iuf":
        a = np.asarray(values, dtype=float)  # numbers already: the values to_numeric / dropna keep, in order
        a = a[~np.isnan(a)]
    else:
        a = pd.to_numeric(pd.Series(values), errors="coerce").dropna().to_numpy(dtype=float)
    if a.size == 0:
        return {"mean": None, **{f"p{q}": None for q in PERCENTILES}}
    # one call for the three (one partitioned copy instead of three; the same order statistics and
    # interpolation per quantile, so the same numbers as one call per quantile)
    return {"mean": float(a.mean()), **{f"p{q}": float(v) for q, v in zip(PERCENTILES, np.percentile(a, PERCENTILES),
                                                                           strict=True)}}


def meets_slo(ttft_ms: np.ndarray, itl_ms: np.ndarray, slo: dict[str, Any]) -> np.ndarray:
    """Requests meeting both objectives (TTFT and ITL as numbers, null NaN: ``RequestTable.column``).
    A request with one output token has no inter-token gap (itl_ms null) and meets the ITL
    objective by definition; a null TTFT meets nothing."""
    return (ttft_ms <= float(slo["ttft_ms"])) & _itl_ok(itl_ms, slo)


def _itl_ok(itl_ms: np.ndarray, slo: dict[str, Any]) -> np.ndarray:
    return np.isnan(itl_ms) | (itl_ms <= float(slo["itl_ms"]))


def _any_value(values: np.ndarray) -> bool:
    """A number column holds at least one value (not every row null)."""
    return bool(values.size) and not bool(np.isnan(values).all())


def json_clean(obj: Any) -> Any:
    """Plain Python types only, NaN/inf -> None, so json.dumps never writes NaN."""
    if isinstance(obj, dict):
        return {str(k): json_clean(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [json_clean(v) for v in obj]
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def _per_s(count: float, duration: float) -> float | None:
    return count / duration if duration > 0 else None


def _ratio(num: float, den: float) -> float | None:
    return num / den if den > 0 else None


def _decision_counts(decisions: list[dict[str, Any]]) -> dict[str, int]:
    counts = {"scale_up": 0, "scale_down": 0, "hold": 0, "alert": 0, "limited": 0, "alerts_raised": 0}
    for d in decisions:
        action = d.get("action", "hold")
        counts[action] = counts.get(action, 0) + 1
        counts["limited"] += bool(d.get("limited"))
        counts["alerts_raised"] += len(d.get("alerts") or [])
    return counts


def _workload(req: RequestTable, duration: float) -> dict[str, Any]:
    out: dict[str, Any] = {
        "offered_rps": _per_s(req.rows, duration),
        "input_tokens": pct_stats(req.column("input_tokens")),
        "output_tokens": pct_stats(req.column("output_tokens")),
    }
    requested = req.column("requested_output_tokens")
    if _any_value(requested):
        out["requested_output_tokens"] = pct_stats(requested)
    return out


def _send_lag(req: RequestTable) -> dict[str, Any] | None:
    """Send lag (local/kube: arrival - open-loop schedule time) when the records carry a schedule."""
    scheduled = req.column("scheduled_s")
    if not _any_value(scheduled):
        return None
    lag_ms = (req.column("arrival_s") - scheduled) * 1000.0
    return {**pct_stats(lag_ms), "max": float(np.nanmax(lag_ms))}


def _generation(meta: dict[str, Any]) -> dict[str, Any]:
    """What the workload generator reported: requests clipped to max_model_len, trace replay counts."""
    gen = meta.get("workload_generation")
    if not gen:
        return {}
    out: dict[str, Any] = {"clipped_requests": int(gen.get("clipped", 0))}
    traces = [t for t in gen.get("traces") or [] if t]
    if traces:
        out["traces"] = traces
    return out


def _timeseries_stats(ts: TimeseriesColumns) -> dict[str, Any]:
    if not len(ts["t_s"]):
        return {"kv_usage_mean": None, "kv_usage_max": None, "queue_mean": None, "queue_max": None}
    kv_mean, kv_max = as_float(ts["kv_usage_mean"]), as_float(ts["kv_usage_max"])
    queue = _queue_per_sample(ts)
    return {  # nanmean: pandas' mean of the values that are not null (their sum over their count)
        "kv_usage_mean": float(np.nanmean(kv_mean)) if _any_value(kv_mean) else None,
        "kv_usage_max": float(np.nanmax(kv_max)) if _any_value(kv_max) else None,
        "queue_mean": float(queue.mean()),
        "queue_max": int(queue.max()),
    }


def _queue_per_sample(ts: TimeseriesColumns) -> pd.Series | np.ndarray:
    """Queue per sample time = waiting in engines (all variants) + held at the gateway (one value per model:
    its first row's). Whole numbers, so any summing order gives the same mean; numpy and one pass over the
    rows when the columns are numbers (pandas' group-bys cost 1 ms of a paper run's summary)."""
    cols = (ts["t_s"], ts["waiting"], ts["router_queue"])
    if not all(c.dtype.kind in "iuf" for c in cols):
        df = pd.DataFrame({c: ts[c] for c in ("t_s", "model", "waiting", "router_queue")})
        waiting = df.groupby("t_s")["waiting"].sum()
        gateway = df.groupby(["t_s", "model"])["router_queue"].first().groupby("t_s").sum()
        return waiting.add(gateway, fill_value=0)
    t = as_float(cols[0])
    keep = ~np.isnan(t)  # group-bys drop null keys
    times, at = np.unique(t[keep], return_inverse=True)
    queue = np.bincount(at, weights=np.nan_to_num(as_float(cols[1])[keep]), minlength=len(times))
    first: set[tuple[int, Any]] = set()
    for i, model, held in zip(at.tolist(), ts["model"][keep].tolist(), cols[2][keep].tolist(), strict=True):
        if model is not None and model == model and held == held and (i, model) not in first:  # first non-null
            first.add((i, model))
            queue[i] += held
    return queue


def _recovery(req: RequestTable, slo: dict[str, Any], duration: float, meta: dict[str, Any]) -> dict[str, Any]:
    """``scaling.slo_recovery`` at the scenario's attainment target (reports/recovery.py)."""
    target = meta.get("attainment_target")
    good = req.ok_mask() & req.mask(["ttft_ms", "itl_ms"], lambda ttft, itl: meets_slo(ttft, itl, slo))
    arrival = np.asarray(req.column("arrival_s"), dtype=float)
    return slo_recovery(arrival, good, duration, float(target) if isinstance(target, int | float) else DEFAULT_TARGET)


def summarize(  # size: the summary.json schema as one literal; its keys in docs/metrics.md's order
    req: pd.DataFrame | RequestTable | None, ts: Timeseries, decisions: list[dict[str, Any]],
    meta: dict[str, Any],
) -> dict[str, Any]:
    """summary.json for one run (keys documented in docs/metrics.md).

    ``req``: the request records as a DataFrame or a ``RequestTable`` (RunWriter passes its
    requests.parquet, read a few columns at a time, so a day-long run is summarized in bounded
    memory); read it through ``RequestTable.column`` only. ``ts``: the timeseries as a DataFrame, an
    Arrow table or its columns (``usage.timeseries_columns``: converted once, read as numpy)."""
    requests = as_table(req)
    ts = timeseries_columns(ts)
    decisions = list(decisions or [])
    duration = float(meta.get("duration_s") or 0.0)
    slo = dict(meta.get("slo") or {"ttft_ms": float("inf"), "itl_ms": float("inf")})

    total = requests.rows
    statuses = requests.status_counts()
    ttft, itl = requests.column("ttft_ms", ok_only=True), requests.column("itl_ms", ok_only=True)
    n_ok = len(ttft)
    good = int(meets_slo(ttft, itl, slo).sum())
    failures = {c: statuses.get(c, 0) for c in FAILURE_CAUSES}
    n_failed = sum(failures.values())
    ttft_ok = int((ttft <= float(slo["ttft_ms"])).sum())
    itl_ok = int(_itl_ok(itl, slo).sum())
    ttft_stats, itl_stats = pct_stats(ttft), pct_stats(itl)
    del ttft, itl  # two columns of every request served: not held while the rest is read

    usage = integrate(ts, meta)
    vus = list(usage.variants.values())
    counts = _decision_counts(decisions)

    summary: dict[str, Any] = {
        # -- the core keys ----------------------------------------------------------------------
        "scenario": meta.get("scenario"),
        "autoscaler": meta.get("autoscaler"),
        "cluster": meta.get("cluster"),
        "seed": meta.get("seed"),
        "duration_s": duration,
        "requests_total": total,
        "requests_ok": n_ok,
        "failures": failures,
        "throughput_rps": _per_s(n_ok, duration),
        "goodput_rps": _per_s(good, duration),
        "slo": slo,
        "ttft_ms": ttft_stats,
        "itl_ms": itl_stats,
        "e2e_ms": pct_stats(requests.column("e2e_ms", ok_only=True)),
        "replicas": {
            "mean": usage.ready_mean,
            "max": usage.ready_max,
            "by_variant": {v.name: {"mean": v.ready_mean, "max": v.ready_max} for v in vus},
        },
        "gpu_hours": float(sum(v.gpu_hours for v in vus)),
        "cost": float(sum(v.cost for v in vus)),
        "energy_kwh": sum_or_none([v.energy_kwh for v in vus]),
        "scaling_actions": counts["scale_up"] + counts["scale_down"],
        # -- extras (docs/metrics.md) ----------------------------------------------------------
        "requests_failed": n_failed,
        "failure_ratio": _ratio(n_failed, total),
        "slo_attainment": {
            "both": _ratio(good, total),
            "ttft": _ratio(ttft_ok, total),
            "itl": _ratio(itl_ok, total),
        },
        "output_tokens_per_s": _per_s(
            float(np.nansum(requests.column("output_tokens", ok_only=True))) if n_ok else 0.0,
            duration),
        "billed_replicas": {"mean": usage.billed_mean, "max": usage.billed_max},
        "replica_hours": float(sum(v.replica_hours for v in vus)),
        "cost_usd": sum_or_none([v.cost_usd for v in vus]) if vus else None,
        "energy": {
            "nameplate_kwh": sum_or_none([v.energy_kwh for v in vus]),
            "busy_kwh": sum_or_none([v.energy_busy_kwh for v in vus]),
            "idle_kwh": sum_or_none([v.energy_idle_kwh for v in vus]),
            "estimated_kwh": sum_or_none(
                [None if v.energy_busy_kwh is None else v.energy_busy_kwh + (v.energy_idle_kwh or 0.0) for v in vus]
            ),
            "idle_power_fraction": IDLE_POWER_FRACTION,
            "util_known_share": _ratio(
                sum(v.util_known_gpu_s for v in vus), sum(v.ready_replica_s * v.gpus_per_replica for v in vus)
            ),
        },
        "variants": {
            v.name: {
                "replica_hours": v.replica_hours,
                "gpu_hours": v.gpu_hours,
                "cost": v.cost,
                "cost_usd": v.cost_usd,
                "energy_kwh": v.energy_kwh,
                "billed_replicas": {"mean": v.billed_mean, "max": v.billed_max},
            }
            for v in vus
        },
        "decisions": counts,
        "alerts": counts["alerts_raised"],
        "workload": {**_workload(requests, duration), **_generation(meta)},
        "timeseries": {"covered_s": usage.covered_s, "window_s": meta_window(meta), **_timeseries_stats(ts)},
        "events": list(meta.get("events") or []),
        "scaling": {**scaling_kpis(requests, ts, decisions), "vs_oracle": vs_oracle(ts, meta),
                    "slo_recovery": _recovery(requests, slo, duration, meta)},
    }
    summary["efficiency"] = efficiency_kpis(requests, summary["cost"], summary["cost_usd"], summary["energy_kwh"])
    summary["signals"], summary["signals_missing"] = signal_health(decisions)
    if meta.get("node_pools"):  # cluster.node_pools: the nodes billed, empty ones included
        summary["node_pools"] = meta["node_pools"]
    if (lag := _send_lag(requests)) is not None:
        summary["send_lag_ms"] = lag
    return json_clean(summary)
