"""The suite page's answer: per scenario and sweep point, which autoscaler to deploy.

Groups a scenario's runs by sweep point and autoscaler (the seeds of one group averaged), turns each
group into a ``verdict.Point`` and lets ``verdict.decide`` pick; the oracle frontier's points
(OUT/frontier.json, written by harness/sizing/frontier.py when the suite ran it) are averaged over seeds per
setting the same way and become the bound. This module only reads results and words the outcome. The target comes from ``--min-attainment`` (report CLI), else the scenario's
``attainment_target`` recorded in suite.json (a suite's own setting is resolved into it), else 0.95.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from scalearena.reports.bounds import FRONTIER_FILE, Perfect, frontier_points, perfect_reference, read_bounds
from scalearena.reports.catalog import BY_ID, Metric
from scalearena.reports.load import ResultSet, Run, natural_key
from scalearena.reports.stats import Estimate, estimate
from scalearena.reports.verdict import BOUND_KINDS, DEFAULT_TARGET, Point, Verdict, decide, meets, page_cost

SUITE_INPUTS = ("suite.json", FRONTIER_FILE)  # the files the suite page reads besides the runs' summaries


def target_for(rs: ResultSet, scenario: str, override: float | None = None) -> float:
    """The SLO-attainment target of one scenario's verdict (see the module docstring)."""
    if override is not None:
        return float(override)
    scenarios = (rs.suite or {}).get("scenarios")
    sc = scenarios.get(scenario) if isinstance(scenarios, dict) else None
    t = sc.get("attainment_target") if isinstance(sc, dict) else None
    return float(t) if isinstance(t, int | float) and not isinstance(t, bool) else DEFAULT_TARGET


def is_bound(rs: ResultSet, run: Run) -> bool:
    """A hindsight autoscaler (by the kind suite.json records for the run, else by its label)."""
    rows = (rs.suite or {}).get("runs")
    kind = next((r.get("autoscaler_kind") for r in rows if isinstance(r, dict) and r.get("dir") == run.key),
                None) if isinstance(rows, list) else None
    return str(kind or run.autoscaler) in BOUND_KINDS


def groups(runs: list[Run]) -> dict[tuple[str, str], list[Run]]:
    """(sweep point or "", autoscaler) -> its runs, one per seed, in seed order."""
    out: dict[tuple[str, str], list[Run]] = {}
    for r in sorted(runs, key=lambda r: (natural_key(r.point or ""), r.autoscaler, r.seed or 0)):
        out.setdefault((r.point or "", r.autoscaler), []).append(r)
    return out


def seed_estimate(runs: list[Run], metric: Metric) -> Estimate:
    return estimate([metric.value(r.summary) for r in runs])


def _mean(runs: list[Run], metric: Metric) -> float | None:
    e = seed_estimate(runs, metric)
    return None if e.n == 0 else e.mean


def to_point(rs: ResultSet, runs: list[Run], cost: Metric) -> Point:
    """One group's point: means over its seeds; complete only when every seed completed."""
    return Point(name=runs[0].autoscaler, cost=_mean(runs, cost), gpu_hours=_mean(runs, BY_ID["gpu_hours"]),
                 attainment=_mean(runs, BY_ID["slo_attainment"]), goodput_rps=_mean(runs, BY_ID["goodput_rps"]),
                 bound=is_bound(rs, runs[0]), complete=all(r.summary.get("complete") is not False for r in runs),
                 n=len(runs), requests=sum(int(r.summary.get("requests_total") or 0) for r in runs))


@dataclass(frozen=True)
class PointDecision:
    point: str  # sweep point label, "" without a sweep
    verdict: Verdict
    points: list[Point]  # every autoscaler at this point, cheapest first
    cost: Metric
    perfect: Perfect | None = None  # llm-d-autoscaling #1499's perfect system at this point, when computed


def decisions(rs: ResultSet, runs: list[Run], cost: Metric, target: float) -> list[PointDecision]:
    """One decision per sweep point of a scenario's runs."""
    by_point: dict[str, list[Point]] = {}
    for (point, _a), group in groups(runs).items():
        by_point.setdefault(point, []).append(to_point(rs, group, cost))
    rows, perfect = read_bounds(rs.root)
    out = []
    for point in sorted(by_point, key=natural_key):
        pts = sorted(by_point[point], key=lambda p: (p.cost is None, p.cost or 0.0, p.name))
        scenario = runs[0].scenario if runs else None
        out.append(PointDecision(point, decide(pts, target, frontier_points(rows, cost, scenario, point)), pts, cost,
                                 perfect_reference(perfect, cost, scenario, point)))
    return out


def _ms(v: float) -> str:
    return f"{v:,.0f} ms" if float(v).is_integer() else f"{v:g} ms"


def slo_text(runs: list[Run]) -> str:
    """The SLO a scenario's requests are counted against, from its runs' summaries: "TTFT ≤ 1,000 ms, ITL ≤ 50 ms";
    runs that disagree (a sweep over the SLO) give each objective's range; "" when no run records one."""
    parts = []
    for key, name in (("ttft_ms", "TTFT"), ("itl_ms", "ITL")):
        values = sorted({float(v) for r in runs if isinstance(slo := r.summary.get("slo"), dict)
                         and isinstance(v := slo.get(key), int | float) and not isinstance(v, bool)})
        if values:
            span = _ms(values[0]) if len(values) == 1 else f"{_ms(values[0]).removesuffix(' ms')} to {_ms(values[-1])}"
            parts.append(f"{name} ≤ {span}")
    return ", ".join(parts)


def target_text(target: float) -> str:
    """An attainment target as the verdicts print it: 95% (95.5% when not a whole percent)."""
    return f"{target:.0%}" if round(target * 100, 6).is_integer() else f"{target:.1%}"


def _money(p: Point, cost: Metric) -> str:
    return _amount(p.cost, cost)


def _amount(value: float | None, cost: Metric) -> str:
    unit = "GPU-h" if cost.id == "gpu_hours" else cost.unit
    return f"{cost.format(value)} {unit}"


# What a verdict whose bound is one oracle run lacks, and how to get it: said once per page, not per line.
FRONTIER_HINT = ("where the bound is one oracle run (one hindsight point), regret is n/a below its attainment: "
                 "run the oracle frontier (--frontier) for a bound at every attainment")


def bound_text(v: Verdict, cost: Metric, target: str) -> str:
    """The bound in words: the oracle frontier's range and its cost at the target, or the one oracle run
    (then regret is mostly n/a: ``needs_frontier``, whose hint the page says once), and every bound violation."""
    f = v.frontier
    if not any(p.frontier for p in f.usable):
        if v.bound is None:
            return "no oracle run: regret unknown"
        return f"bound ({v.bound.name}, reads the future): {_money(v.bound, cost)} at {_pct(v.bound.attainment)}"
    hull = f.hull()
    at = f.at(v.target, page_cost)
    reach = (f"needs {_amount(at, cost)}" + ("" if cost.id == "gpu_hours" else f" ({f.at(v.target):.3f} GPU-h)")
             + f" at {target}") if at is not None else f"does not reach {target}"
    runs = sum(p.frontier for p in f.usable)
    text = (f"bound: the oracle frontier ({runs} hindsight runs, {_pct(hull[0][0])} to {_pct(hull[-1][0])} "
            f"attainment) {reach}")
    bad = [f"{n} ({v.regret[n].gpu_hours:+.3f} GPU-h)" for n in v.violations]
    return text + (f"; bound violated by {', '.join(bad)}: there the frontier is no bound" if bad else "")


def needs_frontier(v: Verdict) -> bool:
    """The bound is one oracle run, no frontier: FRONTIER_HINT applies."""
    return v.bound is not None and not any(p.frontier for p in v.frontier.usable)


def _pct(v: float | None) -> str:
    return "–" if v is None else f"{v:.1%}"


def sentence(d: PointDecision, noun: str = "autoscaler") -> dict[str, Any]:
    """The verdict in words: headline (the pick or why there is none), runner-up, bound; ``noun`` names
    what competes (a tuning study's candidates are configurations)."""
    v, cost = d.verdict, d.cost
    target = target_text(v.target)
    if v.pick is not None:
        gpu = "" if cost.id == "gpu_hours" or v.pick.gpu_hours is None else f" ({v.pick.gpu_hours:.3f} GPU-h)"
        head = (f"{v.pick.name}: {_pct(v.pick.attainment)} SLO attainment at {_money(v.pick, cost)}{gpu}, "
                f"the cheapest deployable {noun} meeting {target}")
    else:
        near = v.best_attainment
        head = f"no deployable {noun} meets {target} SLO attainment" + (
            f"; closest: {near.name} at {_pct(near.attainment)} ({_money(near, cost)})" if near else "")
    runner = (f"runner-up {v.runner_up.name}: {_money(v.runner_up, cost)} at {_pct(v.runner_up.attainment)}"
              if v.runner_up else "no runner-up meets the target" if v.pick else "")
    bound = bound_text(v, cost, target) + perfect_text(d.perfect, cost)
    seeds = max((p.n for p in d.points), default=1)
    return {"point": d.point, "ok": v.pick is not None, "pick": v.pick.name if v.pick else None, "head": head,
            "runner": runner, "bound": bound, "seeds": seeds, "hint": FRONTIER_HINT if needs_frontier(v) else ""}


def perfect_text(p: Perfect | None, cost: Metric) -> str:
    """llm-d-autoscaling #1499's number in words ("" when not computed); the page says once what it is."""
    if p is None or p.gpu_hours is None:
        return ""
    gpu = "" if cost.id == "gpu_hours" else f" ({p.gpu_hours:.3f} GPU-h)"
    cap = f", max_replicas too few in {p.windows_over_max:g} of {p.windows} windows" if p.windows_over_max else ""
    return f"; perfect system (#1499): {_amount(p.cost, cost)}{gpu}, peak {p.peak_gpus:g} GPUs{cap}"


def table_rows(d: PointDecision) -> list[dict[str, Any]]:
    """Every autoscaler at one point, cheapest first: cost, attainment, goodput, meets, regret, front."""
    v = d.verdict
    front = {p.name for p in v.front}
    rows = []
    for p in d.points:
        r = v.regret.get(p.name)
        rows.append({"name": p.name, "cost": d.cost.format(p.cost), "attainment": _pct(p.attainment),
                     "goodput": BY_ID["goodput_rps"].format(p.goodput_rps), "bound": p.bound,
                     "meets": meets(p, v.target), "pick": v.pick is not None and p.name == v.pick.name,
                     "regret": "bound" if p.bound or r is None else r.text(),
                     "regret_note": "" if r is None else r.note, "violation": r is not None and r.violation,
                     "front": p.name in front, "complete": p.complete})
    return rows
