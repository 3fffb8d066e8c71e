"""Figures for docs/reliability.md: hostile inputs tried, clean errors, internal errors, tracebacks, hangs.

Runs the adversarial strategies of tests/adversarial (the same ones `make test` runs a few hundred
of) at a larger count, plus the hostile inputs issue 17 named one by one, through the real CLI in
the memory- and time-limited sandbox, and prints one Markdown table row per family.

    .venv/bin/python benchmarks/reliability.py --examples 300
"""
from __future__ import annotations

import argparse
import collections
import sys
import tempfile
import time
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.adversarial.sandbox import Outcome, Sandbox  # noqa: E402
from tests.adversarial.strategies import (  # noqa: E402
    BASE,
    autoscaler_overrides,
    mutated_scenarios,
    mutated_traces,
    overrides,
    trace_scenario,
)

KINDS = ("ok", "clean", "internal", "traceback", "hang", "crash")
NAMED_SCENARIO_EDITS = {  # issue 17 items 4-6, 9: (dotted path, value)
    "duration_s: 1e12": ("duration_s", 1e12), "rate_rps: .inf": ("workload.arrivals.rate_rps", float("inf")),
    "scrape_interval_s: 1e-9": ("metrics.scrape_interval_s", 1e-9),
    "hpa period_s: 1e-9": ("autoscalers.1.period_s", 1e-9),
    "min_replicas: 1e5": ("cluster.variants.0.min_replicas", 100000),
    "cost: .inf": ("cluster.variants.0.cost", float("inf")), "name: [/x]": ("name", "[/x]"),
    "outage end < start": ("faults.0.end_s", 5),
}


def _edit(path: str, value: object) -> bytes:
    data = yaml.safe_load(yaml.safe_dump(BASE))
    node = data
    keys = [int(k) if k.isdigit() else k for k in path.split(".")]
    for k in keys[:-1]:
        node = node[k]
    node[keys[-1]] = value
    return yaml.safe_dump(data).encode()


def named_inputs() -> list[tuple[str, list[str], dict[str, bytes]]]:
    """(label, CLI args with {dir} for the folder, files to write there)."""
    from tests.adversarial.strategies import _bomb

    out: list[tuple[str, list[str], dict[str, bytes]]] = [
        (label, ["validate", "{dir}/s.yaml"], {"s.yaml": _edit(p, v)}) for label, (p, v) in NAMED_SCENARIO_EDITS.items()
    ]
    base = yaml.safe_dump(BASE).encode()
    out += [
        ("alias bomb (9 levels)", ["validate", "{dir}/s.yaml"], {"s.yaml": _bomb(9)}),
        ("non-UTF-8 scenario", ["validate", "{dir}/s.yaml"], {"s.yaml": b"name: caf\xe9\n"}),
        ("5000-digit integer", ["validate", "{dir}/s.yaml"], {"s.yaml": b"seed: " + b"7" * 5000}),
        ("deep nesting", ["validate", "{dir}/s.yaml"], {"s.yaml": b"[" * 100000}),
        ("--set duration_s=[1", ["run", "{dir}/s.yaml", "--set", "duration_s=[1", "--out", "{dir}/o"],
         {"s.yaml": base}),
        ("--set duration_s=.inf", ["run", "{dir}/s.yaml", "--set", "duration_s=.inf", "--out", "{dir}/o"],
         {"s.yaml": base}),
        ("--out /proc/x", ["run", "{dir}/s.yaml", "--autoscaler", "static", "--out", "/proc/x"], {"s.yaml": base}),
        ("empty trace", ["validate", "{dir}/t.yaml"],
         {"t.yaml": trace_scenario("azure", "t.csv"), "t.csv": b"TIMESTAMP,ContextTokens,GeneratedTokens\n"}),
        ("non-UTF-8 trace", ["validate", "{dir}/t.yaml"],
         {"t.yaml": trace_scenario("azure", "t.csv"),
          "t.csv": b"TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.0,1\xff,1\n"}),
    ]
    return out


def run_family(box: Sandbox, name: str, n: int) -> collections.Counter[str]:
    counts: collections.Counter[str] = collections.Counter()
    tmp = Path(tempfile.mkdtemp(prefix=f"reliability-{name.replace(' ', '-')}-"))
    seq = iter(range(10**9))

    def record(o: Outcome, what: str) -> None:
        counts[o.kind] += 1
        if not o.acceptable:
            print(f"  {name}: {o.kind}: {what[:200]!r}\n    {o.output[-400:]}", file=sys.stderr)

    cfg = settings(max_examples=n, derandomize=True, database=None, deadline=None,
                   suppress_health_check=list(HealthCheck))
    if name == "scenarios":
        @cfg
        @given(content=mutated_scenarios())
        def go(content: bytes) -> None:
            p = tmp / f"{next(seq)}.yaml"
            p.write_bytes(content)
            record(box.invoke(["validate", str(p)], 20), repr(content))
    elif name == "traces":
        @cfg
        @given(trace=mutated_traces())
        def go(trace: tuple[str, bytes]) -> None:
            d = tmp / str(next(seq))
            d.mkdir()
            (d / "t.trace").write_bytes(trace[1])
            (d / "s.yaml").write_bytes(trace_scenario(trace[0], "t.trace"))
            record(box.invoke(["validate", str(d / "s.yaml")], 20), repr(trace))
    elif name == "autoscaler parameters":
        @cfg
        @given(case=autoscaler_overrides())
        def go(case: tuple[dict, str, list[str]]) -> None:
            d = tmp / str(next(seq))
            d.mkdir()
            (d / "s.yaml").write_text(yaml.safe_dump(case[0]))
            args = ["run", str(d / "s.yaml"), "--autoscaler", case[1], "--out", str(d / "o")]
            record(box.invoke(args + [a for i in case[2] for a in ("--set", i)], 60), " ".join(case[2]))
    else:
        @cfg
        @given(items=overrides())
        def go(items: list[str]) -> None:
            d = tmp / str(next(seq))
            d.mkdir()
            (d / "s.yaml").write_text(yaml.safe_dump(BASE))
            args = ["run", str(d / "s.yaml"), "--autoscaler", "static", "--out", str(d / "o")]
            record(box.invoke(args + [a for i in items for a in ("--set", i)], 60), " ".join(items))
    go()
    return counts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", type=int, default=300, help="examples per fuzzed family")
    args = ap.parse_args()
    box = Sandbox()
    rows: list[tuple[str, collections.Counter[str], float]] = []
    try:
        t0 = time.perf_counter()
        named: collections.Counter[str] = collections.Counter()
        for label, argv, files in named_inputs():
            d = Path(tempfile.mkdtemp(prefix="reliability-named-"))
            for fname, content in files.items():
                (d / fname).write_bytes(content)
            o = box.invoke([a.replace("{dir}", str(d)) for a in argv], 60)
            named[o.kind] += 1
            print(f"  named: {label}: {o.kind}: {o.output.strip().splitlines()[-1:]}", file=sys.stderr)
        rows.append(("issue 17 named inputs", named, time.perf_counter() - t0))
        for fam in ("scenarios", "traces", "overrides", "autoscaler parameters"):
            t0 = time.perf_counter()
            rows.append((f"fuzzed {fam}", run_family(box, fam, args.examples), time.perf_counter() - t0))
    finally:
        box.close()
    print("| inputs | tried | ok (exit 0) | clean error (exit 2) | internal error (exit 3) | traceback | hang | "
          "crash / memory | wall s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, c, wall in rows:
        print(f"| {name} | {sum(c.values())} | " + " | ".join(str(c[k]) for k in KINDS) + f" | {wall:.0f} |")


if __name__ == "__main__":
    main()
