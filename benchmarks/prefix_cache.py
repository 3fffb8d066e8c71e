"""Prefix caching on vs off on a Mooncake-layout trace: hit rate, TTFT p50 / p90, GPU-hours.

Runs ``workloads/scenarios/prefix-cache-mooncake.yaml`` (or the scenario given) in the simulator
twice per autoscaler, with ``enable_prefix_caching`` true and false on every variant, and prints
one line per run. The hit rate is vLLM's counters summed over the run's pods
(``vllm:prefix_cache_hits_total / vllm:prefix_cache_queries_total``, each pod's last scrape).

    .venv/bin/python benchmarks/prefix_cache.py [SCENARIO] [--autoscaler static] [--set key=value]...
"""
from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from scalearena.controllers.registry import REGISTRY
from scalearena.harness.config.scenario import load_scenario
from scalearena.harness.sim.loop import Simulation
from scalearena.reports.results import RunWriter
from scalearena.workloads.generate import WorkloadStats, build_requests

ROOT = Path(__file__).resolve().parents[1]


def one(path: Path, label: str, caching: bool, out: Path, overrides: list[str]) -> str:
    n = len(load_scenario(path, overrides).cluster.variants)
    sc = load_scenario(path, [*overrides, *(f"cluster.variants.{i}.engine.enable_prefix_caching="
                                             f"{str(caching).lower()}" for i in range(n))])
    cfg = next(a for a in sc.autoscalers if a.label == label)
    requests = build_requests(sc, WorkloadStats())
    queries = hits = 0.0
    writer = RunWriter(out / f"{label}-{caching}", {"scenario": sc.name})
    sim = Simulation(sc, cfg, writer, requests, policy=REGISTRY.build(cfg))
    sim.run()
    for d in sim.deps:  # every pod's engine, gone or not, kept by name in the metrics store
        for q in sim.metrics.query(f'max_over_time(vllm:prefix_cache_queries_total{{variant="{d.name}"}}[1h])',
                                   at=sim.end_s):
            queries += float(q["value"][1])
        for h in sim.metrics.query(f'max_over_time(vllm:prefix_cache_hits_total{{variant="{d.name}"}}[1h])',
                                   at=sim.end_s):
            hits += float(h["value"][1])
    summary = writer.finish()
    records = pd.read_parquet(writer.dir / "requests.parquet")
    ttft = records["ttft_ms"].dropna().tolist()
    p50, p90 = (np.percentile(ttft, q) for q in (50, 90)) if ttft else (float("nan"), float("nan"))
    rate = hits / queries if queries else 0.0
    mean = float(np.mean(ttft)) if ttft else float("nan")
    prompt = int(records["input_tokens"].sum())  # prefilled without caching
    return (f"{label:8s} caching {'on ' if caching else 'off'}  hit rate {rate:6.1%}  prefill tokens computed "
            f"{(prompt - hits) / prompt:6.1%}  TTFT mean {mean:7.0f} p50 {p50:7.0f} p90 {p90:7.0f} ms  "
            f"ok {summary['requests_ok']}/{summary['requests_total']}  GPU-hours {summary['gpu_hours']:.4f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scenario", nargs="?", default=str(ROOT / "workloads/scenarios/prefix-cache-mooncake.yaml"))
    ap.add_argument("--autoscaler", action="append", help="autoscaler label (default: the scenario's)")
    ap.add_argument("--set", action="append", default=[], help="dotted.key=value scenario override (repeatable)")
    args = ap.parse_args()
    labels = args.autoscaler or [a.label for a in load_scenario(Path(args.scenario), args.set).autoscalers]
    with tempfile.TemporaryDirectory() as tmp:
        for label in labels:
            for caching in (False, True):
                print(one(Path(args.scenario), label, caching, Path(tmp), args.set), flush=True)


if __name__ == "__main__":
    main()
