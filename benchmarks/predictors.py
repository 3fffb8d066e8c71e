"""What the load predictors cost per decision and how well they forecast (printed, never asserted).

For each predictor of controllers/predictors.py (constant, kalman, arima, seasonal_naive; prophet when
its optional package is installed), a walk-forward over a series: at each point the predictor
forecasts it from the points before (one step ahead, what the planner does every adjustment
interval), then learns it. Printed per predictor and series:

- per decision: the mean time of ``add`` + ``predict`` over the decisions that did not refit, ms;
- fit: the mean time of the decisions that (re)fit the model (ARIMA, Prophet: every ``refit_every``
  new points), ms, and how many there were;
- forecast error: MAPE over the points with a non-zero observation and WAPE (sum |error| / sum of
  observations, defined with zero intervals), over the points where the chosen predictor (not its
  constant fallback) answered.

Series:
- ``azure``: the shipped Azure code trace (workloads/data/azure_code_2023_sample.csv, 8,819 requests
  in an hour) as requests per 60 s interval (workloads/traces/intervals.py: 57 points, bursty, zero
  intervals included);
- ``diurnal``: a day compressed into an hour, three times: 30 s intervals (360 points), mean rate
  10 + 6 sin(2 pi t / 3600) req/s, Poisson counts (numpy seed 1); seasonal_naive with a 3,600 s season.

Usage: ``python benchmarks/predictors.py [--quick]``; ``--quick`` (what ``make perf`` runs) times the
per-decision cost of constant, kalman and arima on the Azure series only.
"""
from __future__ import annotations

import argparse
import importlib.util
import math
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from scalearena.controllers.predictors import LoadPredictor, PredictorConfig
from scalearena.workloads.traces.intervals import interval_history

ROOT = Path(__file__).resolve().parents[1]
AZURE = ROOT / "workloads" / "data" / "azure_code_2023_sample.csv"


@dataclass
class Result:
    decide_ms: float  # mean add + predict without a refit
    fit_ms: float | None  # mean add + predict of the decisions that refit
    fits: int
    mape: float | None
    wape: float | None
    answered: int  # points forecast by the chosen predictor itself


def azure_series() -> tuple[list[float], float]:
    return [float(h.requests) for h in interval_history(str(AZURE), "azure", 60.0)], 60.0


def diurnal_series() -> tuple[list[float], float]:
    rng = np.random.default_rng(1)
    step, n = 30.0, 360
    rates = [10 + 6 * math.sin(2 * math.pi * (k + 0.5) * step / 3600) for k in range(n)]
    return [float(rng.poisson(r * step)) for r in rates], step


def walk(config: PredictorConfig, series: list[float], step_s: float) -> Result:
    p = LoadPredictor(config, step_s)
    plain: list[float] = []
    fitted: list[float] = []
    errs: list[tuple[float, float]] = []
    for y in series:
        fit_at = p._fit_at
        t0 = time.perf_counter()
        f = p.predict() if p.values else None
        p.add(y)
        dt = (time.perf_counter() - t0) * 1000
        (fitted if p._fit_at != fit_at else plain).append(dt)
        if f is not None and f.fallback is None:
            errs.append((f.value, y))
    nz = [(f, y) for f, y in errs if y > 0]
    total = sum(y for _, y in errs)
    return Result(
        decide_ms=sum(plain) / len(plain) if plain else math.nan,
        fit_ms=sum(fitted) / len(fitted) if fitted else None, fits=len(fitted),
        mape=sum(abs(f - y) / y for f, y in nz) / len(nz) if nz else None,
        wape=sum(abs(f - y) for f, y in errs) / total if total else None, answered=len(errs))


def configs(step_s: float, season_s: float | None, quick: bool) -> dict[str, PredictorConfig]:
    out = {"constant": PredictorConfig(kind="constant"), "kalman": PredictorConfig(kind="kalman"),
           "arima": PredictorConfig(kind="arima")}
    if quick:
        return out
    if season_s is not None:
        out["seasonal_naive"] = PredictorConfig(kind="seasonal_naive", season_s=season_s)
    if importlib.util.find_spec("prophet") is not None:
        out["prophet"] = PredictorConfig(kind="prophet")
    return out


def _fmt(v: float | None, spec: str) -> str:
    return "-" if v is None or v != v else format(v, spec)


def report(name: str, series: list[float], step_s: float, season_s: float | None, quick: bool) -> None:
    print(f"{name}: {len(series)} points of {step_s:g} s, mean {sum(series) / len(series):.1f} requests")
    print(f"  {'predictor':<15} {'decision ms':>11} {'fit ms':>8} {'fits':>5} {'MAPE':>6} {'WAPE':>6} {'answered':>8}")
    for kind, cfg in configs(step_s, season_s, quick).items():
        r = walk(cfg, series, step_s)
        print(f"  {kind:<15} {r.decide_ms:>11.3f} {_fmt(r.fit_ms, '8.1f'):>8} {r.fits:>5} "
              f"{_fmt(r.mape, '6.3f'):>6} {_fmt(r.wape, '6.3f'):>6} {r.answered:>8}")
    if not quick and importlib.util.find_spec("prophet") is None:
        print("  prophet: not installed (pip install 'scalearena[prophet]')")


def warm_up(quick: bool) -> float:
    """One throwaway fit of each library model, so that their one-time start-up (numba compiling
    statsforecast's kernels, loading CmdStan) is not counted as a decision; returns its seconds."""
    t0 = time.perf_counter()
    for cfg in configs(60.0, 600.0, quick).values():
        p = LoadPredictor(cfg, 60.0)
        for y in (5.0, 7.0, 6.0, 9.0, 8.0, 10.0, 9.0, 12.0, 11.0, 13.0, 12.0, 14.0):
            p.add(y)
        p.predict()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="constant, kalman, arima on the Azure series only")
    args = ap.parse_args()
    print(f"predictors: one-time start-up of the libraries (numba compile, imports) {warm_up(args.quick):.1f} s")
    series, step = azure_series()
    report("azure code trace, requests per 60 s", series, step, None, args.quick)
    if not args.quick:
        series, step = diurnal_series()
        report("diurnal (a day in an hour, x3), requests per 30 s", series, step, 3600.0, args.quick)


if __name__ == "__main__":
    main()
