"""Simulator performance figures (printed, never asserted: timings depend on the machine).

Targets (docs/simulator.md, on a 2-core machine):
1. one 600 s paper-like run at 10 RPS (bounded-normal tokens: input mean 4096 sd 2048
   in [10, 8192], output mean 1024 sd 512 in [10, 2048], constant latency) in < 0.6 s;
2. one simulated hour at 100 RPS across up to 100 replicas in < 60 s, peak memory < 1 GiB;
3. the full paper suite (workloads/suites/paper.yaml) with every registered autoscaler in < 20 s
   (all cores, without the HTML report, which `make bench` renders afterwards);
4. a 200-trial single-objective ``scalearena tune`` study on the physical scenario (600 s, 1 seed) in
   < 180 s with the local executor, and its report page in < 10 s.

Usage: ``python benchmarks/perf.py [--only paper|hour|suite|tune] [--profile]``. Wall time covers
request generation and the simulation (``SimBackend.run``); writing parquet at the end is
reported separately.
"""
from __future__ import annotations

import argparse
import cProfile
import pstats
import resource
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

from scalearena.harness.backends.sim import SimBackend
from scalearena.harness.scenario import scenario_from_data
from scalearena.reports.results import RunWriter

PAPER_TOKENS = {
    "input_tokens": {"kind": "bounded_normal", "min": 10, "max": 8192, "mean": 4096, "sd": 2048},
    "output_tokens": {"kind": "bounded_normal", "min": 10, "max": 2048, "mean": 1024, "sd": 512},
}


def scenario(name: str, duration_s: float, rate: float, max_replicas: int, autoscaler: dict[str, Any]) -> Any:
    data = {
        "name": name,
        "duration_s": duration_s,
        "seed": 7,
        "cluster": {"variants": [{
            "name": "va-h100", "model": "qwen3-0.6b", "gpu": "H100-SXM", "cost": 1.0,
            "min_replicas": 1, "max_replicas": max_replicas, "startup_s": 30,
            "engine": {"max_num_seqs": 256, "kv_cache_blocks": 1024, "block_size": 16,
                       "latency": {"kind": "constant", "ttft_ms": 200, "itl_ms": 2}},
        }]},
        "router": {"scorers": {"queue": 1, "kv_cache": 1, "prefix_cache": 1}},
        "workload": {"arrivals": {"kind": "poisson", "rate_rps": rate}, **PAPER_TOKENS},
        "autoscalers": [autoscaler],
        "metrics": {"scrape_interval_s": 15, "sample_interval_s": 5},
    }
    return scenario_from_data(data, "<perf>")


def run_once(sc: Any, memory: bool) -> dict[str, float]:
    out = Path(tempfile.mkdtemp(prefix="scalearena-perf-"))
    writer = RunWriter(out, {}, checkpoint_wall_s=1e9)
    if memory:
        tracemalloc.start()
    t0 = time.perf_counter()
    SimBackend().run(sc, sc.autoscalers[0], writer, None)
    t1 = time.perf_counter()
    peak = tracemalloc.get_traced_memory()[1] if memory else 0
    if memory:
        tracemalloc.stop()
    summary = writer.finish()
    t2 = time.perf_counter()
    return {
        "sim_s": t1 - t0, "write_s": t2 - t1, "requests": summary["requests_total"], "ok": summary["requests_ok"],
        "replicas_mean": summary["replicas"]["mean"], "replicas_max": summary["replicas"]["max"],
        "tracemalloc_peak_mib": peak / 2**20,
    }


def report(label: str, sc: Any, repeat: int, profile: bool) -> None:
    best = None
    for _ in range(repeat):
        r = run_once(sc, memory=False)
        best = r if best is None or r["sim_s"] < best["sim_s"] else best
    assert best is not None
    print(f"{label}: {best['requests']} requests ({best['ok']} ok), replicas mean {best['replicas_mean']:.1f} "
          f"max {best['replicas_max']}; simulation {best['sim_s']:.3f} s (best of {repeat}), "
          f"results written in {best['write_s']:.3f} s")
    mem = run_once(sc, memory=True)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"  tracemalloc peak {mem['tracemalloc_peak_mib']:.0f} MiB during the simulation; process ru_maxrss "
          f"{rss:.0f} MiB")
    if profile:
        prof = cProfile.Profile()
        prof.enable()
        run_once(sc, memory=False)
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(15)


def suite_figure() -> None:
    """Wall time of the paper suite on the simulator, every autoscaler, all cores (no report)."""
    import os

    from scalearena.harness.runner import run_plans
    from scalearena.harness.suite import load_suite

    _, plans = load_suite(Path(__file__).resolve().parents[1] / "workloads" / "suites" / "paper.yaml")
    out = Path(tempfile.mkdtemp(prefix="scalearena-perf-suite-"))
    jobs = os.cpu_count() or 1
    t0 = time.perf_counter()
    results = run_plans(plans, out, "sim", jobs, lambda r: None)
    wall = time.perf_counter() - t0
    simulated = sum(p.scenario.duration_s + p.scenario.drain_s for p in plans)
    failed = [r["dir"] for r in results if r["status"] != "ok"]
    print(f"paper suite: {len(plans)} runs ({len(failed)} failed) in {wall:.1f} s wall on {jobs} cores; "
          f"{simulated / 3600:.1f} simulated hours -> {simulated / wall:.0f}x real time")


def tune_figure(trials: int = 200) -> None:
    """A single-objective study (cost, constrained to the scenario's attainment target) of hpa on the paper's
    physical scenario (600 s simulated, 1 seed), local executor on every core; then its report page.
    Targets: study < 180 s on 2 cores, report < 10 s."""
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    out = Path(tempfile.mkdtemp(prefix="scalearena-perf-tune-"))
    cmd = [sys.executable, "-m", "scalearena", "tune", str(root / "workloads/scenarios/physical-validation.yaml"),
           "--autoscaler", "hpa", "--trials", str(trials), "--objective", "cost", "--min-attainment", "0.3",
           "--out", str(out), "--no-report"]
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    wall = time.perf_counter() - t0
    from scalearena.reports.tune import write_tune_report

    t1 = time.perf_counter()
    write_tune_report(out, force=True)
    render = time.perf_counter() - t1
    print(f"tune: {trials}-trial single-objective study (hpa, physical-validation 600 s, 1 seed) in {wall:.1f} s "
          f"wall on {os.cpu_count()} cores ({wall / trials * 1000:.0f} ms per trial; target < 180 s); "
          f"its report in {render:.1f} s (target < 10 s)")


def predictors_figure() -> None:
    """The planner's load predictors per decision (benchmarks/predictors.py --quick; ~10 s)."""
    import subprocess
    import sys

    script = Path(__file__).resolve().parent / "predictors.py"
    subprocess.run([sys.executable, str(script), "--quick"], check=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--only", choices=["paper", "hour", "suite", "tune", "predictors"])
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    if args.only in (None, "paper"):
        sc = scenario("perf-paper-10rps", 600, 10.0, 30, {"kind": "wva", "tau_kv": 0.8, "tau_q": 5, "gamma_kv": 0.3})
        report("paper-like 600 s @ 10 RPS (wva, <= 30 replicas)", sc, 3, args.profile)
    if args.only in (None, "hour"):
        sc = scenario("perf-hour-100rps", 3600, 100.0, 100, {"kind": "wva", "tau_kv": 0.8, "tau_q": 5,
                                                             "gamma_kv": 0.3})
        report("1 h @ 100 RPS (wva, <= 100 replicas)", sc, 1, args.profile)
        sc = scenario("perf-hour-100rps-static", 3600, 100.0, 100, {"kind": "static", "replicas": 100})
        report("1 h @ 100 RPS (static 100 replicas: every request served)", sc, 1, args.profile)
    if args.only in (None, "suite"):
        suite_figure()
    if args.only in (None, "tune"):
        tune_figure()
    if args.only in (None, "predictors"):
        predictors_figure()


if __name__ == "__main__":
    main()
