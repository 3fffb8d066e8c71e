"""The Optuna study behind ``scalearena tune``: storage, sampler, and trials asked and told in batches.

Storage is a SQLite file, ``OUT/study.db`` (study name ``tune``), so the same command run again
continues the study (``--trials`` is the study's total: a rerun runs what is missing, a larger number
adds trials) and ``optuna-dashboard sqlite:///OUT/study.db`` shows it live. A study remembers its
setup (scenario, autoscaler, objectives, seeds, search space); resuming it with another setup is
refused rather than mixing two questions in one front.

Trials run in batches of ``batch`` (the executor's parallelism): ask that many, run all their seeds
at once on the executor, tell them in trial-number order. With the sampler re-seeded from
``(--sampler-seed, trials so far)`` before each batch, what a trial samples depends only on the trials
before it, never on which run finished first, so a study is reproducible at any ``--jobs`` for a fixed
batch size, and a resumed study samples as an uninterrupted one would have from the same point. A
trial left running by an interrupted process is marked failed on resume and not counted.
"""
from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import optuna
from optuna.trial import FrozenTrial, Trial, TrialState

from scalearena.contracts.errors import UserError
from scalearena.contracts.tunable import Tunable
from scalearena.controllers.base import AutoscalerConfig
from scalearena.harness.config.frontier_spec import FrontierSpec
from scalearena.harness.config.scenario import Scenario
from scalearena.harness.run.executor import Executor
from scalearena.harness.run.outcome import RunOutcome
from scalearena.harness.tuning.objectives import ATTAINMENT, Objective
from scalearena.harness.tuning.space import Space, apply
from scalearena.harness.tuning.trials import Outcome, label, outcome, plans, rounded

STUDY_NAME = "tune"
SAMPLERS = ("tpe", "nsga2", "random")
CONSTRAINT = "attainment_below_target"
Progress = Callable[[int, int, str], None]  # (finished trials, total, best so far)


@dataclass
class Tuning:
    """Everything one study needs: what to run, what to search, what to optimise, where."""

    scenario: Scenario
    base: AutoscalerConfig  # the scenario's configuration of the autoscaler (the default point)
    oracle: AutoscalerConfig | None  # the bound; None when the tuned autoscaler is the oracle itself
    space: Space
    objectives: list[Objective]
    target: float
    seeds: list[int]
    out: Path
    trials: int
    sampler: str = "tpe"
    sampler_seed: int = 0
    frontier: FrontierSpec | None = None  # the oracle frontier to run as the bound (None: only the oracle)
    frontier_rows: list[dict[str, Any]] = field(default_factory=list)  # its points once run (harness/sizing/frontier.py)
    perfect_rows: list[dict[str, Any]] = field(default_factory=list)  # #1499's perfect system per seed

    @property
    def constrained(self) -> bool:
        """The target is a constraint when attainment is not itself an objective."""
        return all(o.id != ATTAINMENT for o in self.objectives)

    def setup(self) -> dict[str, Any]:
        """What makes two runs of the command the same study (compared on resume)."""
        return {"scenario": self.scenario.name, "autoscaler": self.base.label, "kind": self.base.kind,
                "objectives": [o.id for o in self.objectives], "seeds": self.seeds,
                "space": {t.path: t.describe() for t in self.space.params}, "fixed": self.space.fixed,
                "target": self.target if self.constrained else None}


def storage_url(out: Path) -> str:
    return f"sqlite:///{(out / 'study.db').resolve()}"


def _write_ahead(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def open_storage(out: Path) -> optuna.storages.RDBStorage:
    """``OUT/study.db`` in SQLite's write-ahead-log mode with ``synchronous=NORMAL``: a commit appends to
    ``study.db-wal`` without waiting for the disk, where the default rollback journal syncs the file on
    each of the ~12 commits a trial makes (a parameter, an attribute, a tell). 200 trials of 5 parameters,
    asked and told in pairs as a study does: 28.4 s -> 9.5 s of wall time on this machine (load 5). A
    crash of the process still leaves a consistent file (a power cut may drop the last trials; a rerun
    runs them again). WAL needs a local file system (not NFS)."""
    from sqlalchemy import event

    storage = optuna.storages.RDBStorage(storage_url(out))
    event.listen(storage.engine, "connect", _write_ahead)
    storage.engine.dispose()  # the connection opened while creating the tables predates the listener
    return storage


def make_sampler(kind: str, seed: int, total: int) -> optuna.samplers.BaseSampler:
    if kind == "nsga2":
        return optuna.samplers.NSGAIISampler(seed=seed, population_size=max(10, min(50, total // 5)))
    if kind == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return optuna.samplers.TPESampler(seed=seed, multivariate=True)


def open_study(t: Tuning, storage: optuna.storages.RDBStorage) -> optuna.Study:
    """Create the study in ``storage`` (``open_storage(t.out)``) or load it; refuse a stored study with another
    setup. The caller disposes of ``storage.engine`` at the end: closing the last connection folds the
    write-ahead log back into study.db, so the file alone holds the study."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(storage=storage, study_name=STUDY_NAME, load_if_exists=True,
                                directions=[o.direction for o in t.objectives],  # type: ignore[misc]
                                sampler=make_sampler(t.sampler, t.sampler_seed, t.trials))
    stored = study.user_attrs.get("setup")
    if stored is None:
        study.set_user_attr("setup", t.setup())
        with warnings.catch_warnings():  # experimental since Optuna 3.2; optuna-dashboard shows the names
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            study.set_metric_names([o.id for o in t.objectives])
    elif stored != t.setup():
        diff = sorted(k for k in t.setup() if stored.get(k) != t.setup()[k])
        raise UserError(f"holds a study whose {', '.join(diff)} differ{'s' if len(diff) == 1 else ''} "
                        f"({stored.get('autoscaler')} on {stored.get('scenario')})", where=f"--out {t.out}",
                        expected="the same command to resume it, or a fresh --out folder")
    for ft in study.get_trials(deepcopy=False, states=(TrialState.RUNNING, TrialState.WAITING)):
        if ft.state == TrialState.RUNNING:  # its process died: not counted, its number stays taken
            study.tell(ft.number, state=TrialState.FAIL)
    return study


def finished(study: optuna.Study) -> list[FrozenTrial]:
    """Trials this command told (complete, failed or infeasible); not those an interrupted process left."""
    return [ft for ft in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.FAIL))
            if "label" in ft.user_attrs]


def _suggest(trial: Trial, p: Tunable) -> Any:
    if p.kind == "categorical":
        return trial.suggest_categorical(p.path, list(p.choices))
    assert p.low is not None and p.high is not None
    if p.kind == "int":
        return trial.suggest_int(p.path, int(p.low), int(p.high), log=p.log)
    return trial.suggest_float(p.path, float(p.low), float(p.high), log=p.log, step=None if p.log else p.step)


def _tell(study: optuna.Study, t: Tuning, trial: Trial, res: Outcome | str) -> None:
    """Record one trial: its values, metrics and, for a constrained study, the attainment constraint."""
    trial.set_user_attr("label", label(trial.number))
    if isinstance(res, str):  # the config model refused the sampled combination
        trial.set_user_attr("infeasible", res)
        study.tell(trial, state=TrialState.FAIL)
        return
    trial.set_user_attr("metrics", res.metrics)
    if res.attempts > 1:
        trial.set_user_attr("attempts", res.attempts)
    values = res.values(t.objectives)
    if not res.ok or values is None:
        trial.set_user_attr("error", res.error or "an objective has no value (no request finished)")
        study.tell(trial, state=TrialState.FAIL)
        return
    if t.constrained:
        trial.set_constraint(CONSTRAINT, res.constraint(t.target))
    study.tell(trial, values)


def run_batch(study: optuna.Study, t: Tuning, executor: Executor, size: int) -> None:
    """Ask ``size`` trials, run them together, tell them in number order."""
    study.sampler = make_sampler(t.sampler, t.sampler_seed * 1_000_003 + len(study.trials), t.trials)
    asked: list[tuple[Trial, dict[str, Any], AutoscalerConfig | str]] = []
    for _ in range(size):
        trial = study.ask()
        values = rounded({p.path: _suggest(trial, p) for p in t.space.params})
        trial.set_user_attr("values", {**t.space.fixed, **values})
        try:
            cfg: AutoscalerConfig | str = apply(t.base, {**t.space.fixed, **values}).model_copy(
                update={"name": label(trial.number)})
        except (ValueError, UserError) as e:
            cfg = str(e)
        asked.append((trial, values, cfg))
    todo = [p for tr, _, cfg in asked if not isinstance(cfg, str)
            for p in plans(t.scenario, cfg, f"trials/{label(tr.number)}", t.seeds)]
    results = executor.run(todo, t.out, lambda r: None)
    by_trial: dict[str, list[RunOutcome]] = {}
    for r in results:
        by_trial.setdefault(r.dir.split("/")[1], []).append(r)
    for trial, _, cfg in asked:
        _tell(study, t, trial, cfg if isinstance(cfg, str) else outcome(by_trial.get(label(trial.number), []),
                                                                         t.objectives))


def optimize(study: optuna.Study, t: Tuning, executor: Executor, batch: int,
             after_batch: Callable[[], str], progress: Progress) -> None:
    """Run batches until the study holds ``t.trials`` finished trials (the first is the default
    configuration where it lies inside the space)."""
    if not study.trials and t.space.default():
        study.enqueue_trial(t.space.default(), user_attrs={"default": True})
    n = len(finished(study))
    progress(n, t.trials, after_batch() if n else "")
    while n < t.trials:
        run_batch(study, t, executor, min(batch, t.trials - n))
        n = len(finished(study))
        progress(n, t.trials, after_batch())
