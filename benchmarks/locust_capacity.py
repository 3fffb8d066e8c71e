"""How fast one Locust process can send open-loop streaming requests on this host.

Sweeps constant arrival rates against one serve-engine (constant latency, a
short stream per request) and prints, per rate, the send lag (actual minus
scheduled send, wall ms) and how many requests finished ok. The capacity is
the highest rate whose lag p99 stays under 50 ms. Not a timed test; run:

    .venv/bin/python benchmarks/locust_capacity.py [--rates 50,100,200] [--seconds 10]

The engine shares the host's cores with Locust, so on a small machine the
figure is a lower bound for Locust alone (docs/local.md).
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from scalearena.harness.backends.local.supervisor import Supervisor, free_port, wait_for_port
from scalearena.workloads import load_handoff as load
from scalearena.workloads.base import RequestSpec


def sweep_rate(sup: Supervisor, port: int, rate: float, seconds: float, out: Path, tokens: int) -> dict:
    n = int(rate * seconds)
    specs = [RequestSpec(i, "m", i / rate, 64, tokens) for i in range(n)]
    schedule = out / f"schedule-{rate:g}.jsonl"
    load.write_schedule(schedule, specs)
    env = {load.ENV_SCHEDULE: str(schedule), load.ENV_RECORDS: str(out / f"records-{rate:g}.jsonl"),
           load.ENV_T0: repr(time.time() + 1.5), load.ENV_TIMEOUT_S: "30", load.ENV_END_S: repr(seconds + 30)}
    child = sup.start(f"locust-{rate:g}", [sys.executable, "-m", "scalearena.workloads.locust_user", "--host",
                                           f"http://127.0.0.1:{port}", "--csv", str(out / f"locust-{rate:g}")], env=env)
    child.proc.wait(timeout=seconds + 90)
    rows = load.read_records([out / f"records-{rate:g}.jsonl"])
    lags = np.array([r["lag_ms"] for r in rows.values()])
    ok = sum(r["status"] == "ok" for r in rows.values())
    return {"rate": rate, "sent": len(rows), "ok": ok, "lag_p50": float(np.percentile(lags, 50)),
            "lag_p99": float(np.percentile(lags, 99)), "lag_max": float(lags.max())}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rates", default="25,50,100,200,300", help="comma-separated requests per second")
    ap.add_argument("--seconds", type=float, default=10.0, help="length of each step")
    ap.add_argument("--tokens", type=int, default=16, help="output tokens per request (one SSE chunk each)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp, Supervisor(Path(tmp) / "logs") as sup:
        port = free_port()
        eng = sup.start("engine", [sys.executable, "-m", "scalearena.harness.backends.local.cli", "engine",
                                   "--model", "m", "--port", str(port), "--max-num-seqs", "100000",
                                   "--max-waiting-queue-length", "100000", "--kv-cache-size", "10000000",
                                   "--time-to-first-token", "50ms", "--inter-token-latency", "20ms"])
        if not wait_for_port(port, 30, eng.proc):
            print(eng.log_tail())
            return 1
        print(f"{'rate/s':>7} {'sent':>6} {'ok':>6} {'lag p50 ms':>11} {'lag p99 ms':>11} {'lag max ms':>11}")
        best = 0.0
        for rate in (float(r) for r in args.rates.split(",")):
            r = sweep_rate(sup, port, rate, args.seconds, Path(tmp), args.tokens)
            print(f"{r['rate']:>7g} {r['sent']:>6} {r['ok']:>6} {r['lag_p50']:>11.2f} {r['lag_p99']:>11.2f} "
                  f"{r['lag_max']:>11.2f}", flush=True)
            if r["lag_p99"] < 50 and r["ok"] == r["sent"]:
                best = rate
        print(f"highest rate with send-lag p99 < 50 ms and every request ok: {best:g} req/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
