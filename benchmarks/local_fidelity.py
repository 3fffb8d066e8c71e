"""Does CLUSTER=local reproduce CLUSTER=sim? One scenario, one autoscaler, both backends.

Runs the scenario on the embedded simulator and on real local processes
(engines, router, Prometheus, Locust) and prints goodput, TTFT p50, mean
replicas and failures side by side with the relative difference (target:
within 10 %). Not a timed test; run:

    .venv/bin/python benchmarks/local_fidelity.py [SCENARIO] [--autoscaler wva] [--time-scale 2]

Differences come from what only the local backend has: HTTP and SSE
overhead in TTFT, process boot added to every cold start, metrics scraped by a
real Prometheus (5 s wall discovery throttle), and wall-clock jitter.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from scalearena.harness.config.scenario import load_scenario
from scalearena.harness.local.backend import LocalBackend
from scalearena.harness.run.meta import variant_meta
from scalearena.harness.sim.backend import SimBackend
from scalearena.reports.results import RunWriter

ROOT = Path(__file__).resolve().parents[1]


def run(backend, sc, cfg, out: Path, cluster: str) -> dict:
    meta = {"scenario": sc.name, "autoscaler": cfg.label, "cluster": cluster, "seed": sc.seed,
            "duration_s": sc.duration_s, "slo": sc.slo.model_dump(mode="json"), "variants": variant_meta(sc),
            "sample_interval_s": sc.metrics.sample_interval_s}
    w = RunWriter(out, meta)
    backend.run(sc, cfg, w)
    return w.finish()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scenario", nargs="?", default=str(ROOT / "tests/integration/local_step.yaml"))
    ap.add_argument("--autoscaler", default="wva")
    ap.add_argument("--time-scale", type=float, default=2.0)
    ap.add_argument("--out", default=None, help="keep both runs here (default: a temporary folder)")
    args = ap.parse_args()
    sc = load_scenario(args.scenario)
    cfg = sc.autoscaler(args.autoscaler)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(args.out or tmp)
        s = run(SimBackend(), sc, cfg, out / "sim", "sim")
        loc = run(LocalBackend(time_scale=args.time_scale), sc, cfg, out / "local", "local")
        lag = json.loads((out / "local" / "local.json").read_text()).get("send_lag_ms")
    rows = [
        ("goodput rps", s["goodput_rps"], loc["goodput_rps"]),
        ("throughput rps", s["throughput_rps"], loc["throughput_rps"]),
        ("TTFT p50 ms", s["ttft_ms"]["p50"], loc["ttft_ms"]["p50"]),
        ("ITL p50 ms", s["itl_ms"]["p50"], loc["itl_ms"]["p50"]),
        ("replicas mean", s["replicas"]["mean"], loc["replicas"]["mean"]),
        ("requests ok", s["requests_ok"], loc["requests_ok"]),
        ("rejected", s["failures"]["rejected"], loc["failures"]["rejected"]),
    ]
    print(f"{sc.name} / {cfg.label}, local at time scale {args.time_scale:g}")
    print(f"{'metric':<16} {'sim':>10} {'local':>10} {'diff %':>8}")
    for name, a, b in rows:
        diff = "" if not a else f"{100.0 * (b - a) / a:+.1f}"
        print(f"{name:<16} {a:>10.2f} {b:>10.2f} {diff:>8}")
    print(f"local send lag (wall ms): {lag}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
