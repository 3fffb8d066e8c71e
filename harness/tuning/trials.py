"""One trial of a study: a configuration, run on the scenario once per seed, its metrics averaged.

A trial's runs are ordinary run plans (``trials/trial-0042/seed-3/`` under the study's folder, each a
full run folder with summary.json), so a trial can be opened with ``scalearena report`` like any run,
and the simulator's determinism makes a trial a function of its configuration and seeds alone. The
configuration's default (the scenario's own settings of that autoscaler) and the oracle run the same
way under ``default/`` and ``oracle/``: the reference point and the bound of the report.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from scalearena.controllers.base import AutoscalerConfig
from scalearena.harness.config.scenario import Scenario, compile_objects
from scalearena.harness.config.suite import RunPlan
from scalearena.harness.run.outcome import RunOutcome
from scalearena.harness.tuning.objectives import ATTAINMENT, Objective
from scalearena.reports.catalog import BY_ID

SIGNIFICANT = 4  # sampled real numbers are rounded to this many significant digits before they run
REPORTED = ("cost", "cost_usd", "gpu_hours", "slo_attainment", "goodput_rps", "throughput_rps", "failures",
            "ttft_p99", "energy_kwh", "replicas_mean", "scaling_actions")


def label(number: int) -> str:
    return f"trial-{number:04d}"


def rounded(values: dict[str, Any]) -> dict[str, Any]:
    """Sampled values as they run and as the snippet prints them: floats to 4 significant digits."""
    return {k: float(f"{v:.{SIGNIFICANT}g}") if isinstance(v, float) else v for k, v in values.items()}


COMPILED = ("targets", "rule_groups", "instances", "derived", "per_variant")  # filled in when a scenario loads


def as_written(cfg: AutoscalerConfig) -> AutoscalerConfig:
    """``cfg`` as a user writes it: a ``kubernetes`` or llm-d recipe config loses what loading the scenario
    filled in (the objects' targets and rules; a recipe's per-variant instances, which carry the placeholder
    values they were read with), and a recipe's objects go back to its own file names. A sampled ``env`` then
    reaches the objects when they are read again (``plans``), and the snippet holds only what one writes."""
    from scalearena.controllers.kubernetes import KubernetesConfig
    from scalearena.controllers.llmd import RecipeConfig

    if not isinstance(cfg, KubernetesConfig):
        return cfg
    fields = type(cfg).model_fields
    reset = {k: fields[k].get_default(call_default_factory=True) for k in COMPILED if k in fields}
    if isinstance(cfg, RecipeConfig):
        from scalearena.harness.objects.recipes import MANIFESTS

        shipped = fields["objects"].get_default(call_default_factory=True)
        if cfg.objects == [str(MANIFESTS / f) for f in shipped]:
            reset["objects"] = shipped
    return cfg.model_copy(update=reset)


def holding(sc: Scenario, cfg: AutoscalerConfig) -> tuple[Scenario, AutoscalerConfig]:
    """``sc`` holding only ``cfg``, and ``cfg`` as it runs there: a recipe's or a user's objects read again
    with its (sampled, tuned) ``env``, whose placeholders may have changed."""
    written = as_written(cfg)
    one = sc.model_copy(update={"autoscalers": [written]})
    if written is not cfg:
        one = compile_objects(one, None)
        cfg = one.autoscalers[0]
    return one, cfg


def plans(sc: Scenario, cfg: AutoscalerConfig, folder: str, seeds: list[int]) -> list[RunPlan]:
    """The runs of one configuration: ``folder/seed-<s>`` for each seed, the scenario holding only ``cfg``."""
    one, cfg = holding(sc, cfg)
    return [RunPlan(one.model_copy(update={"seed": s}), cfg, f"{folder}/seed-{s}") for s in seeds]


@dataclass
class Outcome:
    """A trial's (or the default's, or the oracle's) result over its seeds."""

    ok: bool
    metrics: dict[str, float | None] = field(default_factory=dict)  # REPORTED ids -> mean over seeds
    error: str | None = None
    seeds: int = 0
    attempts: int = 1  # most attempts any of its runs took (> 1: a Ray worker was lost and the run went again)

    def values(self, objectives: list[Objective]) -> list[float] | None:
        vals = [self.metrics.get(o.id) for o in objectives]
        if any(v is None or not math.isfinite(v) for v in vals):
            return None
        return [float(v) for v in vals if v is not None]

    def constraint(self, target: float) -> float:
        """Optuna's constraint value: feasible (<= 0) when the mean attainment meets the target."""
        att = self.metrics.get(ATTAINMENT)
        return 1.0 if att is None else target - att


def outcome(results: list[RunOutcome], objectives: list[Objective]) -> Outcome:
    """Average the seeds' summaries; any run that did not finish makes the trial failed, with its error."""
    bad = [r for r in results if not r.ok or r.summary is None]
    summaries = [r.summary for r in results if r.ok and r.summary is not None]
    attempts = max([r.attempts for r in results], default=1)
    if bad or not results:
        err = (bad[0].error or bad[0].status) if bad else "no runs"
        return Outcome(False, error=f"{bad[0].dir if bad else ''}: {err}", seeds=len(results), attempts=attempts)
    ids = list(dict.fromkeys([*REPORTED, *(o.id for o in objectives)]))
    metrics: dict[str, float | None] = {}
    for i in ids:
        vals = [BY_ID[i].value(s) for s in summaries]
        metrics[i] = None if any(v is None for v in vals) else sum(v for v in vals if v is not None) / len(vals)
    return Outcome(True, metrics, seeds=len(results), attempts=attempts)
