"""Under- and over-provisioned GPU-seconds against the oracle's schedule: ``scaling.vs_oracle``.

**The oracle's schedule** is the capacity plan the ``oracle`` autoscaler computes from the run's
arrival schedule, by its own code (``controllers.oracle.Oracle.capacity_plan``, default settings):
per aligned window of ``window_s`` (30 s) and per variant, the replicas that window's arrivals need
*ready* — the allocation the oracle hands out for it, cheapest capacity first, clamped to the
variant's bounds. It is computed when the run starts (``harness.control.plane``, every backend)
from the same views and forecast the oracle would decide on, and handed here in
``meta["oracle_plan"]``; the oracle's own decisions run ahead of it by the cold start.

Per sample ``t_i`` (the integration rule of ``reports.usage``: it stands for ``w_i`` seconds before
it) and per model, in GPUs (``gpus_per_replica`` x replicas, summed over the model's variants, so a
different mix of variants that holds as many GPUs is neither under nor over), with ``need`` the
plan's GPUs of the window holding ``t_i - epsilon`` (past the plan: every variant at its
``min_replicas``):

* ``under_provisioned_gpu_s`` = sum_i w_i sum_model max(0, need - ready GPUs)
* ``over_provisioned_gpu_s`` = sum_i w_i sum_model max(0, billed GPUs - need)
* ``oracle_gpu_s`` = sum_i w_i sum_model need

Ready GPUs serve; billed GPUs (ready + starting + terminating) are paid for. Limit: a GPU of one
variant counts as a GPU of any other variant of the model, whatever its speed.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from scalearena.reports.usage import Timeseries, as_float, meta_window, sample_weights, timeseries_columns


def _need(plan: dict[str, Any], variant: str, windows: np.ndarray) -> np.ndarray:
    """Replicas the plan asks of ``variant`` in each of ``windows`` (past its end: the floor)."""
    sched = np.asarray(plan["replicas"].get(variant) or [], dtype=float)
    fill = float((plan.get("floor") or {}).get(variant, 0))
    if sched.size == 0:
        return np.full(windows.size, fill)
    return np.where(windows < sched.size, sched[np.minimum(windows, sched.size - 1)], fill)


def vs_oracle(ts: Timeseries, meta: dict[str, Any]) -> dict[str, Any]:
    """summary.json ``scaling.vs_oracle`` (module docstring); nulls without a plan or a timeseries."""
    plan = meta.get("oracle_plan")
    window = float(plan["window_s"]) if isinstance(plan, dict) and plan.get("window_s") else None
    out: dict[str, Any] = {"under_provisioned_gpu_s": None, "over_provisioned_gpu_s": None, "oracle_gpu_s": None,
                           "window_s": window}
    ts = timeseries_columns(ts)
    if not isinstance(plan, dict) or not plan.get("replicas") or window is None or not len(ts["t_s"]):
        return out
    info = {str(v["name"]): v for v in meta.get("variants") or [] if isinstance(v, dict) and "name" in v}
    gpus = {name: int(v.get("gpus_per_replica") or 1) for name, v in info.items()}
    times, at = np.unique(as_float(ts["t_s"]), return_inverse=True)
    w = sample_weights(times, float(meta.get("sample_interval_s") or 0.0), meta_window(meta))
    windows = np.floor(np.maximum(times - 1e-9, 0.0) / window).astype(int)
    models, variants = np.asarray(ts["model"], dtype=str), np.asarray(ts["variant"], dtype=str)
    k = np.array([gpus.get(v, 1) for v in variants], dtype=float)
    ready_g = k * as_float(ts["ready_replicas"])
    billed_g = k * (as_float(ts["ready_replicas"]) + as_float(ts["pending_replicas"])
                    + as_float(ts["terminating_replicas"]))
    model_of = {**dict(zip(variants, models, strict=True)),
                **{n: str(v.get("model")) for n, v in info.items() if v.get("model")}}
    under = over = need_all = 0.0
    for model in sorted(set(models)):
        rows = models == model
        ready = np.bincount(at[rows], weights=ready_g[rows], minlength=times.size)
        billed = np.bincount(at[rows], weights=billed_g[rows], minlength=times.size)
        need = sum((gpus.get(v, 1) * _need(plan, v, windows) for v in sorted(plan["replicas"])
                    if model_of.get(v) == model), np.zeros(times.size))
        under += float((np.maximum(0.0, need - ready) * w).sum())
        over += float((np.maximum(0.0, billed - need) * w).sum())
        need_all += float((need * w).sum())
    out.update(under_provisioned_gpu_s=under, over_provisioned_gpu_s=over, oracle_gpu_s=need_all)
    return out
