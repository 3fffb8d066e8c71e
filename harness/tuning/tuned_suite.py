"""``scalearena suite ... --tuned``: each tunable autoscaler at its best beside its defaults.

A verdict between one autoscaler with tuned thresholds and another with its guide's defaults says little
(issue 28). With ``--tuned`` every autoscaler of the suite that declares tunables (``AutoscalerConfig.
tunables()``: the presets' targets, the llm-d recipes' ``env:`` thresholds, the planner's targets; not the
oracle, not the static pools) is tuned first, with the study of ``scalearena tune`` (harness/tuning/
study.py: Optuna, cost against attainment, the attainment target as a constraint), per scenario and
sweep point, on a **training** seed the suite does not run: the scenario's seed + ``TRAIN_OFFSET``, so
the arrivals it is tuned on are not the ones it is judged on. Its pick (the cheapest trial meeting the
target; none meeting it: the one with the highest attainment) then runs on the suite's own (held-out)
seeds as ``<label>-tuned``, beside ``<label>``, and the suite's verdict compares every autoscaler at its
best. Each tuned run's page lists what was tuned as events: every parameter's value and where it sits in
its range, the training seed and the trials, and whether the pick met the target there. The studies
stay under ``OUT/tuning/<scenario>[/<point>]/<label>/`` (``scalearena report`` of that folder draws one;
a rerun continues them).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from scalearena.contracts.tunable import Tunable
from scalearena.harness.config.suite import RunPlan
from scalearena.harness.run.executor import Executor
from scalearena.harness.tuning.objectives import default_objectives, parse_objectives
from scalearena.harness.tuning.outputs import tuned_config, write
from scalearena.harness.tuning.space import build_space
from scalearena.harness.tuning.study import Tuning, finished, open_storage, open_study, optimize
from scalearena.harness.tuning.trials import holding
from scalearena.reports.load import TUNING_DIR

TRAIN_OFFSET = 1000  # training seed = the scenario's seed + this: other arrivals than the held-out runs
UNTUNED = frozenset({"oracle", "static", "static-peak", "static-mean"})  # a bound and the fixed pools


def position(t: Tunable, value: Any) -> str:
    """Where ``value`` sits in ``t``'s range, as the report says it: "0.62 (27 % of 0.5..0.95)"."""
    if t.kind == "categorical" or t.low is None or t.high is None or t.high == t.low:
        return f"{value!r} (of {', '.join(map(repr, t.choices or ()))})" if t.kind == "categorical" else repr(value)
    share = (float(value) - float(t.low)) / (float(t.high) - float(t.low))
    edge = " (at an end of the range: widen it to search further)" if share <= 0.02 or share >= 0.98 else ""
    return f"{value:g} ({share:.0%} of {t.low:g}..{t.high:g}){edge}"


def _point(p: RunPlan) -> str:
    """The plan's sweep point as a folder name part ("" without a sweep)."""
    return "/".join(f"{k}-{v}" for k, v in sorted(p.sweep.items()))


def _groups(plans: list[RunPlan]) -> dict[tuple[str, str, str], list[RunPlan]]:
    """The suite's plans of each tunable autoscaler, by scenario, sweep point and label (its seeds)."""
    out: dict[tuple[str, str, str], list[RunPlan]] = {}
    for p in plans:
        cfg = p.autoscaler
        if cfg.kind in UNTUNED or not build_space(cfg, []).params:
            continue
        out.setdefault((p.scenario.name, _point(p), cfg.label), []).append(p)
    return out


def _tuned_dir(p: RunPlan, label: str) -> str:
    parts = p.rel_dir.split("/")
    parts[1] = label  # <scenario>/<autoscaler>[/<sweep>][/seed-<s>]
    return "/".join(parts)


def tune_one(group: list[RunPlan], out: Path, trials: int, target: float, executor: Executor) -> list[RunPlan]:
    """Study one autoscaler on the training seed of its scenario point; the held-out plans of its pick."""
    first = min(group, key=lambda p: p.scenario.seed)
    sc, base = first.scenario, first.autoscaler
    space = build_space(base, [])
    folder = out / TUNING_DIR / sc.name / _point(first) / base.label
    folder.mkdir(parents=True, exist_ok=True)
    seed = sc.seed + TRAIN_OFFSET
    t = Tuning(sc, base, None, space, parse_objectives(default_objectives(folder)), target, [seed], folder,
               trials)
    storage = open_storage(folder)
    try:
        study = open_study(t, storage)
        optimize(study, t, executor, max(1, executor.jobs), lambda: "", lambda n, total, best: None)
        _, v = write(study, t, {})
        pick = v.pick or v.best_attainment
        best = next((ft for ft in finished(study) if pick and ft.user_attrs.get("label") == pick.name), None)
    finally:
        storage.engine.dispose()
    if best is None:  # every trial failed: nothing to hold out
        return []
    values = best.user_attrs.get("values") or {}
    tuned = tuned_config(t, values)
    att = "–" if pick is None or pick.attainment is None else f"{pick.attainment:.1%}"
    met = (f"the cheapest meeting the {target:.0%} target there, at {att}" if v.pick else
           f"the highest attainment there, {att}: no trial met the {target:.0%} target")
    notes = {f"tuned {p.path}": position(p, values[p.path]) for p in space.params if p.path in values}
    notes["tuned on"] = (f"seed {seed} (the suite's own seeds held out), {trials} trials; picked "
                         f"{best.user_attrs['label']}, {met}; study: {folder}")
    out_plans = []
    for p in group:
        sc_tuned, cfg = holding(p.scenario, tuned)  # a recipe's objects read again with the tuned env
        out_plans.append(replace(p, scenario=sc_tuned, autoscaler=cfg, rel_dir=_tuned_dir(p, cfg.label), notes=notes))
    return out_plans


def tuned_plans(plans: list[RunPlan], out: Path, trials: int, target_of: Callable[[RunPlan], float],
                executor: Executor, say: Callable[[str], None]) -> list[RunPlan]:
    """The held-out runs of every tunable autoscaler of ``plans`` at its tuned configuration."""
    groups = _groups(plans)
    extra: list[RunPlan] = []
    for i, ((scenario, point, label), group) in enumerate(sorted(groups.items()), 1):
        say(f"tuning {i}/{len(groups)}: {label} on {scenario}{' / ' + point if point else ''} ({trials} trials)")
        extra += tune_one(group, out, trials, target_of(group[0]), executor)
    return extra


def with_tuned(plans: list[RunPlan], out: Path, trials: int, cluster: str, jobs: int,
               executor: Executor | None, say: Callable[[str], None]) -> list[RunPlan]:
    """``plans`` and, after them, the tuned runs (``--tuned``); the studies run on ``executor`` or on a local
    pool of ``jobs`` workers. Simulator only: a study is hundreds of runs."""
    from scalearena.contracts.errors import UserError
    from scalearena.harness.run.executor import make_executor
    from scalearena.reports.verdict import target_of

    if cluster != "sim":
        raise UserError(f"--tuned tunes on the simulator, not --cluster {cluster}", expected="--cluster sim")
    if trials < 1:
        raise UserError(f"--trials {trials}: must be at least 1")
    ex = executor or make_executor("local", jobs, "sim")
    try:
        return plans + tuned_plans(plans, out, trials, lambda p: target_of(p.scenario.attainment_target), ex, say)
    finally:
        if executor is None:
            ex.close()
