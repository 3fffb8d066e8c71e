"""The suite page's content: per scenario the verdict, the cost-vs-attainment scatter, the summary
table, the side-by-side figures and, with several seeds, the pairwise differences.

Rows are (sweep point, autoscaler) groups (``suite_decide.groups``): with one seed a group is one run
and a cell its value; with several seeds (``seed-<n>/`` folders) a cell is the mean over the seeds
with its 95 % interval below it (reports/suite_stats.py), the per-seed values in its tooltip, the
bars carry the interval as error bars and the scatter as whiskers. The best mark (★) goes to the best
mean of a column at a point among the groups that completed, are deployable and whose mean
attainment meets the target. Every number the page shows is also in ``OUT/suite_summary.json``.
"""
from __future__ import annotations

import json
import math
import time
from typing import Any

from scalearena.reports import suite_decide, suite_plots, suite_stats, verdict_plots
from scalearena.reports.catalog import BY_ID, Metric, best_index, cost_tooltip, table_metrics
from scalearena.reports.figures import TimeUnit, autoscaler_colors, page_time_unit
from scalearena.reports.load import ResultSet, Run, natural_key
from scalearena.reports.signal_health import blind_lines


def suite_colors(rs: ResultSet) -> dict[str, str]:
    """One colour per autoscaler for the whole results folder: suite page, its figures and run pages."""
    return autoscaler_colors(r.autoscaler for r in rs.runs)


def _mean(e: Any) -> float | None:
    return None if e.n == 0 or math.isnan(e.mean) else float(e.mean)


def _eligible(rs: ResultSet, group: list[Run], attainment: float | None, target: float) -> bool:
    """May carry a best mark: every seed complete, deployable (not the oracle), mean attainment >= target."""
    return (all(r.summary.get("complete") is not False for r in group) and not suite_decide.is_bound(rs, group[0])
            and attainment is not None and attainment >= target - 1e-12)


def _cell(m: Metric, est: Any, values: list[float | None], run: Run, seeds: list[int | None]) -> dict[str, Any]:
    ci = m.format(est.half_width) if est.n > 1 and not math.isnan(est.half_width) else ""
    title = cost_tooltip(run.summary) if m.id in ("cost_usd", "gpu_hours") and len(values) == 1 else ""
    if len(values) > 1:
        title = "seeds: " + ", ".join(f"{s}: {m.format(v)}" for s, v in zip(seeds, values, strict=True))
    return {"text": m.format(_mean(est)), "ci": ci, "title": title, "best": False}


def _rows(rs: ResultSet, stats: dict[tuple[str, str], dict[str, Any]], metrics: list[Metric], target: float,
          colors: dict[str, str]) -> list[dict[str, Any]]:
    keys = sorted(stats, key=lambda k: (natural_key(k[0]), k[1]))
    rows: list[dict[str, Any]] = []
    for point, a in keys:
        st = stats[(point, a)]
        group: list[Run] = st["runs"]
        links = [(r.seed, "./" + (r.dir / "report.html").relative_to(rs.root).as_posix()) for r in group]
        rows.append({"sweep": point, "autoscaler": a, "color": colors.get(a), "href": links[0][1],
                     "seeds": links if len(group) > 1 else [],
                     "incomplete": any(r.summary.get("complete") is False for r in group),
                     "eligible": _eligible(rs, group, _mean(st["slo_attainment"][0]) if "slo_attainment" in st
                                           else None, target),
                     "cells": [_cell(m, st[m.id][0], st[m.id][1], group[0], st["seeds"]) for m in metrics]})
    for point in {r["sweep"] for r in rows}:
        idx = [i for i, r in enumerate(rows) if r["sweep"] == point and r["eligible"]]
        for j, m in enumerate(metrics):
            values = [_mean(stats[(rows[i]["sweep"], rows[i]["autoscaler"])][m.id][0]) for i in idx]
            for k in best_index(values, m.direction):
                rows[idx[k]]["cells"][j]["best"] = True
    return rows


def _errors(stats: dict[tuple[str, str], dict[str, Any]], cost: Metric) -> dict[tuple[str, str], tuple[float, float]]:
    """(point, autoscaler) -> (cost, attainment) 95 % half widths for the scatter's whiskers."""
    out = {}
    for key, st in stats.items():
        c, att = st[cost.id][0], st["slo_attainment"][0]
        if c.n > 1 or att.n > 1:
            out[key] = tuple(0.0 if math.isnan(e.half_width) else e.half_width for e in (c, att))
    return out  # type: ignore[return-value]  # tuples of two


def _pairs(stats: dict[tuple[str, str], dict[str, Any]], cost: Metric) -> list[dict[str, Any]]:
    """The pairwise differences, formatted (only meaningful with several seeds)."""
    metrics = suite_stats.pair_metrics(cost)
    rows = []
    for d in suite_stats.pair_differences(stats, metrics):
        m = BY_ID.get(d["metric"]) or cost
        diff = "–" if d["diff"] is None else ("+" if d["diff"] >= 0 else "−") + m.format(abs(d["diff"]))
        half = "" if d["half_width"] is None else m.format(d["half_width"])
        rows.append({**d, "label": m.label + (f" ({m.unit})" if m.unit and m.id != "slo_attainment" else ""),
                     "diff_text": diff, "ci_text": f"± {half}" if half else "", "method": "paired t" if d["paired"]
                     else "Welch t", "p_text": "–" if d["p_value"] is None else f"{d['p_value']:.3g}"})
    return rows


def _scenario(name: str, rs: ResultSet, colors: dict[str, str], unit: TimeUnit, metrics: list[Metric],
              cost: Metric, target: float) -> dict[str, Any]:
    runs = [r for r in rs.runs if r.scenario == name]
    stats = suite_stats.group_stats(runs, [*metrics, *(m for m in suite_stats.pair_metrics(cost)
                                                         if m not in metrics), BY_ID["slo_attainment"]])
    seeds = max(len(st["runs"]) for st in stats.values())
    ds = suite_decide.decisions(rs, runs, cost, target)
    label = "cost (GPU-hours)" if cost.id == "gpu_hours" else f"cost ({cost.unit})"
    decision = {"target": target, "verdicts": [suite_decide.sentence(d) for d in ds], "cost_label": label,
                "tables": [{"point": d.point, "rows": suite_decide.table_rows(d)} for d in ds],
                "scatter": verdict_plots.cost_vs_attainment(name, ds, colors, label, _errors(stats, cost))}
    figures = [suite_plots.grouped_bars(name, runs, colors, cost)]
    for point in sorted({p for p, _ in stats}, key=natural_key):
        first = [st["runs"][0] for (p, _), st in sorted(stats.items()) if p == point]
        seed = f" (seed {first[0].seed} of {seeds})" if seeds > 1 else ""
        title = f"{name}{' / ' + point if point else ''}: ready replicas over time{seed}"
        figures.append(suite_plots.replicas_over_time(title, first, colors, unit))
    return {"name": name, "rows": _rows(rs, stats, metrics, target, colors), "figures": figures,
            "slo": suite_decide.slo_text(runs),
            "has_sweep": any(p for p, _ in stats), "description": "", "decision": decision, "seeds": seeds,
            "pairs": _pairs(stats, cost) if seeds > 1 else []}


# The verdict box's one colour, said on the page (docs/reports.md, "The verdict box"): red is kept for what
# went wrong (bound violations, failed gates), never for a scenario that simply has no pick.
VERDICT_KEY = ("green box: every scenario has a pick (✓: a deployable autoscaler meets the target); "
               "amber box: at least one has none (✗)")


def verdict_summary(sections: list[dict[str, Any]]) -> dict[str, Any]:
    """What the verdict box says once rather than per line: the SLO and attainment target its verdicts count
    against (one line when every scenario shares them, else one per scenario), whether every scenario and
    sweep point has a pick (the box's one colour: docs/reports.md), each distinct hint of its lines, and the
    seeds its means are over when every line has as many."""
    verdicts = [v for sc in sections for v in sc["decision"]["verdicts"]]
    slos = [(sc["name"], sc["slo"] or "SLO not recorded", suite_decide.target_text(sc["decision"]["target"]))
            for sc in sections]
    common = len({(slo, t) for _, slo, t in slos}) == 1
    seeds = sorted({v["seeds"] for v in verdicts})
    return {"slo_common": slos[0][1:] if common and slos else None, "slo_per": [] if common else slos,
            "key": VERDICT_KEY,
            "all_picked": all(v["ok"] for v in verdicts),
            "seeds": seeds[0] if len(seeds) == 1 else None,
            "hints": list(dict.fromkeys(v["hint"] for v in verdicts if v["hint"]))}


def scalar_text(key: str, value: Any) -> Any:
    """A suite.json value as a reader takes it in: ``*_unix`` seconds as a UTC time, booleans as yes/no."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if key.endswith("_unix") and isinstance(value, int | float):
        return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(value))
    return value


def blind_runs(rs: ResultSet) -> list[dict[str, str]]:
    """Runs whose autoscaler never received a value for a signal (summary ``signals_missing``) or read one
    value all run without scaling (``flat_rows``), one line per scenario, autoscaler and signal (seeds of
    one run group say it once), linked to the first run."""
    out: dict[tuple[str, str, str], dict[str, str]] = {}
    for r in sorted(rs.runs, key=lambda r: natural_key(r.key)):
        for signal, text in blind_lines(r.summary):
            out.setdefault((r.scenario, r.autoscaler, signal), {
                "run": f"{r.scenario}/{r.autoscaler}", "text": text,
                "href": "./" + (r.dir / "report.html").relative_to(rs.root).as_posix()})
    return list(out.values())


def suite_context(rs: ResultSet, min_attainment: float | None = None) -> dict[str, Any]:
    """Everything suite.html shows."""
    suite = rs.suite or {}
    scalars = [(k, scalar_text(k, v)) for k, v in sorted(suite.items()) if not isinstance(v, dict | list)]
    for k in ("versions", "git"):
        if isinstance(suite.get(k), dict):
            scalars += [(f"{k}.{kk}", vv) for kk, vv in sorted(suite[k].items()) if not isinstance(vv, dict | list)]
    headline = [(k, suite[k]) for k in ("seed", "git_sha", "cluster") if k in suite and suite[k] is not None]
    colors, unit = suite_colors(rs), page_time_unit(rs.runs)
    metrics = table_metrics([r.summary for r in rs.runs])
    cost = next((m for m in metrics if m.id == "cost_usd"), BY_ID["gpu_hours"])
    sections = [_scenario(n, rs, colors, unit, metrics, cost, suite_decide.target_for(rs, n, min_attainment))
                for n in rs.scenarios()]
    return {"scenarios": sections, "n_runs": len(rs.runs), "autoscalers": sorted(colors.items()), "colors": colors,
            "headings": [{"label": m.label, "unit": m.unit, "id": m.id} for m in metrics], "suite": rs.suite,
            "suite_scalars": scalars, "suite_json": json.dumps(suite, indent=2, sort_keys=True, default=str),
            "headline": headline, "summary_file": suite_stats.SUMMARY_FILE, "blind": blind_runs(rs),
            "box": verdict_summary(sections)}


def summary_json(rs: ResultSet) -> dict[str, Any]:
    """``OUT/suite_summary.json`` (reports/suite_stats.py) in the page's metrics and cost unit."""
    metrics = table_metrics([r.summary for r in rs.runs])
    cost = next((m for m in metrics if m.id == "cost_usd"), BY_ID["gpu_hours"])
    return suite_stats.suite_summary(rs, metrics, cost)
