"""What a study leaves in OUT, rewritten atomically after every batch.

- ``trials.parquet``: one row per finished trial: number, label, state (complete / failed /
  infeasible), ``params.<path>`` for every searched or pinned parameter, the metrics averaged over
  its seeds (trials.REPORTED), ``meets_target``, ``on_front``;
- ``front.parquet``: the rows of ``trials.parquet`` on the Pareto front of the study's objectives
  (Optuna's ``best_trials``: among the trials that meet the target when it is a constraint);
- ``best.yaml``: the cheapest trial meeting the target (reports/verdict.py decides, as on the suite
  page), as an entry to paste under a scenario's ``autoscalers:``;
- ``tune.json``: the setup, the default configuration's and the oracle's metrics, the oracle frontier's
  points (``frontier``, as OUT/frontier.json of a suite), the pick, and how to resume and inspect the study.
"""
from __future__ import annotations

import io
import sys
from pathlib import Path
from typing import Any

import optuna
import pandas as pd
import yaml
from optuna.trial import FrozenTrial, TrialState

from scalearena.controllers.base import AutoscalerConfig
from scalearena.harness.sizing.frontier import document
from scalearena.harness.tuning.objectives import ATTAINMENT, cost_axis
from scalearena.harness.tuning.space import apply
from scalearena.harness.tuning.study import Tuning, finished, storage_url
from scalearena.harness.tuning.trials import COMPILED, REPORTED, Outcome, as_written
from scalearena.reports.bounds import frontier_points
from scalearena.reports.results import atomic_write_bytes, atomic_write_json
from scalearena.reports.tune import study_points, study_verdict
from scalearena.reports.verdict import BOUND_KINDS, Verdict


def state(ft: FrozenTrial) -> str:
    if ft.state == TrialState.COMPLETE:
        return "complete"
    return "infeasible" if "infeasible" in ft.user_attrs else "failed"


def front_numbers(study: optuna.Study) -> set[int]:
    """Trial numbers on the Pareto front of the study's objectives (Optuna's, constraint-aware)."""
    return {ft.number for ft in study.best_trials}


def trials_frame(study: optuna.Study, t: Tuning) -> pd.DataFrame:
    front = front_numbers(study)
    rows = []
    for ft in sorted(finished(study), key=lambda f: f.number):
        metrics = ft.user_attrs.get("metrics") or {}
        att = metrics.get(ATTAINMENT)
        row: dict[str, Any] = {"number": ft.number, "label": ft.user_attrs["label"], "state": state(ft),
                               "default": bool(ft.user_attrs.get("default")),
                               "error": ft.user_attrs.get("infeasible") or ft.user_attrs.get("error"),
                               "attempts": int(ft.user_attrs.get("attempts", 1))}
        row.update({f"params.{k}": v for k, v in (ft.user_attrs.get("values") or {}).items()})
        row.update({m: metrics.get(m) for m in REPORTED})
        row["meets_target"] = ft.state == TrialState.COMPLETE and att is not None and att >= t.target - 1e-12
        row["on_front"] = ft.number in front
        rows.append(row)
    return pd.DataFrame(rows)


def verdict(frame: pd.DataFrame, t: Tuning, refs: dict[str, Outcome]) -> Verdict:
    """The verdict the report shows (reports/tune.py decides, from the same table)."""
    references = {k: {"ok": r.ok, "metrics": r.metrics, "seeds": r.seeds} for k, r in refs.items()}
    cost = cost_axis(t.objectives)
    return study_verdict(study_points(frame, references, cost.id), t.target, frontier_points(t.frontier_rows, cost))


def tuned_config(t: Tuning, values: dict[str, Any]) -> AutoscalerConfig:
    return apply(t.base, values).model_copy(update={"name": f"{t.base.label}-tuned"})


def snippet(t: Tuning, ft: FrozenTrial) -> str:
    """The trial's configuration as a list entry for ``autoscalers:``, with its numbers in a comment."""
    cfg = as_written(tuned_config(t, ft.user_attrs.get("values") or {}))
    data = cfg.model_dump(mode="json", exclude_defaults=True, exclude=set(COMPILED))
    data = {"kind": cfg.kind, **{k: v for k, v in data.items() if k != "kind"}}
    m = ft.user_attrs.get("metrics") or {}
    cost = cost_axis(t.objectives)
    seeds = f"seed {t.seeds[0]}" if len(t.seeds) == 1 else "mean over seeds " + ", ".join(str(s) for s in t.seeds)
    head = (f"# scalearena tune: {t.base.label} on {t.scenario.name}, {ft.user_attrs['label']}: {cost.label} "
            f"{cost.format(m.get(cost.id))} {cost.unit}, SLO attainment {_pct(m.get(ATTAINMENT))} "
            f"(target {_pct(t.target)}), goodput {_num(m.get('goodput_rps'))} req/s; {seeds}.\n"
            + ("# The oracle reads the future arrival schedule: a hindsight bound, not a deployable configuration.\n"
               if t.base.kind in BOUND_KINDS else "")
            + "# Paste under a scenario's `autoscalers:`.\n")
    buf = io.StringIO()
    yaml.safe_dump([data], buf, sort_keys=False, default_flow_style=False)
    return head + buf.getvalue()


def _pct(v: Any) -> str:
    return "–" if v is None else f"{float(v):.1%}"


def _num(v: Any) -> str:
    return "–" if v is None else f"{float(v):.3f}"


def write(study: optuna.Study, t: Tuning, refs: dict[str, Outcome]) -> tuple[pd.DataFrame, Verdict]:
    """Rewrite every output file; returns the trials table and the verdict over it."""
    frame = trials_frame(study, t)
    _write_parquet(t.out / "trials.parquet", frame)
    _write_parquet(t.out / "front.parquet", frame[frame["on_front"]] if not frame.empty else frame)
    v = verdict(frame, t, refs)
    best = next((ft for ft in finished(study) if v.pick and ft.user_attrs["label"] == v.pick.name), None)
    if best is not None:
        atomic_write_bytes(t.out / "best.yaml", snippet(t, best).encode())
    else:
        (t.out / "best.yaml").unlink(missing_ok=True)
    atomic_write_json(t.out / "tune.json", _meta(t, frame, v, refs, best))
    return frame, v


def _write_parquet(path: Path, df: pd.DataFrame) -> None:
    buf = io.BytesIO()
    df.to_parquet(buf, index=False)
    atomic_write_bytes(path, buf.getvalue())


def _meta(t: Tuning, frame: pd.DataFrame, v: Verdict, refs: dict[str, Outcome], best: FrozenTrial | None
          ) -> dict[str, Any]:
    from scalearena.harness.run.meta import git_sha, versions

    counts = frame["state"].value_counts().to_dict() if not frame.empty else {}
    return {
        "kind": "tune", **t.setup(), "target": t.target, "cost_metric": cost_axis(t.objectives).id,
        "constrained": t.constrained, "sampler": t.sampler, "sampler_seed": t.sampler_seed,
        "trials_requested": t.trials, "trials": {s: int(n) for s, n in counts.items()},
        "complete": int(len(frame)) >= t.trials,
        "space": [{"path": p.path, "kind": p.kind, "range": p.describe(), "default": p.default,
                   "description": p.description} for p in t.space.params],
        "references": {k: {"ok": r.ok, "metrics": r.metrics, "error": r.error, "seeds": r.seeds, "attempts": r.attempts}
                       for k, r in refs.items()},
        "frontier": document(t.frontier, t.frontier_rows, t.perfect_rows) if t.frontier is not None else None,
        "pick": v.pick.name if v.pick else None, "best_trial": best.number if best else None,
        "best_values": best.user_attrs.get("values") if best else None,
        "storage": storage_url(t.out), "dashboard": f"optuna-dashboard {storage_url(t.out)}",
        "command": " ".join(sys.argv), "versions": versions(), "git_sha": git_sha(),
    }
