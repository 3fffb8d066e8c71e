"""The "perfect system" GPU count of a trace at its SLO (llm-d/llm-d-autoscaling issue #1499): no simulation.

#1499 asks, for a trace and TTFT / TPOT targets, for the fewest GPUs an ideal autoscaler could get away
with: scaling is instantaneous and matches supply to demand exactly, no lag, no headroom, no
fragmentation; per time step ``replicas(t) = ceil(lambda(t) / mu_slo)`` with ``mu_slo`` the largest
request rate one replica sustains within the SLO. Here a time step is an aligned window of
``window_s`` (30 s, the oracle's) of the arrival window (the last one shorter when the duration is no
multiple); lambda is the window's arrivals over its width; mu_slo comes from the
same swept replica profile and arithmetic as the ``planner`` autoscaler
(controllers/planner_capacity.py ``batch_capacity``: the largest batch that keeps the profiled TTFT
and ITL within the scenario's SLO, bounded by max_num_seqs, the KV cache and the gateway's KV
admission threshold, at the window's mean prompt and output length; Little's law for the rate). The
demand is handed to the variants cheapest per request/s first, each up to its max (``hand_out``),
and never below a variant's ``min_replicas`` (no deployment runs fewer). A window whose demand the
variants cannot serve even at their max is counted (``windows_over_max``) and gets the max.

It is a steady-state, mean-value number: it ignores queueing randomness inside a window, cold starts
(they are what an autoscaler pays on top) and the tail of request lengths, so a run at that cost
misses the SLO on part of its requests; the simulated oracle frontier (harness/sizing/frontier.py) is the
bound regret is measured against, this is the reference #1499 asks for next to it.
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from scalearena.controllers.planner_capacity import batch_capacity, hand_out
from scalearena.harness.control.view import VariantInfo, scenario_variants

WINDOW_S = 30.0


def _windows(requests: Iterable[Any], window_s: float) -> dict[str, dict[int, list[int]]]:
    """model -> window index -> [arrivals, prompt tokens, output tokens]."""
    out: dict[str, dict[int, list[int]]] = {}
    for r in requests:
        acc = out.setdefault(r.model, {}).setdefault(math.floor(r.arrival_s / window_s), [0, 0, 0])
        acc[0] += 1
        acc[1] += r.input_tokens
        acc[2] += r.output_tokens
    return out


def widths(duration_s: float, window_s: float = WINDOW_S) -> list[float]:
    """The aligned windows over the arrival window [0, duration_s): all ``window_s`` but a shorter last one."""
    n = max(1, math.ceil(duration_s / window_s - 1e-9))
    return [min(window_s, duration_s - b * window_s) for b in range(n)]


def plan(variants: list[VariantInfo], requests: Iterable[Any], ttft_ms: float, itl_ms: float, duration_s: float,
         window_s: float = WINDOW_S) -> tuple[dict[str, list[int]], int]:
    """Replicas per variant and window of [0, ``duration_s``), and how many windows the variants at their
    max could not serve within the SLO. A window's arrival rate is its arrivals over its own width."""
    width = widths(duration_s, window_s)
    n_windows = len(width)
    by_model: dict[str, list[VariantInfo]] = {}
    for v in variants:
        by_model.setdefault(v.model, []).append(v)
    reps = {v.name: [v.min_replicas] * n_windows for v in variants}
    over = 0
    for model, windows in _windows(requests, window_s).items():
        vs = [v for v in by_model.get(model, []) if v.profile is not None]
        for b, (n, ins, outs) in windows.items():
            if not vs or not 0 <= b < n_windows:
                continue
            isl, osl = ins / n, outs / n
            caps = {v.name: batch_capacity(v.profile, isl, osl, ttft_ms / 1000, itl_ms / 1000,  # type: ignore[arg-type]
                                             admission=v.admission) for v in vs}
            want, notes = hand_out(n / width[b], vs, caps, 0, None)  # type: ignore[arg-type]
            over += any("beyond" in x for x in notes)
            for v in vs:
                reps[v.name][b] = max(v.min_replicas, min(v.max_replicas, want[v.name]))
    return reps, over


def perfect_system(scenario: Any, requests: Iterable[Any] | None = None,
                   window_s: float = WINDOW_S) -> dict[str, Any] | None:
    """The #1499 numbers of a scenario and its seed: GPU-hours, cost (variantCost-hours), cost_usd (null when
    a variant's GPU has no price), peak and mean GPUs over the run's arrival window, windows over the max.
    None for a prefill/decode-disaggregated cluster (a replica's capacity is then two pools'; not modelled)."""
    from scalearena.workloads.generate import iter_requests

    variants = list(scenario_variants(scenario))
    if any(v.role != "both" for v in variants):
        return None
    width = widths(scenario.duration_s, window_s)
    n = len(width)
    reps, over = plan(variants, iter_requests(scenario) if requests is None else requests,
                      scenario.slo.ttft_ms, scenario.slo.itl_ms, scenario.duration_s, window_s)
    gpus = [sum(v.gpus_per_replica * reps[v.name][b] for v in variants) for b in range(n)]
    hours = {v.name: sum(r * w for r, w in zip(reps[v.name], width, strict=True)) / 3600 for v in variants}
    prices = [scenario.cluster.gpu(v.gpu).price_per_hour for v in variants]
    usd = None if any(p is None for p in prices) else sum(
        p * v.gpus_per_replica * hours[v.name] for p, v in zip(prices, variants, strict=True))
    return {"gpu_hours": sum(v.gpus_per_replica * hours[v.name] for v in variants),
            "cost": sum(v.cost * hours[v.name] for v in variants), "cost_usd": usd,
            "peak_gpus": max(gpus), "mean_gpus": sum(g * w for g, w in zip(gpus, width, strict=True)) / sum(width),
            "windows": n, "window_s": window_s, "windows_over_max": over, "replicas": reps}
