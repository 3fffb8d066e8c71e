"""Calibrate the roofline latency model against measured H200 step times.

Reads ``benchmarks/data/h200/h200_profile.csv`` (shipped copy of the measured profiles) (prefill of one sequence by prompt length,
decode by batch size and context; see that folder's README) and grid-searches the
three free parameters of ``harness.engine.latency``: compute efficiency, memory
efficiency and the fixed overhead per layer per step. The objective is the mean
absolute relative error over every measured point of both models. Prints the
best parameters and the per-point error table (Markdown) for docs/simulator.md.

Usage: ``python benchmarks/calibrate_roofline.py [--profiles DIR]``.
"""
from __future__ import annotations

import argparse
import csv
from pathlib import Path

import numpy as np

from scalearena.harness.engine.catalog import gpu_spec, model_shape
from scalearena.harness.engine.latency import RooflineModel, RooflineParams

DEFAULT_DIR = Path(__file__).resolve().parent / "data" / "h200"  # a copy of shared/data/profiles


def load(profiles: Path) -> list[dict]:
    rows = []
    with open(profiles / "h200_profile.csv") as f:
        for r in csv.DictReader(f):
            if r["mode"] != "graph" or not r["ms"]:
                continue
            rows.append({"model": r["model"], "phase": r["phase"], "batch": int(r["batch"]),
                         "n": int(r["ctx_or_prompt_len"]), "ms": float(r["ms"])})
    return rows


def predict(rows: list[dict], ce: float, me: float, layer_ovh: float) -> np.ndarray:
    out = []
    for r in rows:
        shape = model_shape(r["model"])
        m = RooflineModel(gpu_spec("H200"), shape, 1, RooflineParams(ce, me, layer_ovh * shape.layers))
        if r["phase"] == "prefill":
            n = r["n"]
            out.append(m.step_s(n, n * (n + 1) / 2.0, 0, 0.0))
        else:
            out.append(m.step_s(0, 0.0, r["batch"], float(r["batch"] * r["n"])))
    return np.array(out) * 1000.0


def parts(rows: list[dict]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per point: FLOPs, bytes and layers (the same terms as RooflineModel.step_s)."""
    fl, by, ly = [], [], []
    for r in rows:
        m = model_shape(r["model"])
        if r["phase"] == "prefill":
            n = r["n"]
            tokens, pairs, ctx = n, n * (n + 1) / 2.0, 0.0
        else:
            tokens, pairs, ctx = r["batch"], 0.0, float(r["batch"] * r["n"])
        prefill = tokens if r["phase"] == "prefill" else 0
        fl.append(2.0 * m.matmul_params * tokens + m.attn_flops_per_token_ctx * (pairs + ctx))
        by.append(m.weight_bytes + m.kv_bytes_per_token * (ctx + prefill))
        ly.append(m.layers)
    return np.array(fl), np.array(by), np.array(ly)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--profiles", type=Path, default=DEFAULT_DIR)
    args = ap.parse_args()
    rows = load(args.profiles)
    meas = np.array([r["ms"] for r in rows])
    fl, by, ly = parts(rows)
    g = gpu_spec("H200")
    ovhs = np.arange(0.0, 150e-6, 1e-6)
    best = None
    for ce in np.arange(0.30, 1.001, 0.01):
        for me in np.arange(0.40, 1.001, 0.01):
            core = np.maximum(fl / (g.peak_bf16_flops * ce), by / (g.hbm_bytes_per_s * me))  # s
            pred = (core[None, :] + ovhs[:, None] * ly[None, :]) * 1000.0
            errs = np.abs(pred / meas[None, :] - 1.0).mean(axis=1)
            i = int(errs.argmin())
            if best is None or errs[i] < best[0]:
                best = (float(errs[i]), float(ce), float(me), float(ovhs[i]))
    assert best is not None
    err, ce, me, ovh = best
    pred = predict(rows, ce, me, ovh)
    print(f"best: compute_efficiency={ce:.2f} memory_efficiency={me:.2f} layer_overhead_us={ovh * 1e6:.0f} "
          f"mean |error| {err * 100:.1f} %  (max {np.abs(pred / meas - 1).max() * 100:.1f} %)")
    print("\n| model | phase | batch | ctx / prompt | measured ms | model ms | error |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for r, p in zip(rows, pred, strict=True):
        print(f"| {r['model']} | {r['phase']} | {r['batch']} | {r['n']} | {r['ms']:.2f} | {p:.2f} | "
              f"{(p / r['ms'] - 1) * 100:+.1f} % |")


if __name__ == "__main__":
    main()
