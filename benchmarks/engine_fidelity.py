"""serve-engine against the real llm-d-inference-sim: one constant-latency scenario, both engines, CLUSTER=local.

Local mode's default engine (serve-engine) wraps the simulator's own serving model, so local and sim agree on
latency by construction. This runs the same scenario, seed and load generator twice on --cluster local, once
per engine (``--backend-option engine=...``: serve-engine, then the llm-d-inference-sim v0.10.2 binary that
`make kwok-tools` builds, with the flags the Kubernetes path renders), and prints a markdown table of TTFT,
ITL and end-to-end latency, requests served, failures by cause and the engine queue, with the relative
difference (llm-d-inference-sim against serve-engine). A first column gives the same figures from the
simulator (--cluster sim, same seed): what the serving model both engines implement predicts, with no
process, HTTP or clock in the way. A second table splits TTFT by load: the median TTFT of the requests that
did not queue, by n, the requests in the engine when each arrived (itself included), against the
configured TTFT times the load factor 1 + (f - 1)(n - 1)/(max_num_seqs - 1) at n and at n - 1. n is counted
from the client's records (arrived and not yet answered), so it is exact on the simulator and close on real
processes. Not a timed test; run:

    .venv/bin/python benchmarks/engine_fidelity.py [SCENARIO] [--json PATH] [--out DIR] [--time-scale 1]
    .venv/bin/python benchmarks/engine_fidelity.py [SCENARIO] --from DIR   # the tables of runs kept by --out

The default scenario (benchmarks/data/engine_fidelity.yaml) takes about 75 s of wall time per engine.
Latencies are the client's (Locust through serve-router), in scenario milliseconds. The engine queue is
``vllm:num_requests_waiting`` as the router reads it from each engine's /metrics (the run's time series),
averaged over the load period. docs/backends.md ("serve-engine against llm-d-inference-sim") keeps a
measured table and traces each difference to the two implementations.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from scalearena.harness.config.scenario import load_scenario
from scalearena.harness.local.backend import LocalBackend
from scalearena.harness.run.meta import variant_meta
from scalearena.harness.sim.backend import SimBackend
from scalearena.reports.results import RunWriter

ROOT = Path(__file__).resolve().parents[1]
RUNS = ("sim", "serve-engine", "llm-d-inference-sim")  # the simulator first: the model's own figures
CAUSES = ("error", "killed", "rejected", "timeout", "too_long")


def run(engine: str, sc: Any, cfg: Any, out: Path, time_scale: float) -> dict[str, Any]:
    """One run with ``engine`` on --cluster local (``sim``: on the simulator); its figures."""
    meta = {"scenario": sc.name, "autoscaler": cfg.label, "cluster": "sim" if engine == "sim" else "local",
            "seed": sc.seed, "duration_s": sc.duration_s, "slo": sc.slo.model_dump(mode="json"),
            "variants": variant_meta(sc), "sample_interval_s": sc.metrics.sample_interval_s}
    w = RunWriter(out, meta)
    t0 = time.monotonic()
    backend = SimBackend() if engine == "sim" else LocalBackend(time_scale=time_scale, engine=engine)
    backend.run(sc, cfg, w)
    w.finish()
    return {**figures(engine, sc, out), "wall_s": round(time.monotonic() - t0, 1)}


def figures(engine: str, sc: Any, out: Path) -> dict[str, Any]:
    """What the tables compare, read back from a finished run's folder."""
    s = json.loads((out / "summary.json").read_text())
    ts = pd.read_parquet(out / "timeseries.parquet")
    load = ts[ts["t_s"] <= sc.duration_s]
    local = json.loads((out / "local.json").read_text()) if (out / "local.json").exists() else {}
    return {
        "engine": engine,
        "ttft_p50_ms": s["ttft_ms"]["p50"], "ttft_p99_ms": s["ttft_ms"]["p99"],
        "itl_p50_ms": s["itl_ms"]["p50"], "itl_p99_ms": s["itl_ms"]["p99"],
        "e2e_p50_ms": s["e2e_ms"]["p50"], "e2e_p99_ms": s["e2e_ms"]["p99"],
        "requests_total": s["requests_total"], "requests_ok": s["requests_ok"],
        "failures": {c: s["failures"].get(c, 0) for c in CAUSES},
        "waiting_mean": float(load["waiting"].mean()), "running_mean": float(load["running"].mean()),
        "send_lag_ms": local.get("send_lag_ms"),
        "ttft_by_load": ttft_by_load(pd.read_parquet(out / "requests.parquet"), sc),
    }


def ttft_by_load(req: pd.DataFrame, sc: Any) -> dict[str, float]:
    """Median TTFT (ms) of the requests that did not queue, by n (requests in the engine at arrival, itself
    included; n <= max_num_seqs means a free slot), counted from the client's arrival and end times."""
    ok = req[req["status"] == "ok"].sort_values("arrival_s")
    arrival, end = ok["arrival_s"].to_numpy(), ok["end_s"].to_numpy()
    n = np.array([int(((arrival <= a) & (end > a)).sum()) for a in arrival])
    cap = sc.cluster.variants[0].engine.max_num_seqs
    ttft = ok["ttft_ms"].to_numpy()
    return {str(k): float(np.median(ttft[n == k])) for k in range(1, cap + 1) if (n == k).any()}


ROWS = (("TTFT p50 ms", "ttft_p50_ms"), ("TTFT p99 ms", "ttft_p99_ms"), ("ITL p50 ms", "itl_p50_ms"),
        ("ITL p99 ms", "itl_p99_ms"), ("e2e p50 ms", "e2e_p50_ms"), ("requests ok", "requests_ok"),
        *((f"failures: {c}", c) for c in CAUSES),
        ("engine queue (waiting), mean", "waiting_mean"), ("engine running, mean", "running_mean"))


def table(model: dict[str, Any], a: dict[str, Any], b: dict[str, Any]) -> str:
    """The markdown table: the simulator, serve-engine (a), llm-d-inference-sim (b), relative difference b to a."""
    lines = [f"| metric | simulator (model) | {RUNS[1]} | {RUNS[2]} | difference |", "|---|---:|---:|---:|---:|"]
    for name, key in ROWS:
        m, x, y = (r["failures"][key] if key in CAUSES else r[key] for r in (model, a, b))
        diff = f"{100.0 * (y - x) / x:+.1f} %" if x else ("0" if not y else "n/a")
        fmt = "{:.0f}" if name.startswith(("requests", "failures")) else "{:.2f}"
        lines.append(f"| {name} | {fmt.format(m)} | {fmt.format(x)} | {fmt.format(y)} | {diff} |")
    return "\n".join(lines)


def load_table(sc: Any, runs: list[dict[str, Any]]) -> str:
    """Median TTFT of the requests that did not queue, by n, against the load factor at n and at n - 1."""
    e = sc.cluster.variants[0].engine
    lat, cap = e.latency, e.max_num_seqs

    def expected(k: int) -> float:
        return lat.ttft_ms * (1.0 + (lat.time_factor_under_load - 1.0) * (k - 1) / (cap - 1) if cap > 1 else 1.0)
    lines = [f"| n | TTFT x f(n) | TTFT x f(n-1) | {' | '.join(r['engine'] for r in runs)} |",
             "|---:|---:|---:|" + "---:|" * len(runs)]
    for k in range(1, cap + 1):
        got = [r["ttft_by_load"].get(str(k)) for r in runs]
        lines.append(f"| {k} | {expected(k):.1f} | {expected(k - 1):.1f} | "
                     + " | ".join("" if g is None else f"{g:.1f}" for g in got) + " |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("scenario", nargs="?", default=str(ROOT / "benchmarks/data/engine_fidelity.yaml"))
    ap.add_argument("--autoscaler", default="static")
    ap.add_argument("--time-scale", type=float, default=1.0,
                    help="must keep every sim latency whole milliseconds (1 always does)")
    ap.add_argument("--json", default=None, help="write the raw figures of the runs here")
    ap.add_argument("--out", default=None, help="keep the runs here (default: a temporary folder)")
    ap.add_argument("--from", dest="source", default=None, help="print the tables of the runs kept in this --out")
    args = ap.parse_args()
    sc = load_scenario(args.scenario)
    cfg = sc.autoscaler(args.autoscaler)
    if args.source:
        got = [figures(e, sc, Path(args.source) / e) for e in RUNS]
    else:
        LocalBackend(time_scale=args.time_scale, engine=RUNS[2]).check(sc)  # binary built, flags whole: first
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(args.out or tmp)
            got = [run(e, sc, cfg, out / e, args.time_scale) for e in RUNS]
    print(f"{sc.name} / {cfg.label}, --cluster local at time scale {args.time_scale:g}, seed {sc.seed}\n")
    print(table(*got))
    print("\nMedian TTFT (ms) of the requests that did not queue, by n requests in the engine at arrival:\n")
    print(load_table(sc, got))
    if args.json:
        doc = {"scenario": sc.name, "scenario_file": os.path.relpath(args.scenario, ROOT), "autoscaler": cfg.label,
               "time_scale": args.time_scale, "seed": sc.seed, "runs": {g["engine"]: g for g in got}}
        Path(args.json).write_text(json.dumps(doc, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
