"""The report page of a tuning study (``scalearena tune``): OUT/report.html, from OUT's files alone.

Leads with the verdict: the cheapest configuration meeting the SLO-attainment target, next to the
configuration the scenario runs today and the oracle's bound. Then the suite page's cost-vs-attainment
scatter (reports/verdict_plots.py) with every trial as a dot, the study's Pareto front, the default
configuration and the oracle; the front as a table with each configuration's parameters and regret;
the best configuration as the snippet to paste; the study's setup and how to resume or inspect it.
The decision is reports/verdict.py's, as on the suite page: ``study_points`` and ``study_verdict``
are also what ``scalearena tune`` writes best.yaml from, so the page and the file cannot disagree.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from scalearena.contracts.errors import UserError
from scalearena.reports import verdict_plots
from scalearena.reports.bounds import bound_rows, frontier_points, perfect_reference
from scalearena.reports.catalog import BY_ID
from scalearena.reports.report import _write_html, environment, inputs_hash, stored_hash
from scalearena.reports.suite_decide import PointDecision, sentence, table_rows
from scalearena.reports.verdict import BOUND_KINDS, Point, Verdict, decide

REFERENCE_COLORS = {"default": "#cf222e", "oracle": "#1a7f37"}
FRONT_ROWS = 40  # front trials listed in the table (cheapest first)


def _f(v: Any) -> float | None:
    return None if v is None or (isinstance(v, float) and pd.isna(v)) else float(v)


def study_points(trials: pd.DataFrame, references: dict[str, dict[str, Any]], cost_id: str) -> list[Point]:
    """Complete trials, then the default configuration and the oracle (the bound), as verdict points."""
    rows = trials.to_dict("records") if not trials.empty else []
    out = [Point(name=str(r["label"]), cost=_f(r.get(cost_id)), gpu_hours=_f(r.get("gpu_hours")),
                 attainment=_f(r.get("slo_attainment")), goodput_rps=_f(r.get("goodput_rps")))
           for r in rows if r.get("state") == "complete"]
    for name, ref in references.items():
        m = ref.get("metrics") or {}
        if ref.get("ok"):
            out.append(Point(name=name, cost=_f(m.get(cost_id)), gpu_hours=_f(m.get("gpu_hours")),
                             attainment=_f(m.get("slo_attainment")), goodput_rps=_f(m.get("goodput_rps")),
                             bound=name == "oracle", n=int(ref.get("seeds") or 1)))
    return out


def study_verdict(points: list[Point], target: float, frontier: list[Point] | None = None) -> Verdict:
    """The cheapest trial meeting the target, the oracle (and its frontier, when run) as the bound. The default
    configuration is drawn as a reference, not a candidate (it ran as trial 0 too when it lies inside the space)."""
    return decide([p for p in points if p.name != "default"], target, frontier or [])


def _load(out: Path) -> tuple[dict[str, Any], pd.DataFrame]:
    meta_path, trials_path = out / "tune.json", out / "trials.parquet"
    if not meta_path.is_file() or not trials_path.is_file():
        raise UserError("not a tuning study (no tune.json and trials.parquet)", where=str(out))
    return json.loads(meta_path.read_text(encoding="utf-8")), pd.read_parquet(trials_path)


def _param_cols(trials: pd.DataFrame) -> list[str]:
    return [c for c in trials.columns if c.startswith("params.")]


def _front_rows(trials: pd.DataFrame, d: PointDecision, cost_id: str) -> list[dict[str, Any]]:
    rows = {r["name"]: r for r in table_rows(d)}
    front = trials[trials["on_front"]].sort_values([cost_id, "number"]) if not trials.empty else trials
    out = []
    for r in front.head(FRONT_ROWS).to_dict("records"):
        row = rows.get(str(r["label"]))
        params = {c.removeprefix("params."): r[c] for c in _param_cols(trials)}
        out.append({"label": r["label"], "params": ", ".join(f"{k}={_fmt(v)}" for k, v in params.items()),
                    "cost": row["cost"] if row else BY_ID[cost_id].format(_f(r.get(cost_id))),
                    "attainment": row["attainment"] if row else "–", "goodput": row["goodput"] if row else "–",
                    "regret": row["regret"] if row else "–", "meets": bool(r.get("meets_target")),
                    "violation": bool(row and row["violation"]), "note": row["regret_note"] if row else "",
                    "pick": bool(row and row["pick"]), "default": bool(r.get("default"))})
    return out


def _fmt(v: Any) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


def context(out: Path) -> dict[str, Any]:
    meta, trials = _load(out)
    cost = BY_ID[meta.get("cost_metric") or "cost"]
    target = float(meta["target"])
    pts = study_points(trials, meta.get("references") or {}, cost.id)
    rows, perfect = bound_rows(meta.get("frontier"))
    d = PointDecision("", study_verdict(pts, target, frontier_points(rows, cost)),
                      sorted(pts, key=lambda p: (p.cost is None, p.cost or 0.0)), cost, perfect_reference(perfect, cost))
    label = "cost (GPU-hours)" if cost.id == "gpu_hours" else f"{cost.label.lower()} ({cost.unit})"
    default = next((p for p in pts if p.name == "default"), None)
    best_yaml = (out / "best.yaml").read_text(encoding="utf-8") if (out / "best.yaml").is_file() else None
    counts = meta.get("trials") or {}
    return {"m": meta, "v": sentence(d, noun="configuration"), "d": d, "cost_label": label,
            "default": default, "saving": _saving(d.verdict, default),
            "scatter": _scatter(meta["scenario"], d, label),
            "front": _front_rows(trials, d, cost.id), "n_front": int(trials["on_front"].sum()) if not trials.empty else 0,
            "best_yaml": best_yaml, "counts": counts, "n_trials": int(sum(counts.values())), "target": target,
            "cost_unit": cost.unit, "fmt_cost": cost.format, "hindsight": meta.get("kind") in BOUND_KINDS}


def _scatter(scenario: str, d: PointDecision, label: str) -> dict[str, Any]:
    fig = verdict_plots.cost_vs_attainment(scenario, [d], REFERENCE_COLORS, label)
    bound = ("solid line: the bound, the oracle frontier's lower hull (diamonds: its runs)" if
             any(p.frontier for p in d.verdict.frontier.usable) else "dotted at its cost")
    fig["caption"] = (f"One dot per complete trial ({label}, mean over its seeds); blue: on the Pareto front of cost "
                      f"and attainment; red: the scenario's configuration (default); star: the oracle (a bound); "
                      f"{bound}; dashed: the front; circled: the verdict; shaded: attainments meeting the target.")
    return fig


def _saving(v: Verdict, default: Point | None) -> str | None:
    if v.pick is None or default is None or v.pick.cost is None or default.cost in (None, 0):
        return None
    change = v.pick.cost / default.cost - 1  # type: ignore[operator]
    return f"{abs(change):.1%} {'cheaper' if change < 0 else 'dearer'} than the scenario's configuration"


def write_tune_report(out_dir: str | Path, force: bool = False) -> Path:
    """Write OUT/report.html for a tuning study (skipped when its inputs did not change, unless ``force``)."""
    out = Path(out_dir)
    page = out / "report.html"
    digest = inputs_hash([out / "tune.json", out / "trials.parquet", out / "best.yaml"])
    if force or stored_hash(page) != digest:
        html = environment().get_template("tune.html").render(**context(out), inputs_hash=digest)
        _write_html(page, html)
    return page
