"""Trace replay must stream: a week-long production trace has ~17 million rows.

This benchmark writes a 10-million-row trace in the Azure 2023 layout to /tmp
(itself streamed, 100,000 rows at a time), replays it through ``iter_requests``
with a window and a speed-up, counts the requests, and prints the wall time
and the process's peak resident memory (``ru_maxrss``). The target is a peak
under 500 MiB whatever the trace length: memory must not grow with the file.

    .venv/bin/python benchmarks/trace_stream.py [--rows 10000000] [--target-rps 50] [--keep]
"""
from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

import numpy as np

from scalearena.harness.config.scenario import scenario_from_data
from scalearena.workloads.generate import WorkloadStats, iter_requests

START_NS = np.datetime64("2024-05-10T00:00:00", "ns")
MEAN_GAP_S = 0.05  # 20 rps: 10 M rows span ~500,000 s, about the length of the Azure 2024 week


def write_trace(path: Path, rows: int, seed: int = 0, chunk: int = 100_000) -> float:
    """Azure-2023-format rows with exponential gaps; returns the trace's length in seconds."""
    rng = np.random.default_rng(seed)
    t_ns = 0
    with path.open("w") as fh:
        fh.write("TIMESTAMP,ContextTokens,GeneratedTokens\n")
        for lo in range(0, rows, chunk):
            n = min(chunk, rows - lo)
            gaps = np.rint(rng.exponential(MEAN_GAP_S * 1e9, n)).astype(np.int64) // 100 * 100
            stamps = START_NS + (t_ns + np.cumsum(gaps)).astype("timedelta64[ns]")
            t_ns += int(gaps.sum())
            text = np.datetime_as_string(stamps, unit="us")  # 2024-05-10T00:00:00.123456
            ctx = rng.integers(3, 8192, n)
            gen = rng.integers(1, 1024, n)
            fh.writelines(f"{s[:10]} {s[11:]}0,{c},{g}\n" for s, c, g in zip(text.tolist(), ctx.tolist(), gen.tolist(), strict=True))
    return t_ns / 1e9


def scenario(path: Path, window_s: float, time_scale: float, target_rps: float | None) -> object:
    duration_s = window_s / time_scale
    arrivals: dict[str, object] = {
        "kind": "trace", "path": str(path), "format": "azure", "start_s": 1000.0, "window_s": window_s,
        "time_scale": time_scale, "max_model_len": 8192,
    }
    if target_rps is not None:
        arrivals["target_rps"] = target_rps
    return scenario_from_data(
        {
            "name": "trace-stream",
            "duration_s": duration_s,
            "cluster": {"variants": [{
                "name": "v", "model": "m", "gpu": "H100-SXM",
                "engine": {"latency": {"kind": "constant"}},
            }]},
            "workload": {"arrivals": arrivals},
            "autoscalers": [{"kind": "static", "replicas": 1}],
        },
        "benchmarks/trace_stream.py",
    )


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--window-s", type=float, default=400_000.0, help="trace seconds replayed")
    ap.add_argument("--time-scale", type=float, default=10.0)
    ap.add_argument("--target-rps", type=float, default=None, help="also rescale (adds a counting pass)")
    ap.add_argument("--keep", action="store_true", help="keep the generated file")
    args = ap.parse_args()

    path = Path(f"/tmp/scalearena-trace-{args.rows}.csv")
    t0 = time.perf_counter()
    if not path.exists():
        span = write_trace(path, args.rows)
        print(f"wrote {args.rows:,} rows ({path.stat().st_size / 2**20:,.0f} MiB, {span:,.0f} s of trace) "
              f"in {time.perf_counter() - t0:,.1f} s; peak RSS so far {peak_mib():,.0f} MiB")
    else:
        print(f"reusing {path}")

    sc = scenario(path, args.window_s, args.time_scale, args.target_rps)
    stats = WorkloadStats()
    t1 = time.perf_counter()
    n, last = 0, 0.0
    for req in iter_requests(sc, stats):  # type: ignore[arg-type]
        n += 1
        last = req.arrival_s
    wall = time.perf_counter() - t1
    ts = stats.traces[0]
    assert ts is not None
    print(f"replayed {n:,} requests (rows read {ts.rows_read:,}, in window {ts.rows_in_window:,}, "
          f"thinned {ts.thinned:,}, duplicated {ts.duplicated:,}, clipped {ts.clipped:,}); last arrival {last:,.1f} s")
    print(f"replay wall time {wall:,.1f} s ({n / wall:,.0f} requests/s); peak RSS {peak_mib():,.0f} MiB "
          f"(target < 500 MiB)")
    if not args.keep:
        os.unlink(path)
    return 0 if peak_mib() < 500 else 1


if __name__ == "__main__":
    sys.exit(main())
