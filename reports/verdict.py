"""The decision a suite (or a tuning study) is run for: which deployable autoscaler is cheapest
while it meets the SLO-attainment target, and how far each one is from the hindsight oracle.

Pure logic over ``Point`` s (one autoscaler, or one configuration, at one traffic level: its cost,
GPU-hours and SLO attainment, averaged over seeds by the caller), no drawing and no files, so the
suite page and the tune study page decide the same way. docs/metrics.md ("Verdict and regret")
states every rule:

* a point **meets** the target when its attainment >= target; incomplete runs never do;
* the **verdict** is the cheapest deployable point that meets the target (ties: higher attainment,
  then name), the **runner-up** the next one; a hindsight autoscaler (``BOUND_KINDS``: it reads the
  future arrival schedule) is never picked: it is shown as the bound;
* **regret** of a point = its GPU-hours minus the fewest GPU-hours of a bound point whose attainment
  is equal or better (None when no bound point reaches its attainment);
* the **Pareto front**: deployable points no other deployable point dominates (cost no higher and
  attainment no lower, one of them strictly).

Written by hand: a dominance filter over a handful of points is a few lines; a library would add
a dependency for nothing.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

DEFAULT_TARGET = 0.95  # SLO attainment a run must reach to be a candidate (scenario/suite setting, CLI override)
BOUND_KINDS = frozenset({"oracle"})  # autoscalers that read the future: bounds, never deployable picks
_EPS = 1e-12  # an attainment equal to the target up to float noise meets it


@dataclass(frozen=True)
class Point:
    name: str  # autoscaler label (suite) or trial label (tune)
    cost: float | None  # in the page's cost unit (USD when every run has prices, else GPU-hours)
    gpu_hours: float | None
    attainment: float | None  # slo_attainment.both, 0..1
    goodput_rps: float | None = None
    bound: bool = False  # hindsight: shown as the bound, never picked
    complete: bool = True
    n: int = 1  # seeds averaged into this point


@dataclass(frozen=True)
class Verdict:
    target: float
    pick: Point | None  # cheapest deployable point meeting the target
    runner_up: Point | None
    bound: Point | None  # the cheapest bound point (the oracle), whatever its attainment
    meeting: tuple[Point, ...]  # deployable points meeting the target, cheapest first
    front: tuple[Point, ...]  # deployable Pareto front, cheapest first
    regret: dict[str, float | None] = field(default_factory=dict)  # name -> extra GPU-hours over the bound

    @property
    def best_attainment(self) -> Point | None:
        """The deployable point closest to the target when none meets it (highest attainment)."""
        known = [p for p in self.front if p.attainment is not None]
        return max(known, key=lambda p: (p.attainment, -(p.cost or 0.0)), default=None)


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


def regret(p: Point, bounds: Sequence[Point]) -> float | None:
    """Extra GPU-hours of ``p`` over the cheapest bound point with equal or better attainment."""
    if p.gpu_hours is None or p.attainment is None:
        return None
    refs = [b.gpu_hours for b in bounds if b.complete and b.gpu_hours is not None and b.attainment is not None
            and b.attainment >= p.attainment - _EPS]
    return p.gpu_hours - min(refs) if refs else None


def decide(points: Sequence[Point], target: float = DEFAULT_TARGET) -> Verdict:
    """The verdict over the points of one scenario at one traffic level (see the module docstring)."""
    bounds = [p for p in points if p.bound]
    meeting = sorted((p for p in points if not p.bound and meets(p, target) and p.cost is not None), key=_cost_key)
    bound = min((b for b in bounds if b.complete and b.gpu_hours is not None),
                key=lambda b: (b.gpu_hours, -(b.attainment or 0.0)), default=None)
    return Verdict(target=target, pick=meeting[0] if meeting else None,
                   runner_up=meeting[1] if len(meeting) > 1 else None, bound=bound, meeting=tuple(meeting),
                   front=tuple(pareto_front(points)),
                   regret={p.name: regret(p, bounds) for p in points if not p.bound})
