"""Load steps in the arrival schedule and the time an autoscaler takes to bring SLO attainment back.

The ``scaling.slo_recovery`` key of summary.json (docs/metrics.md, "Recovery after a load step").
Arrivals are counted per aligned window of ``WINDOW_S`` (30 s, the oracle's demand bucket). A
window starts a **load step** when its count ``n_b`` exceeds the previous window's ``n_{b-1}`` by
more than 25 % *and* by more than three standard deviations of Poisson counting noise,
``3 * sqrt(n_b + n_{b-1})`` (the variance of a difference of two Poisson counts): a steady 5 req/s
(150 per window) therefore needs +52 requests to count, a 2 -> 5 req/s staircase step (+90) counts.
Consecutive step windows (a ramp) are one step, from the first window's start to the last's rate.

**Recovery**: from the step's start ``t0``, windows of ``WINDOW_S`` starting every ``RESOLUTION_S``
(10 s) are judged by the share of the requests arriving in them that met the SLO (failures count as
misses, as in ``slo_attainment``). The time to recover is the offset of the first window whose share
reaches the target: 0 when the step never pushed attainment below it; null ("not recovered") when
no window that ends before the next step (or the end of the arrivals) reaches it. Windows without
arrivals are skipped.

Written by hand: the step rule and the forward windows are this project's definition; a change-point
library would answer a different question (where the mean shifts) with tuning of its own.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

WINDOW_S = 30.0  # the oracle's demand bucket (controllers/oracle.py OracleConfig.window_s default)
RESOLUTION_S = 10.0  # recovery windows start every 10 s
MIN_RISE = 0.25  # a step raises the window count by more than 25 % ...
NOISE_SIGMAS = 3.0  # ... and by more than 3 standard deviations of Poisson noise


def load_steps(arrival_s: np.ndarray, duration_s: float, window_s: float = WINDOW_S) -> list[dict[str, float]]:
    """Steps up in the arrival rate: ``t_s`` (start of the first rising window), ``rate_before_rps``
    (the window before it), ``rate_after_rps`` (the last rising window of the run)."""
    n_windows = int(math.floor(duration_s / window_s + 1e-9))  # whole windows only: a partial one undercounts
    if n_windows < 2:
        return []
    counts = np.bincount(np.floor(arrival_s[arrival_s < n_windows * window_s] / window_s).astype(int),
                         minlength=n_windows)[:n_windows].astype(float)
    rising = [b for b in range(1, n_windows)
              if counts[b] - counts[b - 1] > max(MIN_RISE * counts[b - 1], NOISE_SIGMAS * math.sqrt(counts[b] + counts[b - 1]))]
    steps: list[dict[str, float]] = []
    for b in rising:
        if steps and b == steps[-1]["_last"] + 1:  # the ramp goes on
            steps[-1].update(_last=b, rate_after_rps=round(counts[b] / window_s, 4))
            continue
        steps.append({"t_s": b * window_s, "rate_before_rps": round(counts[b - 1] / window_s, 4),
                      "rate_after_rps": round(counts[b] / window_s, 4), "_last": b})
    for s in steps:
        del s["_last"]
    return steps


def time_to_recover(arrival_s: np.ndarray, good: np.ndarray, t0: float, until_s: float, target: float,
                    window_s: float = WINDOW_S, resolution_s: float = RESOLUTION_S) -> float | None:
    """Seconds from ``t0`` to the first window ``[t0 + k*resolution_s, +window_s)`` ending by ``until_s``
    whose arrivals met the SLO at ``target`` or better (``arrival_s`` sorted, ``good`` aligned)."""
    k = 0
    while t0 + k * resolution_s + window_s <= until_s + 1e-9:
        start = t0 + k * resolution_s
        lo, hi = np.searchsorted(arrival_s, [start, start + window_s], side="left")
        if hi > lo and float(good[lo:hi].mean()) >= target - 1e-12:
            return k * resolution_s
        k += 1
    return None


def slo_recovery(arrival_s: np.ndarray, good: np.ndarray, duration_s: float, target: float) -> dict[str, Any]:
    """summary.json ``scaling.slo_recovery``: every load step with its recovery time, their max and mean."""
    order = np.argsort(arrival_s, kind="stable")
    arr, ok = np.asarray(arrival_s, dtype=float)[order], np.asarray(good, dtype=bool)[order]
    steps = load_steps(arr, duration_s)
    ends = [s["t_s"] for s in steps[1:]] + [math.floor(duration_s / WINDOW_S + 1e-9) * WINDOW_S]
    for s, end in zip(steps, ends, strict=False):  # no step: no end is used
        s["recover_s"] = time_to_recover(arr, ok, s["t_s"], end, target)  # type: ignore[assignment]
    done = [float(s["recover_s"]) for s in steps if s["recover_s"] is not None]
    return {"target": target, "window_s": WINDOW_S, "resolution_s": RESOLUTION_S, "steps": steps,
            "recover_s": {"max": max(done) if done else None, "mean": float(np.mean(done)) if done else None},
            "unrecovered": len(steps) - len(done)}
