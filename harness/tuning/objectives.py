"""What a study optimises: metrics of summary.json by the ids the reports and the gate use (reports/catalog.py).

An objective is any catalog metric with a direction (``cost``, ``slo_attainment``, ``goodput_rps``,
``ttft_p99``, ...), minimised or maximised as that direction says, averaged over the trial's seeds.
Without ``slo_attainment`` among the objectives the target attainment becomes a constraint (Optuna's
``Trial.set_constraint``: feasible when ``target - attainment <= 0``), so a single-objective ``cost``
study looks for the cheapest configuration that meets the target rather than for the one that serves
nothing at all.

The default cost is ``cost_usd``, the suite pages' cost (GPU-hours x each GPU type's ``price_per_hour``,
reports/usage.py; the simulator knows every GPU's price, so a trial always has it); ``--objective cost``
(variantCost x hours, the WVA paper's unit) stays available and is labelled so wherever it is shown. A
study already in the folder keeps the objectives it began with (``default_objectives``): a rerun of the
same command continues it rather than being refused for another setup.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from scalearena.contracts.errors import UserError
from scalearena.contracts.suggest import did_you_mean
from scalearena.reports.catalog import BY_ID, METRICS, Metric

DEFAULT_OBJECTIVES = ("cost_usd", "slo_attainment")
COST_IDS = ("cost", "cost_usd", "gpu_hours", "energy_kwh")  # what the tune report may put on its cost axis
ATTAINMENT = "slo_attainment"


@dataclass(frozen=True)
class Objective:
    metric: Metric

    @property
    def id(self) -> str:
        return self.metric.id

    @property
    def direction(self) -> str:
        return "maximize" if self.metric.direction == "higher" else "minimize"


def known() -> list[str]:
    return [m.id for m in METRICS if m.direction != "none"]


def parse_objectives(names: tuple[str, ...] | list[str]) -> list[Objective]:
    """``--objective`` values (default cost and slo_attainment); an unknown or repeated one is a UserError."""
    picked = list(names) or list(DEFAULT_OBJECTIVES)
    out: list[Objective] = []
    for n in picked:
        if n not in known():
            raise UserError(f"--objective {n}: no such objective{did_you_mean(n, known())}",
                            expected="one of " + ", ".join(known()))
        if any(o.id == n for o in out):
            raise UserError(f"--objective {n}: given twice")
        out.append(Objective(BY_ID[n]))
    return out


def default_objectives(out: Path) -> tuple[str, ...]:
    """The objectives when ``--objective`` is not given: those of the study already in ``out`` (its tune.json:
    one begun when the default was ``cost`` continues as it began), else DEFAULT_OBJECTIVES."""
    try:
        stored = json.loads((out / "tune.json").read_text(encoding="utf-8")).get("objectives")
    except (OSError, ValueError, AttributeError):
        return DEFAULT_OBJECTIVES
    ok = isinstance(stored, list) and stored and all(isinstance(n, str) and n in known() for n in stored)
    return tuple(stored) if ok else DEFAULT_OBJECTIVES


def check_target(value: float) -> float:
    """``--min-attainment``: a share of requests, 0..1."""
    if not 0.0 <= value <= 1.0:
        raise UserError(f"--min-attainment {value:g}: outside [0, 1]",
                        expected="a share of requests meeting the SLO, e.g. 0.95")
    return value


def cost_axis(objectives: list[Objective]) -> Metric:
    """The cost the report draws: the first cost-like objective, else ``cost_usd`` (the suite pages' unit)."""
    return next((o.metric for o in objectives if o.id in COST_IDS), BY_ID["cost_usd"])
