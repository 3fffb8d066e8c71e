"""Suites: a matrix of scenarios x autoscalers x sweep values x seeds.

A suite YAML names scenario files (relative to the suite file), optional
``--set``-style overrides, an optional one-parameter sweep (e.g. the request
rate: ``rate-2/``, ``rate-3/`` ... folders) and the autoscalers to compare.
``expand_suite`` turns it into a flat, ordered list of ``RunPlan`` objects;
each plan is independent, so the runner can execute them in parallel.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field

from scalearena.contracts.errors import UserError
from scalearena.contracts.limits import MAX_SEED, MAX_SEEDS, StrictSpec
from scalearena.harness.config.frontier_spec import FrontierSpec
from scalearena.harness.config.overrides import apply_overrides
from scalearena.harness.config.scenario import Scenario, read_yaml, scenario_from_data
from scalearena.harness.config.schema_help import validated


class SweepSpec(StrictSpec):

    key: str = Field(description="Dotted scenario key the sweep sets, e.g. workload.arrivals.rate_rps.")
    values: list[Any] = Field(min_length=1, description="Values to run, one folder each.")
    label: str = Field(default="value", pattern=r"^[a-z][a-z0-9_]*$", description="Folder prefix: <label>-<value>.")


class SuiteRun(StrictSpec):

    scenario: str = Field(description="Scenario YAML, relative to the suite file.")
    set: list[str] = Field(default_factory=list, description="dotted.key=value overrides for this scenario.")
    sweep: SweepSpec | None = Field(default=None, description="One-parameter sweep (e.g. request rate).")
    autoscalers: list[str] | Literal["all"] | None = Field(
        default=None, description="Autoscaler labels/kinds; null = the suite's list; 'all' = every registered one."
    )


class SuiteSpec(StrictSpec):

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", description="Suite name.")
    description: str = Field(default="", description="What this suite shows.")
    autoscalers: list[str] | Literal["all"] = Field(
        default="all", description="Default autoscalers for every run: labels/kinds, or 'all' registered ones."
    )
    seeds: list[Annotated[int, Field(ge=0, le=MAX_SEED)]] | None = Field(
        default=None, min_length=1, max_length=MAX_SEEDS,
        description=f"Seeds to repeat every run with (seed-<n>/ folders; each 0..2^63-1, at most {MAX_SEEDS}); "
                    "null = each scenario's seed.")
    attainment_target: float | None = Field(
        default=None, ge=0, le=1, description="SLO-attainment target of the report's verdict for every scenario "
        "that sets none; null = 0.95.")
    frontier: FrontierSpec = Field(
        default_factory=FrontierSpec, description="The oracle frontier, the bound of the report's regret (true for "
        "the defaults; harness/sizing/frontier.py, docs/metrics.md).")
    runs: list[SuiteRun] = Field(min_length=1, description="Scenarios in this suite.")


@dataclass(frozen=True)
class RunPlan:
    scenario: Scenario
    autoscaler: Any  # an AutoscalerConfig
    rel_dir: str  # <scenario>/<autoscaler>[/<label>-<v>][/seed-<s>]
    sweep: dict[str, Any] = field(default_factory=dict)  # {label: value} when swept
    # the autoscaler's colour on the suite page: the worker that ran the plan then writes the run's
    # report.html at once (runner.run_plan), while other runs go on; None: no page (frontier, tuning)
    page_color: str | None = None
    # settings found before the run (suite --tuned: the tuned values and where they sit in their ranges),
    # written to the run's events as derived settings, as a static pool's sizing is
    notes: dict[str, str] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return self.autoscaler.label


def _fmt(v: Any) -> str:
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    return str(v).replace("/", "_")


def select_autoscalers(sc: Scenario, names: list[str] | Literal["all"] | None) -> list[Any]:
    if names is None or names == "all":
        if names == "all":
            # every registered autoscaler; the scenario's own configs win for the kinds it lists
            listed = {a.kind for a in sc.autoscalers}
            extra = [sc.autoscaler(n) for n in sc.registered() if n not in listed]
            return list(sc.autoscalers) + extra
        return sc.autoscaler_configs()
    return [sc.autoscaler(n) for n in names]


def plans_for_scenario(
    sc: Scenario,
    autoscalers: list[str] | Literal["all"] | None,
    sweep: tuple[str, str, Any] | None = None,
    seeds: list[int] | None = None,
) -> list[RunPlan]:
    out = []
    for cfg in select_autoscalers(sc, autoscalers):
        for seed in seeds or [sc.seed]:
            s = sc if seeds is None else sc.model_copy(update={"seed": seed})
            parts = [sc.name, cfg.label]
            swept: dict[str, Any] = {}
            if sweep is not None:
                label, _key, value = sweep
                parts.append(f"{label}-{_fmt(value)}")
                swept = {label: value}
            if seeds is not None:
                parts.append(f"seed-{seed}")
            out.append(RunPlan(s, cfg, "/".join(parts), swept))
    return out


def load_suite(
    path: str | Path, cli_overrides: list[str] | None = None, seeds: list[int] | None = None
) -> tuple[SuiteSpec, list[RunPlan]]:
    """Expand a suite file into run plans; ``seeds`` replaces the suite's own seed list."""
    p = Path(path)
    data = read_yaml(p)
    if not isinstance(data, dict):
        raise UserError("a suite must be a YAML mapping", where=str(p))
    spec = validated(SuiteSpec, data, str(p))
    plans: list[RunPlan] = []
    for i, run in enumerate(spec.runs):
        sc_path = (p.parent / run.scenario).resolve()
        where = f"{p} (runs.{i}.scenario = {run.scenario})"
        if not sc_path.is_file():
            raise UserError("scenario file not found", where=where, expected=f"a file at {sc_path}")
        raw = read_yaml(sc_path)
        raw = apply_overrides(raw, list(run.set) + list(cli_overrides or []), where=str(sc_path))
        names = run.autoscalers if run.autoscalers is not None else spec.autoscalers
        values = run.sweep.values if run.sweep else [None]
        for v in values:
            data_v = apply_overrides(raw, [f"{run.sweep.key}={v}"], where=str(sc_path)) if run.sweep else raw
            sc = scenario_from_data(data_v, str(sc_path), sc_path.parent)
            if sc.attainment_target is None and spec.attainment_target is not None:
                sc = sc.model_copy(update={"attainment_target": spec.attainment_target})
            sweep = (run.sweep.label, run.sweep.key, v) if run.sweep else None
            plans += plans_for_scenario(sc, names, sweep, seeds if seeds is not None else spec.seeds)
    dirs = [pl.rel_dir for pl in plans]
    dup = sorted({d for d in dirs if dirs.count(d) > 1})
    if dup:
        raise UserError(f"two runs would write the same folder: {dup[0]}", where=str(p),
                        expected="distinct scenario names or autoscaler labels")
    return spec, plans
