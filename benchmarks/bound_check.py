"""Is the oracle frontier a bound? Every autoscaler against it, on every scenario of a suite.

Runs a suite with the oracle frontier (default workloads/suites/bound.yaml: every shipped scenario with
every registered autoscaler that applies, plus generated long-prompt, P/D and bursty workloads) and
reads each scenario point's verdict back with the report's own logic (reports/suite_decide.py,
reports/verdict.py): an autoscaler more than noise below the bound (5 % of the bound's GPU-hours, the
bound read at the low end of its attainment's 95 % Wilson interval) is a **violation**, which says the
oracle's capacity model is wrong there. Prints one markdown row per scenario point (the frontier's
attainment range, the bound at 95 %, the autoscaler closest to or below the bound, violations) and
exits 1 when any violation is found, 0 otherwise.

Usage::

    python benchmarks/bound_check.py [--suite workloads/suites/bound.yaml] [--out results/bound] [--reuse]
        [--jobs N]

``--reuse`` reads an existing results folder instead of running the suite. ``make bound`` runs it.
Written here rather than taken from a library: the verdict logic is the project's own; this is a loop
over it.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from scalearena.reports import suite_decide
from scalearena.reports.catalog import BY_ID
from scalearena.reports.load import load_results

ROOT = Path(__file__).resolve().parents[1]


def run_suite(suite: Path, out: Path, jobs: int) -> None:
    cmd = [sys.executable, "-m", "scalearena", "suite", str(suite), "--out", str(out), "--frontier",
           "--jobs", str(jobs)]
    done = subprocess.run(cmd, check=False)
    if done.returncode not in (0, 1):  # 1: some run failed; its scenario's verdict says so below
        raise SystemExit(f"error: {' '.join(cmd)} exited {done.returncode}")


def closest(d: suite_decide.PointDecision) -> str:
    """The deployable autoscaler with the smallest regret (the nearest to the bound), as 'name regret'."""
    known = [(r.gpu_hours, n) for n, r in d.verdict.regret.items() if r.gpu_hours is not None]
    if not known:
        return "–"
    gap, name = min(known)
    return f"{name} {gap:+.3f}"


def check(out: Path) -> tuple[list[str], int]:
    """The markdown table's lines and the number of violations."""
    rs = load_results(out)
    lines = ["| scenario | frontier attainment | bound at 95 % (GPU-h) | nearest to the bound (regret GPU-h) | "
             "violations |", "| --- | --- | --- | --- | --- |"]
    violations = 0
    for sc in rs.scenarios():
        for d in suite_decide.decisions(rs, [r for r in rs.runs if r.scenario == sc], BY_ID["gpu_hours"], 0.95):
            hull = d.verdict.frontier.hull()
            span = f"{hull[0][0]:.1%} – {hull[-1][0]:.1%}" if hull else "no frontier"
            at = d.verdict.frontier.at(0.95) if hull else None
            bad = [f"{n} ({d.verdict.regret[n].gpu_hours:+.3f})" for n in d.verdict.violations]
            violations += len(bad)
            name = sc + (f" / {d.point}" if d.point else "")
            lines.append(f"| {name} | {span} | {'–' if at is None else f'{at:.3f}'} | {closest(d)} | "
                         f"{', '.join(bad) or 'none'} |")
    return lines, violations


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", type=Path, default=ROOT / "workloads" / "suites" / "bound.yaml")
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "bound")
    ap.add_argument("--reuse", action="store_true", help="read --out instead of running the suite")
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args(argv)
    if not a.reuse:
        run_suite(a.suite, a.out, a.jobs)
    lines, violations = check(a.out)
    print("\n".join(lines))
    print(f"\n{violations} bound violation{'s' if violations != 1 else ''}")
    return 1 if violations else 0


if __name__ == "__main__":
    raise SystemExit(main())
