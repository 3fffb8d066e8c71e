"""Synthetic result folders for developing and testing the reports.

NOT a simulator and not benchmark data: a few lines of arithmetic that give
plausible-looking shapes (staircase load, replicas that follow it with a lag,
latency that grows with load) so the report, the comparison and their tests
can run without the serving model. Everything is written through the real
``RunWriter``, so summaries come from ``reports.metrics.summarize``. Output
names say "demo" so it is never mistaken for a measurement.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from scalearena.contracts.records import RequestRecord, TimeseriesRecord
from scalearena.controllers.base import Decision, Reason
from scalearena.reports.results import RunWriter, run_dir

VARIANTS: list[dict[str, Any]] = [
    {"name": "va-a100", "model": "llama3-70b", "gpu": "A100-80GB", "gpus_per_replica": 1, "cost": 1.0,
     "tdp_w": 400.0, "price_per_hour": 1.8},
    {"name": "va-h100", "model": "llama3-70b", "gpu": "H100-SXM", "gpus_per_replica": 1, "cost": 2.5,
     "tdp_w": 700.0, "price_per_hour": 3.0},
]
SLO = {"ttft_ms": 2000.0, "itl_ms": 100.0}
PER_REPLICA_RPS = 1.2  # what one demo replica absorbs


def _demo_run(out: Path, scenario: str, autoscaler: str, rates: list[float], lag_s: float, seed: int,
              sweep: str | None = None, duration_s: float = 300.0, interval_s: float = 5.0) -> None:
    rng = np.random.default_rng(seed)
    meta = {"scenario": scenario, "autoscaler": autoscaler, "cluster": "demo", "seed": seed,
            "duration_s": duration_s, "sample_interval_s": interval_s, "slo": SLO, "variants": VARIANTS}
    w = RunWriter(run_dir(out, scenario, autoscaler, sweep), meta)
    step = duration_s / len(rates)

    def rate(t: float) -> float:
        return rates[min(int(max(t, 0.0) // step), len(rates) - 1)]

    replicas = {"va-a100": 1, "va-h100": 0}
    arrivals = np.cumsum(rng.exponential(1.0 / max(rates), int(duration_s * max(rates) * 1.2)))
    arrivals = arrivals[arrivals < duration_s]
    arrivals = arrivals[rng.random(arrivals.size) < np.array([rate(t) for t in arrivals]) / max(rates)]
    for t in np.arange(interval_s, duration_s + interval_s / 2, interval_s):
        want = int(np.ceil(rate(max(t - lag_s, 0.0)) / PER_REPLICA_RPS))
        a100 = min(want, 4)
        for name, target in (("va-a100", a100), ("va-h100", max(want - a100, 0))):
            if target != replicas[name]:
                d = Decision(name, replicas[name], target,
                             (Reason("demo", f"load {rate(t - lag_s):.1f} req/s needs {want} replicas"),))
                w.add_decision(float(t), autoscaler, d)
                replicas[name] = target
            elif int(t) % 30 == 0:
                w.add_decision(float(t), autoscaler, Decision(name, target, target, (Reason("demo", "steady"),)))
        cap = sum(replicas.values()) * PER_REPLICA_RPS
        util = min(rate(t) / max(cap, 1e-9), 1.0)
        for v in VARIANTS:
            n = replicas[v["name"]]
            w.add_timeseries(TimeseriesRecord(
                t_s=float(t), variant=v["name"], model=v["model"], spec_replicas=n, ready_replicas=n,
                pending_replicas=int(rng.random() < 0.1), terminating_replicas=0,
                kv_usage_mean=0.8 * util if n else None, kv_usage_max=min(util * 1.1, 1.0) if n else None,
                waiting=int(max(rate(t) - cap, 0) * 4), running=int(util * 3 * n), gpu_util_mean=util if n else None,
                offered_rps=rate(t), completed_rps=min(rate(t), cap), router_queue=0))
    for i, t in enumerate(arrivals):
        load = rate(t) / max(PER_REPLICA_RPS * np.ceil(rate(max(t - lag_s, 0)) / PER_REPLICA_RPS), 1e-9)
        rejected = rng.random() < max(load - 1.0, 0.0)
        ttft = float(rng.lognormal(np.log(300 + 900 * load), 0.4))
        itl = float(rng.lognormal(np.log(25 + 30 * load), 0.2))
        out_tok = int(rng.integers(10, 400))
        status = "rejected" if rejected else ("killed" if rng.random() < 0.01 else "ok")
        w.add_request(RequestRecord(
            request_id=i, model="llama3-70b", arrival_s=float(t),
            first_token_s=None if rejected else float(t + ttft / 1000), end_s=float(t + ttft / 1000 + out_tok * itl / 1000),
            input_tokens=int(rng.integers(10, 2000)), output_tokens=0 if rejected else out_tok, status=status,
            http_status=429 if rejected else (200 if status == "ok" else 0),
            variant=None if rejected else "va-a100", pod=None, ttft_ms=None if rejected else ttft,
            itl_ms=None if rejected else itl, e2e_ms=float(ttft + out_tok * itl)))
    w.finish()


DEMO_AUTOSCALERS = (("wva", 10.0), ("hpa", 45.0))  # name, lag of its replicas behind the load (s)


def write_demo_results(out: str | Path, seed: int = 0, lag_scale: float = 1.0,
                       autoscalers: tuple[tuple[str, float], ...] = DEMO_AUTOSCALERS,
                       seeds: tuple[int, ...] | None = None) -> Path:
    """A small demo suite: one staircase scenario and one rate sweep, two autoscalers each (or ``autoscalers``);
    with ``seeds`` every run is repeated in ``seed-<n>/`` folders, as a suite with ``seeds:`` writes them."""
    out = Path(out)
    for s in seeds or (None,):
        base = seed + (0 if s is None else 1000 * s)
        folder = "" if s is None else f"seed-{s}"
        for k, (name, lag) in enumerate(autoscalers):
            _demo_run(out, "demo-staircase", name, [2.0, 5.0, 10.0], lag * lag_scale, base + k, sweep=folder or None)
            for r in (2, 5):
                _demo_run(out, "demo-rates", name, [float(r)], lag * lag_scale, base + 10 * r + k,
                          sweep=f"rate-{r}/{folder}".rstrip("/"))
    (out / "suite.json").write_text(json.dumps({
        "suite": "demo", "seed": seed, "git_sha": "demo", "versions": {"scalearena": "demo"},
        "note": "synthetic demo results (reports.demo), not measurements"}, indent=2))
    return out
