"""Which runs a comparison covers, and whether both sides measured the same thing.

A regression gate is only meaningful when baseline and current ran the same
workload against the same SLOs: a tighter TTFT SLO lowers SLO attainment and
goodput without any autoscaler getting worse. So before judging numbers,
``config_changes`` lists every SLO or workload setting that differs between
the two sides — from each run's summary.json (``slo``, ``duration_s``) and,
when both folders hold a suite.json, from the resolved scenario (``SCENARIO_KEYS``:
the cluster and router too, so a changed ``max_replicas`` is not read as a regression). The CLI refuses such a comparison (exit 2)
unless ``--allow-config-change`` is given.

``RunFilter`` narrows a comparison to a subset of runs with shell-style
globs (``fnmatch``) on the scenario, the autoscaler or the whole run key.
"""
from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from scalearena.reports.load import ResultSet, Run

# Scenario settings whose change makes the numbers of the two sides incomparable: what is served (the cluster: its
# variants, engines, bounds, start-up; the router), what is offered (workload, duration, drain, faults), and
# what counts as good (slo, attainment_target).
SCENARIO_KEYS = ("slo", "attainment_target", "workload", "duration_s", "drain_s", "faults", "cluster", "router")
SUMMARY_KEYS = ("slo", "duration_s")


@dataclass(frozen=True)
class RunFilter:
    """Globs a run must match (each list: any of its patterns; empty: everything)."""

    scenarios: tuple[str, ...] = ()
    autoscalers: tuple[str, ...] = ()
    runs: tuple[str, ...] = ()  # on the run key scenario/autoscaler[/sweep]

    def __bool__(self) -> bool:
        return bool(self.scenarios or self.autoscalers or self.runs)

    def matches(self, run: Run) -> bool:
        return all(not pats or any(fnmatchcase(value, p) for p in pats)
                   for pats, value in ((self.scenarios, run.scenario), (self.autoscalers, run.autoscaler),
                                       (self.runs, run.key)))

    def describe(self) -> str:
        parts = [f"{name} {' or '.join(p)}" for name, p in (("scenario", self.scenarios),
                                                             ("autoscaler", self.autoscalers),
                                                             ("run", self.runs)) if p]
        return ", ".join(parts) or "all runs"


def select(rs: ResultSet, only: RunFilter | None) -> ResultSet:
    """The runs of ``rs`` that ``only`` matches (``rs`` itself when there is no filter)."""
    if not only:
        return rs
    return ResultSet(rs.root, [r for r in rs.runs if only.matches(r)], rs.suite, rs.single_run)


def _diff(path: str, a: Any, b: Any, out: list[str]) -> None:
    """Leaf-by-leaf differences between two JSON values, as ``path: a -> b`` lines."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            _diff(f"{path}.{k}", a.get(k), b.get(k), out)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _diff(f"{path}[{i}]", x, y, out)
    elif a != b:
        out.append(f"{path}: {a!r} -> {b!r}")


def config_changes(base: ResultSet, cur: ResultSet, keys: list[str]) -> list[str]:
    """Scenario settings (``SCENARIO_KEYS``) that differ between paired runs, as ``path: baseline -> current``.

    The resolved scenario in suite.json is compared when both sides have it; otherwise each run's
    summary.json. Lines name the scenario, so one change shared by many runs is listed once."""
    out: list[str] = []
    b_sc = (base.suite or {}).get("scenarios")
    c_sc = (cur.suite or {}).get("scenarios")
    for k in keys:
        c_run = cur.by_key[k]
        name = c_run.scenario
        b = b_sc.get(name) if isinstance(b_sc, dict) else None
        c = c_sc.get(name) if isinstance(c_sc, dict) else None
        if isinstance(b, dict) and isinstance(c, dict):
            for key in SCENARIO_KEYS:
                _diff(f"{name}: {key}", b.get(key), c.get(key), out)
        else:
            for key in SUMMARY_KEYS:
                _diff(f"{name}: {key}", base.by_key[k].summary.get(key), c_run.summary.get(key), out)
    return list(dict.fromkeys(out))
