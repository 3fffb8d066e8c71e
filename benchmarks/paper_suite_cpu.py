"""CPU seconds of the paper suite on the simulator: simulation and results files, no report.

Every run of ``workloads/suites/paper.yaml`` is executed in this one process, one after another
(``runner.run_plan``), ``--repeat`` times; the figure is the sum over runs of each run's fastest
CPU time (``time.process_time``), which a busy shared machine disturbs far less than wall time.
Check out two commits and run it in each to compare them (docs/simulator.md "Performance" has the
issue-14 before / after figures measured this way). Printed, never asserted.

    .venv/bin/python benchmarks/paper_suite_cpu.py [--repeat 3]
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from scalearena.harness.config.suite import load_suite
from scalearena.harness.run import runner

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="runs of the whole suite (default 3)")
    args = ap.parse_args()
    _, plans = load_suite(ROOT / "workloads" / "suites" / "paper.yaml")
    best: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="scalearena-suite-cpu-") as tmp:
        for r in range(args.repeat):
            total = 0.0
            for p in plans:
                t0 = time.process_time()
                runner.run_plan(p, Path(tmp), "sim")
                dt = time.process_time() - t0
                best[p.rel_dir] = min(best.get(p.rel_dir, dt), dt)
                total += dt
            print(f"pass {r + 1}: {len(plans)} runs, {total:.2f} s CPU", flush=True)
    print(f"paper suite: {len(plans)} runs, sum of per-run minima {sum(best.values()):.2f} s CPU")


if __name__ == "__main__":
    main()
