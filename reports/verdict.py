"""The decision a suite (or a tuning study) is run for: which deployable autoscaler is cheapest
while it meets the SLO-attainment target, and how far each one is from the hindsight bound.

Pure logic over ``Point`` s (one autoscaler, or one configuration, at one traffic level: its cost,
GPU-hours and SLO attainment, averaged over seeds by the caller), no drawing and no files, so the
suite page and the tune study page decide the same way. docs/metrics.md ("Verdict and regret")
states every rule:

* a point **meets** the target when its attainment >= target; incomplete runs never do;
* the **verdict** is the cheapest deployable point that meets the target (ties: higher attainment,
  then name), the **runner-up** the next one; a hindsight point (``BOUND_KINDS``: it reads the
  future arrival schedule; the oracle frontier's runs, harness/sizing/frontier.py) is never picked;
* the **bound** (``Frontier``): the lower convex hull of the hindsight points in (attainment, cost),
  flat at the floor's cost below the floor's attainment (no run is billed less than every variant at
  its min_replicas), undefined above the best attainment a hindsight point reached;
* **regret** of a point = its GPU-hours minus the bound's GPU-hours at its attainment, taken at the
  low end of the attainment's 95 % Wilson interval over its requests (``wilson_low``: a run that met
  the SLO on all of 1201 requests is consistent with 99.7 %, so a frontier point at 99.8 % bounds it);
  n/a with the reason where the bound is undefined (``Regret``); a point more than ``NOISE`` below the bound
  is a **bound violation**, shown as such (it means the bound is not one there), one within it is
  on the bound (regret 0);
* the **Pareto front**: deployable points no other deployable point dominates (cost no higher and
  attainment no lower, one of them strictly).

Written by hand: a dominance filter and a monotone-chain hull over a handful of points are a few
lines each; a library would add a dependency for nothing.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from scalearena.reports.stats import wilson_low

DEFAULT_TARGET = 0.95  # SLO attainment a run must reach to be a candidate (scenario/suite setting, CLI override)
BOUND_KINDS = frozenset({"oracle"})  # autoscalers that read the future: bounds, never deployable picks
_EPS = 1e-12  # an attainment equal to the target up to float noise meets it


def target_of(attainment_target: float | None) -> float:
    """A scenario's attainment target: its own ``attainment_target``, else ``DEFAULT_TARGET``."""
    return DEFAULT_TARGET if attainment_target is None else float(attainment_target)
# How far below the bound a point may sit and still count as on it: 5 % of the bound's GPU-hours, at least
# 0.001 GPU-h (3.6 GPU-seconds). The bound joins a few simulated settings; oracle runs at settings between
# them (u = 1.1, 0.8, 0.6 on the paper suite's six scenario points) landed up to 4.6 % below the default
# grid's hull under 98.5 % attainment (docs/metrics.md), so a point that close is on the bound.
NOISE_REL, NOISE_ABS = 0.05, 0.001


@dataclass(frozen=True)
class Point:
    name: str  # autoscaler label (suite), trial label (tune), frontier setting ("oracle u=0.75", "floor")
    cost: float | None  # in the page's cost unit (USD when every run has prices, else GPU-hours)
    gpu_hours: float | None
    attainment: float | None  # slo_attainment.both, 0..1
    goodput_rps: float | None = None
    bound: bool = False  # hindsight: shown as the bound, never picked
    complete: bool = True
    n: int = 1  # seeds averaged into this point
    requests: int = 0  # requests its attainment is a share of, all seeds together (0: unknown)
    floor: bool = False  # every variant at min_replicas all run long: nothing is billed less
    frontier: bool = False  # an oracle-frontier run (harness/sizing/frontier.py), not one of the compared autoscalers


Unit = Callable[[Point], float | None]


def gpu_hours(p: Point) -> float | None:
    return p.gpu_hours


def page_cost(p: Point) -> float | None:
    return p.cost


def _cross(o: tuple[float, float], a: tuple[float, float], b: tuple[float, float]) -> float:
    return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])


@dataclass(frozen=True)
class Frontier:
    """The bound over the hindsight points of one scenario point (the oracle at several headrooms, the floor)."""

    points: tuple[Point, ...]

    @property
    def usable(self) -> tuple[Point, ...]:
        return tuple(p for p in self.points if p.complete and p.attainment is not None and p.gpu_hours is not None
                     and p.cost is not None)

    @property
    def floor(self) -> Point | None:
        return next((p for p in self.usable if p.floor), None)

    def hull(self, unit: Unit = gpu_hours) -> list[tuple[float, float]]:
        """(attainment, value) vertices of the lower convex hull from the cheapest point up, attainment rising:
        mixing two plans over time (one for a share of the run, the other for the rest) reaches any point
        between them, so the bound is convex; no cheaper point reaches a higher attainment, so it rises."""
        pts: dict[float, float] = {}
        for p in self.usable:
            a, v = float(p.attainment or 0.0), float(unit(p) or 0.0)
            pts[a] = min(v, pts.get(a, v))
        if not pts:
            return []
        start = min(pts.items(), key=lambda q: (q[1], -q[0]))
        hull: list[tuple[float, float]] = []
        for q in sorted(q for q in pts.items() if q[0] >= start[0]):
            while len(hull) >= 2 and _cross(hull[-2], hull[-1], q) <= 0:
                hull.pop()
            hull.append(q)
        return hull

    def at(self, attainment: float, unit: Unit = gpu_hours) -> float | None:
        """The bound's value at ``attainment``: linear on the hull; the floor's below its attainment; None
        above the best attainment or below the cheapest point when no floor anchors it."""
        hull = self.hull(unit)
        if not hull or attainment > hull[-1][0] + _EPS:
            return None
        if attainment <= hull[0][0] + _EPS:
            return hull[0][1] if (self.floor is not None or attainment >= hull[0][0] - _EPS) else None
        for (a0, v0), (a1, v1) in zip(hull, hull[1:], strict=False):
            if attainment <= a1:
                return v0 + (v1 - v0) * (attainment - a0) / (a1 - a0)
        return hull[-1][1]  # pragma: no cover - attainment <= hull[-1][0] returns in the loop


RegretStatus = Literal["ok", "on_bound", "violation", "beyond", "below", "no_bound", "unknown"]


@dataclass(frozen=True)
class Regret:
    """A point's GPU-hours over the bound at its attainment, or why there is none."""

    status: RegretStatus
    gpu_hours: float | None = None  # None unless ok / on_bound (0.0) / violation (negative)
    bound_gpu_hours: float | None = None  # the bound's GPU-hours at the point's attainment
    note: str = ""

    @property
    def violation(self) -> bool:
        return self.status == "violation"

    def text(self) -> str:
        """As the report tables print it."""
        if self.gpu_hours is not None:
            return {"on_bound": "0.000 (on the bound)", "violation": f"{self.gpu_hours:+.3f} (bound violation)"}.get(
                self.status, f"{self.gpu_hours:+.3f}")
        return f"n/a: {self.note}" if self.note else "–"


def regret(p: Point, frontier: Frontier) -> Regret:
    """``p``'s regret against the bound (see the module docstring)."""
    if p.gpu_hours is None or p.attainment is None:
        return Regret("unknown", note="GPU-hours or attainment unknown")
    hull = frontier.hull()
    if not hull:
        return Regret("no_bound", note="no oracle run")
    # the bound at the lowest attainment the point is consistent with: 1201 of 1201 requests is also 99.7 %
    attainment = wilson_low(p.attainment, p.requests) if p.requests else p.attainment
    bound = frontier.at(attainment)
    if bound is None:
        if attainment > hull[-1][0]:
            return Regret("beyond", note=f"attainment above the bound's best ({hull[-1][0]:.1%})")
        return Regret("below", note=f"below the bound's lowest point ({hull[0][0]:.1%})")  # the --frontier hint: once per page (FRONTIER_HINT)
    r = p.gpu_hours - bound
    if r >= 0:
        return Regret("ok", r, bound)
    if -r <= max(NOISE_REL * bound, NOISE_ABS):
        return Regret("on_bound", 0.0, bound, note=f"{-r:.3f} GPU-h below the bound, within noise")
    return Regret("violation", r, bound, note=f"{-r:.3f} GPU-h below the bound: the bound is not one here")


@dataclass(frozen=True)
class Verdict:
    target: float
    pick: Point | None  # cheapest deployable point meeting the target
    runner_up: Point | None
    bound: Point | None  # the cheapest hindsight autoscaler run of the compared set (the oracle), if any
    meeting: tuple[Point, ...]  # deployable points meeting the target, cheapest first
    front: tuple[Point, ...]  # deployable Pareto front, cheapest first
    regret: dict[str, Regret] = field(default_factory=dict)  # deployable name -> its regret
    frontier: Frontier = field(default_factory=lambda: Frontier(()))  # every hindsight point: the bound

    @property
    def best_attainment(self) -> Point | None:
        """The deployable point closest to the target when none meets it (highest attainment)."""
        known = [p for p in self.front if p.attainment is not None]
        return max(known, key=lambda p: (p.attainment, -(p.cost or 0.0)), default=None)

    @property
    def violations(self) -> list[str]:
        """Deployable points the bound does not bound (more than noise below it), by name."""
        return sorted(n for n, r in self.regret.items() if r.violation)


def meets(p: Point, target: float) -> bool:
    return p.complete and p.attainment is not None and p.attainment >= target - _EPS


def _cost_key(p: Point) -> tuple[float, float, str]:
    return (p.cost if p.cost is not None else float("inf"), -(p.attainment or 0.0), p.name)


def pareto_front(points: Iterable[Point]) -> list[Point]:
    """Deployable, complete points with cost and attainment known that no other such point dominates
    (cost <= and attainment >=, one strictly), cheapest first."""
    pts = [p for p in points if not p.bound and p.complete and p.cost is not None and p.attainment is not None]

    def dominated(p: Point) -> bool:
        return any(q.cost <= p.cost and q.attainment >= p.attainment  # type: ignore[operator]
                   and (q.cost < p.cost or q.attainment > p.attainment)  # type: ignore[operator]
                   for q in pts)

    return sorted((p for p in pts if not dominated(p)), key=_cost_key)


def decide(points: Sequence[Point], target: float = DEFAULT_TARGET, frontier: Sequence[Point] = ()) -> Verdict:
    """The verdict over the points of one scenario at one traffic level (see the module docstring);
    ``frontier``: the oracle frontier's points there (bound=True), beside any hindsight point in ``points``."""
    bounds = [p for p in points if p.bound]
    meeting = sorted((p for p in points if not p.bound and meets(p, target) and p.cost is not None), key=_cost_key)
    bound = min((b for b in bounds if b.complete and b.gpu_hours is not None),
                key=lambda b: (b.gpu_hours, -(b.attainment or 0.0)), default=None)
    hull = Frontier(tuple(bounds) + tuple(frontier))
    return Verdict(target=target, pick=meeting[0] if meeting else None,
                   runner_up=meeting[1] if len(meeting) > 1 else None, bound=bound, meeting=tuple(meeting),
                   front=tuple(pareto_front(points)),
                   regret={p.name: regret(p, hull) for p in points if not p.bound}, frontier=hull)
