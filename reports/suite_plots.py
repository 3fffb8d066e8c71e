"""The per-suite figures: every autoscaler side by side.

Grouped bars per sweep point (``rate-2``, ``rate-3``, ...) with one bar per
autoscaler, the WVA paper's Figs. 4-6 (goodput rather than throughput: a request
served past its SLO is not served; failures, TTFT, ITL) plus cost and energy;
and the replica count of every autoscaler over time on one axis. Bars read their
values from summary.json through the metric catalog.

The page decides, once, each autoscaler's colour, the time unit and the cost
unit, and passes them in: the same autoscaler is the same colour in every
figure. Failure causes are black hatching over the autoscaler's colour (white in
the legend), never a fill colour of their own, so no autoscaler colour can be
mistaken for one. Replica lines of different autoscalers are dodged by a
fraction of a replica so equal counts stay visible side by side instead of
hiding each other (tooltips report the true count).
"""
from __future__ import annotations

import math
from typing import Any

from scalearena.reports.catalog import BY_ID, Metric
from scalearena.reports.figures import (
    LOAD_GREY,
    TimeUnit,
    axis,
    dataset,
    empty_figure,
    figure,
    legend_item,
    nums,
    palette,
    panel,
    thin,
    time_axis,
)
from scalearena.reports.load import Run, natural_key
from scalearena.reports.stats import estimate

PANELS = ("goodput_rps", "failures", "ttft_mean", "itl_mean", "cost", "energy_kwh")  # cost: the page's unit
DODGE = 0.3  # replicas: total spread of the lines of one plot
FAILURE_HATCHES = {"rejected": "", "killed": "////", "timeout": "....", "too_long": "\\\\",
                   "error": "xxxx"}
PRE = "after"  # Chart.js for matplotlib's where="pre" (reports/run_plots.py)


def _groups(runs: list[Run]) -> tuple[list[str], list[str]]:
    points = sorted({r.point or "all" for r in runs}, key=natural_key)
    autoscalers = sorted({r.autoscaler for r in runs})
    return points, autoscalers


def _bar(label: str, values: list[float | None], color: str, key: str, **opts: Any) -> dict[str, Any]:
    return {"label": label, "data": nums([float("nan") if v is None else v for v in values], 4),
            "backgroundColor": color, "stack": key, "key": key, "borderColor": "#000000", "borderWidth": 0,
            **opts}


def _seed_mean(group: list[Run] | None, value: Any) -> tuple[float | None, float | None]:
    """Mean over a group's seeds and its 95 % half width (None with one seed or no run)."""
    if not group:
        return None, None
    e = estimate([value(r.summary) for r in group])
    return (None if e.n == 0 else e.mean), (None if e.n < 2 or math.isnan(e.half_width) else e.half_width)


def _errors(pairs: list[tuple[float | None, float | None]]) -> list[list[float] | None] | None:
    out = [None if m is None or h is None else [round(m, 4), round(h, 4)] for m, h in pairs]
    return out if any(out) else None


def _bar_panel(metric_id: str, points: list[str], autoscalers: list[str], cell: dict[tuple[str, str], list[Run]],
               colors: dict[str, str], cost: Metric | None) -> dict[str, Any]:
    metric = (cost or BY_ID["cost"]) if metric_id == "cost" else BY_ID[metric_id]
    data = []
    for a in autoscalers:
        groups = [cell.get((p, a)) for p in points]
        if metric_id == "failures":
            for cause, hatch in FAILURE_HATCHES.items():
                vals = [_seed_mean(g, lambda s, c=cause: float((s.get("failures") or {}).get(c, 0)))[0]
                        for g in groups]
                data.append(_bar(f"{a}: {cause}", vals, colors[a], f"a:{a}", hatch=hatch or None,
                                 borderWidth=0.4))
            data[-1]["errors"] = _errors([_seed_mean(g, metric.value) for g in groups])  # on the stack's total
        else:
            means = [_seed_mean(g, metric.value) for g in groups]
            data.append(_bar(a, [m for m, _ in means], colors[a], f"a:{a}", errors=_errors(means)))
    title = metric.label if metric.id != "gpu_hours" else "Cost (GPU-hours)"
    scales: dict[str, Any] = {
        "x": {"stacked": True, "grid": {"display": False}},
        "y": {"stacked": True, "beginAtZero": True, "title": {"display": True, "text": metric.unit or metric.label}}}
    tops = [e[0] + e[1] for ds in data for e in ds.get("errors") or [] if e]
    if tops:
        scales["y"]["suggestedMax"] = round(max(tops), 4)  # the whiskers stay inside the panel
    return panel(data, scales, kind="bar", labels=points, height=250, title=title,
                 interaction={"mode": "nearest", "axis": "x", "intersect": True})


def grouped_bars(scenario: str, runs: list[Run], colors: dict[str, str] | None = None,
                 cost: Metric | None = None) -> dict[str, Any]:
    """One figure per scenario: 2 x 3 panels of grouped bars (x: sweep point, hue: autoscaler); with
    several seeds each bar is their mean with its 95 % interval as an error bar."""
    points, autoscalers = _groups(runs)
    colors = colors or palette(autoscalers)
    cell: dict[tuple[str, str], list[Run]] = {}
    for r in sorted(runs, key=lambda r: r.seed or 0):
        cell.setdefault((r.point or "all", r.autoscaler), []).append(r)
    panels = [_bar_panel(m, points, autoscalers, cell, colors, cost) for m in PANELS]
    legend = [legend_item(a, colors[a], "box", f"a:{a}") for a in autoscalers]
    legend += [legend_item(f"failed: {c}", "#ffffff", f"hatch-{c}") for c in FAILURE_HATCHES]
    return figure(f"bars-{scenario}", f"{scenario}: autoscalers side by side",
                  "Per sweep point, one bar per autoscaler: goodput, failures by cause (hatched: killed ////, "
                  "timeout ...., too_long \\\\\\\\, error xxxx; plain: rejected), mean TTFT, mean ITL, cost, energy "
                  "(TDP). With several seeds: means, whiskers the 95 % interval.", panels, legend, columns=3)


def replicas_over_time(title: str, runs: list[Run], colors: dict[str, str] | None = None,
                       unit: TimeUnit | None = None) -> dict[str, Any]:
    """Total ready replicas of each autoscaler on one axis, offered load behind them."""
    caption = ("Total ready replicas of each autoscaler (lines dodged by up to ±0.15 replica so equal counts stay "
               "visible; tooltips give the true count); shaded: offered load.")
    series = [(r.autoscaler, r.timeseries) for r in runs if not r.timeseries.empty]
    fid = "replicas-" + title.split(":")[0].replace(" / ", "-").replace(" ", "_")
    if not series:
        return empty_figure(fid, title, "no timeseries recorded", caption)
    end = max(float(ts["t_s"].max()) for _, ts in series)
    div, xlabel = unit or time_axis(end)
    colors = colors or palette(sorted({a for a, _ in series}))
    load = series[0][1].groupby(["t_s", "model"])["offered_rps"].first().groupby("t_s").sum()
    load = thin(load.to_frame()).iloc[:, 0]
    data = []
    top = 0.0
    for i, (a, ts) in enumerate(series):
        total = ts.groupby("t_s")["ready_replicas"].sum()
        top = max(top, float(total.max()))
        total = thin(total.to_frame()).iloc[:, 0]
        dodge = round((i - (len(series) - 1) / 2) * DODGE / max(len(series) - 1, 1), 4)
        data.append(dataset(a, total.index.to_numpy() / div, total.to_numpy() + dodge, colors[a], stepped=PRE,
                            key=f"a:{a}", dodge=dodge, yAxisID="y"))
    data.append(dataset("offered load (req/s)", load.index.to_numpy() / div, load.to_numpy(), LOAD_GREY + "40",
                        stepped=PRE, fill="origin", borderWidth=0, yAxisID="y2", key="load", order=10))
    scales = {"x": axis(xlabel, min=0, max=round(end / div, 3)),
              "y": axis("ready replicas (all variants)", min=0, max=top + 1, fmt="int"),
              "y2": axis("offered load (req/s, shaded)", min=0, position="right", grid={"drawOnChartArea": False})}
    legend = [legend_item(a, colors[a], "line", f"a:{a}") for a, _ in series]
    legend.append(legend_item("offered load", LOAD_GREY, "area", "load"))
    return figure(fid, title, caption, [panel(data, scales, height=340)], legend)
