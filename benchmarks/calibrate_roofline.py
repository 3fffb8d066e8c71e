"""Fit the roofline step model on every measured H200 step (prefill, decode and mixed).

Reads the shipped profiles (``benchmarks/data/h200``: ``h200_profile.csv`` and
``h200_mixed_profile.csv``, see that folder's README) through
``harness.sim.engine.calibration`` and fits the seven free parameters of
``harness.sim.engine.latency.RooflineModel`` by least squares on the log of
model / measured time (relative errors, so a 2 ms step counts as much as a
200 ms one): matmul and attention efficiencies, memory efficiency, the
crossover sharpness, the KV-read parallelism, the per-token-per-layer cost
and the per-layer step overhead. The matmul efficiency is bounded by the
measured 8192^3 matmul ceiling (h200_ceilings.json), so compute cannot be
faster than the card was seen to be. Only measurements are fitted, never
published end-to-end results.

Prints the fitted parameters, the per-phase error table and the per-point
table (Markdown) for docs/simulator.md.

Usage: ``python benchmarks/calibrate_roofline.py [--profiles DIR]`` (needs scipy: ``.[dev]``).
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from scipy.optimize import least_squares

from scalearena.harness.sim.engine.calibration import load_points, model_ms, phase_errors
from scalearena.harness.sim.engine.catalog import gpu_spec, model_shape
from scalearena.harness.sim.engine.latency import RooflineParams, roofline_defaults

DEFAULT_DIR = Path(__file__).resolve().parent / "data" / "h200"  # a copy of shared/data/profiles
NAMES = ("compute_efficiency", "memory_efficiency", "attention_efficiency", "crossover_sharpness",
         "kv_parallel_units", "token_layer_s", "layer_overhead_s")


def params_for(x: np.ndarray, layers: int) -> RooflineParams:
    ce, me, ae, n, units, tok, ovh = (float(v) for v in x)
    return RooflineParams(ce, me, ovh * layers, ae, n, units, tok)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--profiles", type=Path, default=DEFAULT_DIR)
    args = ap.parse_args()
    points = load_points(args.profiles)
    ceilings = json.loads((args.profiles / "h200_ceilings.json").read_text())
    ce_max = ceilings["matmul_tflops"] * 1e12 / gpu_spec("H200").peak_bf16_flops
    layers = {m: model_shape(m).layers for m in {p.model for p in points}}
    meas = np.array([p.ms for p in points])

    def residuals(x: np.ndarray) -> np.ndarray:
        pred = np.array([model_ms(p, params_for(x, layers[p.model])) for p in points])
        return np.log(pred / meas)

    x0 = np.array([0.5, 0.9, 0.5, 4.0, 100.0, 50e-9, 80e-6])
    lo = np.array([0.05, 0.3, 0.05, 1.0, 1.0, 0.0, 0.0])
    hi = np.array([ce_max, 1.0, 1.0, 30.0, 5000.0, 1e-6, 500e-6])
    fit = least_squares(residuals, x0, bounds=(lo, hi), x_scale=[0.1, 0.1, 0.1, 1.0, 10.0, 1e-8, 1e-5])
    shown = [round(float(v), 2) if i < 4 else float(v) for i, v in enumerate(fit.x)]
    print("fitted: " + ", ".join(f"{k}={v:.3g}" for k, v in zip(NAMES, shown, strict=True)))
    print(f"(matmul efficiency bound {ce_max:.3f}: the measured matmul ceiling; {len(points)} points)")
    for label, params_of in (("fitted", lambda m: params_for(fit.x, layers[m])),
                             ("shipped defaults", lambda m: roofline_defaults(model_shape(m)))):
        print(f"\n{label}:\n\n| phase | points | mean error | max error |\n|---|---:|---:|---:|")
        for ph, (n, mean, mx) in phase_errors(points, params_of).items():
            print(f"| {ph} | {n} | {mean * 100:.1f} % | {mx * 100:.1f} % |")
    print("\n| model | step | batch | ctx / prompt | chunk | measured ms | model ms | error |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for p in points:
        ms = model_ms(p, roofline_defaults(model_shape(p.model)))
        print(f"| {p.model} | {p.kind} | {p.batch} | {p.length} | {p.chunk or ''} | {p.ms:.2f} | {ms:.2f} | "
              f"{(ms / p.ms - 1) * 100:+.1f} % |")


if __name__ == "__main__":
    main()
