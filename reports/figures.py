"""Shared plotting plumbing: colours, the page's time unit, thinning, and figure specs for Chart.js.

A figure is data, not pixels: Python reduces a run's files to the few thousand points a figure
shows and writes them, as Chart.js configurations, into the page (``<script
type="application/json">``); the browser draws them with Chart.js 4 (MIT, vendored in
reports/static with its annotation plugin, inlined once per page, so a report opens offline with
nothing beside it). Rendering a run page this way costs tens of milliseconds of Python instead of
the ~1.7 s matplotlib spent drawing five PNG figures, which is what lets ``make bench`` render 47
pages in a few seconds (docs/reports.md, "Figures"). The pages gain tooltips and legends that
show and hide series on click.

The spec is Chart.js's own config plus a few keys that reports/static/scalearena-charts.js
resolves (JSON cannot carry functions): a dataset's ``xy`` ([xs, ys], zipped into points),
``hatch`` (a failure cause's hatch over the dataset's colour), ``key`` (the legend entry that shows
and hides it), ``dodge`` (an offset drawn but not reported in the tooltip); a scale's ``fmt``
(``log125``: 1-2-5 labels on a log axis, ``pct``, ``int``); a panel's ``height`` (px), ``span``
(grid columns) and ``title``. Legends are HTML (``legend_item``), so their text wraps and can be
checked for clipping like any other text of the page.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from scalearena.reports.load import Run

STATIC = Path(__file__).parent / "static"
# Inlined into every page with figures, in this order (the glue last: it registers the plugin).
SCRIPTS = ("chart.umd.min.js", "chartjs-plugin-annotation.min.js", "scalearena-charts.js")
STATUS_COLORS = {"ok": "#4c9f70", "rejected": "#d1495b", "killed": "#8e44ad", "timeout": "#edae49",
                 "too_long": "#3d7ea6", "error": "#555555"}
MAX_POINTS = 1500
LOAD_GREY = "#949494"  # offered-load shading and failures: never an autoscaler's colour

# seaborn's "colorblind" palette (0173b2 ... 56b4e9) without its grey (#949494: the grey of
# failures and of the offered-load shading), its pale pink and yellow (hard to see as thin lines)
# moved last; then darker shades, each the farthest (CIE L*a*b*) from every colour before it: navy
# (Delta E 50 from the nearest), dark red, dark green, teal, plum, gold (gold is 15 from the orange:
# the paper suite's 8th autoscaler, wva-headroom, looked like keda's).
_CB = ["#0173b2", "#de8f05", "#029e73", "#d55e00", "#cc78bc", "#ca9161", "#fbafe4", "#949494", "#ece133",
       "#56b4e9"]
SERIES_COLORS = [c for c in _CB if c not in ("#949494", "#fbafe4", "#ece133")] + \
    ["#001c7f", "#8c0800", "#12711c", "#006374", "#591e71", "#b8850a", "#fbafe4", "#ece133"]
TimeUnit = tuple[float, str]  # divisor from seconds, axis label


def palette(names: Sequence[str]) -> dict[str, str]:
    """A stable colour per name (variants or autoscalers), colour-blind safe, never grey. Pass every name a
    page shows (sorted), so one autoscaler keeps its colour in every figure of the page and its run pages."""
    return {n: SERIES_COLORS[i % len(SERIES_COLORS)] for i, n in enumerate(names)}


def autoscaler_colors(labels: Iterable[str]) -> dict[str, str]:
    """One colour per autoscaler of a results folder (its suite page, figures and run pages); the suite's
    workers colour the run pages they write with it from the plans, the report from the summaries."""
    return palette(sorted(set(labels)))


def time_axis(seconds: float) -> TimeUnit:
    """Divisor and axis label: minutes for runs longer than 10 min, else seconds. A page calls this once,
    with its longest run, and hands the result to every figure so the unit never switches on a page."""
    return (60.0, "time (min)") if seconds > 600 else (1.0, "time (s)")


def page_time_unit(runs: list[Run]) -> TimeUnit:
    """One time unit for a page, from its longest run (duration_s, else its last sample)."""
    longest = 0.0
    for r in runs:
        d = r.summary.get("duration_s")
        longest = max(longest, float(d) if isinstance(d, int | float) else 0.0)
    if longest == 0.0:
        longest = max((float(r.timeseries["t_s"].max()) for r in runs if not r.timeseries.empty), default=0.0)
    return time_axis(longest)


def thin(df: pd.DataFrame, max_rows: int = MAX_POINTS) -> pd.DataFrame:
    """Every k-th row so that at most ``max_rows`` remain (keeps the last row)."""
    if len(df) <= max_rows:
        return df
    step = int(np.ceil(len(df) / max_rows))
    idx = list(range(0, len(df), step))
    if idx[-1] != len(df) - 1:
        idx.append(len(df) - 1)
    return df.iloc[idx]


@cache
def page_scripts() -> str:
    """The JavaScript every page with figures inlines (read once per process)."""
    return "\n".join((STATIC / name).read_text(encoding="utf-8") for name in SCRIPTS)


def nums(values: Any, digits: int = 3) -> list[float | None]:
    """JSON-ready numbers, rounded (a figure needs no more) with NaN as null (a gap in a line)."""
    a = np.round(np.asarray(values, dtype=float), digits)
    return [None if v != v else v for v in a.tolist()]  # v != v: NaN


def dataset(label: str, x: Any, y: Any, color: str, *, digits: int = 3, **opts: Any) -> dict[str, Any]:
    """A line (default) or other dataset over numeric x; ``opts`` are Chart.js dataset options."""
    return {"label": label, "xy": [nums(x, digits), nums(y, digits)], "borderColor": color,
            "backgroundColor": color, "pointRadius": 0, "borderWidth": 1.6, **opts}


def axis(title: str, **opts: Any) -> dict[str, Any]:
    """A linear axis with a title; ``opts``: Chart.js scale options (min, position, fmt, ...). A ``min`` or
    ``max`` that is not a round number bounds the axis without printing it as a tick."""
    ticks = {"includeBounds": False, **opts.pop("ticks", {})}
    return {"type": "linear", "title": {"display": True, "text": title}, "ticks": ticks, **opts}


def panel(datasets: list[dict[str, Any]], scales: dict[str, Any], *, height: int = 320, title: str = "",
          kind: str = "line", span: int = 1, labels: list[str] | None = None, **options: Any) -> dict[str, Any]:
    """One Chart.js chart: datasets, scales and options, plus the page's layout keys."""
    spec: dict[str, Any] = {"type": kind, "data": {"datasets": datasets}, "height": height, "span": span,
                            "title": title, "options": {"scales": scales, **options}}
    if labels is not None:
        spec["data"]["labels"] = labels
    return spec


def annotation_line(value: float, color: str, *, vertical: bool = False, dash: Sequence[int] = (6, 4),
                    width: float = 1.2, scale: str | None = None) -> dict[str, Any]:
    """A horizontal (or vertical) rule across the chart (chartjs-plugin-annotation line)."""
    key = scale or ("x" if vertical else "y")
    return {"type": "line", "scaleID": key, "value": value, "borderColor": color, "borderWidth": width,
            "borderDash": list(dash)}


def legend_item(label: str, color: str, kind: str = "line", key: str | None = None) -> dict[str, Any]:
    """An HTML legend entry; ``kind``: line, dash, dot, box, hatch-<cause>, marker, star, ring.
    ``key`` ties it to the datasets it shows and hides (click)."""
    return {"label": label, "color": color, "kind": kind, "key": key}


def figure(fid: str, title: str, caption: str, panels: list[dict[str, Any]],
           legend: list[dict[str, Any]] | None = None, columns: int = 1) -> dict[str, Any]:
    """What a template needs to place one figure: its panels in a grid, its legend and caption."""
    return {"id": fid, "title": title, "caption": caption, "panels": panels, "legend": legend or [],
            "columns": columns}


def empty_figure(fid: str, title: str, message: str, caption: str = "") -> dict[str, Any]:
    """A figure with nothing to draw: the reason in words instead of an empty chart."""
    return {"id": fid, "title": title, "caption": caption, "panels": [], "legend": [], "columns": 1,
            "empty": message}
