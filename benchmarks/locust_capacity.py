"""How fast the host's Locust load generator sends open-loop streaming requests, per worker count.

For each worker count (1: one process in library mode; N > 1: Locust's
master/worker mode as ``--backend-option locust_workers=N`` starts it,
harness/local/locust_process.py) it sweeps constant arrival rates against
one serve-engine (constant latency, a short stream per request) and prints,
per rate: requests sent and finished ok, the achieved send rate (requests
over the span of actual sends), and the send lag (actual minus scheduled
send, wall ms) p50 / p99 / max. The sustained rate of a worker count is the
highest offered rate whose lag p99 stays under 50 ms with every request ok.
Not a timed test; run:

    .venv/bin/python benchmarks/locust_capacity.py [--workers 1,2,4] [--rates 300,500,800] [--seconds 10]

The engine and every worker share the host's cores: on a small machine the
figures are a lower bound for Locust alone, and more workers than free cores
cannot add capacity (docs/local.md).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from scalearena.harness.local.locust_process import LocustProcess
from scalearena.harness.local.supervisor import Supervisor, free_port, wait_for_port
from scalearena.workloads import load_handoff as load
from scalearena.workloads.base import RequestSpec

LAG_P99_LIMIT_MS = 50.0


def sweep_rate(sup: Supervisor, port: int, workers: int, rate: float, seconds: float, out: Path,
               tokens: int) -> dict:
    n = int(rate * seconds)
    specs = [RequestSpec(i, "m", i / rate, 64, tokens) for i in range(n)]
    run = out / f"w{workers}-r{rate:g}"
    run.mkdir()
    tag = f"{workers}-{rate:g}"
    lp = LocustProcess(run, f"http://127.0.0.1:{port}", end_s=seconds + 30.0, timeout_s=30.0, workers=workers,
                       csv=run / "locust", spawn=lambda name, argv, env: sup.start(f"{name}-{tag}", argv, env=env).proc)
    lp.start(specs, lead_s=1.5)
    deadline = time.monotonic() + seconds + 120.0
    while lp.alive() and time.monotonic() < deadline:
        time.sleep(0.2)
    lp.stop(5.0)
    rows, dup = load.merge_records(lp.record_files())
    lags = np.array([r["lag_ms"] for r in rows.values()]) if rows else np.zeros(1)
    sends = sorted(r["arrival_s"] for r in rows.values())
    span = sends[-1] - sends[0] if len(sends) > 1 else 0.0
    ok = sum(r["status"] == "ok" for r in rows.values())
    return {"workers": workers, "rate": rate, "scheduled": n, "sent": len(rows), "ok": ok, "duplicates": len(dup),
            "achieved": (len(sends) - 1) / span if span > 0 else 0.0, "lag_p50": float(np.percentile(lags, 50)),
            "lag_p99": float(np.percentile(lags, 99)), "lag_max": float(lags.max())}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", default="1,2,4", help="comma-separated worker counts (1 = one process)")
    ap.add_argument("--rates", default="200,300,500,800", help="comma-separated requests per second")
    ap.add_argument("--seconds", type=float, default=10.0, help="length of each step")
    ap.add_argument("--tokens", type=int, default=16, help="output tokens per request (one SSE chunk each)")
    args = ap.parse_args()
    print(f"host: {os.cpu_count()} CPUs; one serve-engine process; {args.seconds:g} s per step, "
          f"{args.tokens}-token streams")
    with tempfile.TemporaryDirectory() as tmp, Supervisor(Path(tmp) / "logs") as sup:
        port = free_port()
        eng = sup.start("engine", [sys.executable, "-m", "scalearena.harness.local.cli", "engine",
                                   "--model", "m", "--port", str(port), "--max-num-seqs", "65536",
                                   "--max-waiting-queue-length", "65536", "--kv-cache-size", "10000000",
                                   "--time-to-first-token", "50ms", "--inter-token-latency", "20ms"])
        if not wait_for_port(port, 30, eng.proc):
            print(eng.log_tail())
            return 1
        print(f"{'workers':>7} {'rate/s':>7} {'sent':>6} {'ok':>6} {'dup':>4} {'achieved/s':>10} {'lag p50 ms':>11} "
              f"{'lag p99 ms':>11} {'lag max ms':>11}")
        sustained: dict[int, float] = {}
        for workers in (int(w) for w in args.workers.split(",")):
            sustained[workers] = 0.0
            for rate in (float(r) for r in args.rates.split(",")):
                r = sweep_rate(sup, port, workers, rate, args.seconds, Path(tmp), args.tokens)
                print(f"{workers:>7} {r['rate']:>7g} {r['sent']:>6} {r['ok']:>6} {r['duplicates']:>4} "
                      f"{r['achieved']:>10.1f} {r['lag_p50']:>11.2f} {r['lag_p99']:>11.2f} {r['lag_max']:>11.2f}",
                      flush=True)
                if r["lag_p99"] < LAG_P99_LIMIT_MS and r["ok"] == r["scheduled"] and not r["duplicates"]:
                    sustained[workers] = rate
        for workers, rate in sustained.items():
            print(f"workers={workers}: highest rate with send-lag p99 < {LAG_P99_LIMIT_MS:g} ms and every request "
                  f"ok: {rate:g} req/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
