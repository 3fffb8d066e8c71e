"""Shared plotting plumbing: Agg backend, one theme, figures inlined as PNG.

Figures are rendered to base64 PNG data URIs so report.html opens offline
with nothing beside it. Sizes are chosen for a 1366 px laptop screen (an
11 in x 100 dpi figure is 1100 px wide); long series are thinned before
plotting so a 40-run suite renders in seconds.
"""
from __future__ import annotations

import base64
import io
from collections.abc import Callable, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.text  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

DPI = 100
WIDTH_IN = 11.0
STATUS_COLORS = {"ok": "#4c9f70", "rejected": "#d1495b", "killed": "#8e44ad", "timeout": "#edae49",
                 "too_long": "#3d7ea6", "error": "#555555"}
MAX_POINTS = 1500

sns.set_theme(context="notebook", style="whitegrid", font_scale=0.9)
plt.rcParams.update({"figure.dpi": DPI, "savefig.dpi": DPI, "axes.titleweight": "bold", "legend.fontsize": 8,
                     "legend.framealpha": 0.85, "axes.titlesize": 11})


# seaborn's colour-blind palette without its grey (#949494: the grey of failures and of the offered-load
# shading), its pale pink and yellow (hard to see as thin lines) moved last; then darker shades, those
# least like the first seven first (gold, teal, plum before navy, dark green, dark red).
_CB = sns.color_palette("colorblind").as_hex()
SERIES_COLORS = [c for c in _CB if c not in ("#949494", "#fbafe4", "#ece133")] + \
    ["#b8850a", "#006374", "#591e71", "#001c7f", "#12711c", "#8c0800", "#fbafe4", "#ece133"]
TimeUnit = tuple[float, str]  # divisor from seconds, axis label


def palette(names: Sequence[str]) -> dict[str, str]:
    """A stable colour per name (variants or autoscalers), colour-blind safe, never grey. Pass every name a
    page shows (sorted), so one autoscaler keeps its colour in every figure of the page and its run pages."""
    return {n: SERIES_COLORS[i % len(SERIES_COLORS)] for i, n in enumerate(names)}


# Called with each figure after it is drawn, before it is closed (the legibility test collects clipped text).
RENDER_AUDITS: list[Callable[[plt.Figure], None]] = []


def clipped_texts(fig: plt.Figure, tolerance_px: float = 1.0) -> list[str]:
    """Legend entries, titles, axis labels and annotations that extend past the figure's edges once drawn:
    such text is cut off in the PNG. Compares each text's rendered extent with the canvas. (Tick labels
    are left out: matplotlib keeps undrawn ones beyond the axis limits.)"""
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]  # Agg canvas; the stub types the base class
    texts: list[matplotlib.text.Text] = [t for lg in fig.legends for t in lg.get_texts()] + list(fig.texts)
    for ax in fig.axes:
        legend = ax.get_legend()
        texts += list(legend.get_texts()) if legend else []
        side_titles = [ax._left_title, ax._right_title]  # type: ignore[attr-defined]  # matplotlib keeps them private
        texts += [ax.title, *side_titles, ax.xaxis.label, ax.yaxis.label, *ax.texts]
    box = fig.bbox
    out = []
    for text in texts:
        if not text.get_visible() or not text.get_text().strip():
            continue
        ext = text.get_window_extent(renderer)
        if (ext.x0 < box.x0 - tolerance_px or ext.x1 > box.x1 + tolerance_px or ext.y0 < box.y0 - tolerance_px
                or ext.y1 > box.y1 + tolerance_px):
            out.append(text.get_text())
    return out


def to_data_uri(fig: plt.Figure, tight: bool = False) -> str:
    """PNG data URI. Figures set their own margins: ``bbox_inches="tight"`` draws twice (slow)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight" if tight else None)
    for audit in RENDER_AUDITS:
        audit(fig)
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def thin(df: pd.DataFrame, max_rows: int = MAX_POINTS) -> pd.DataFrame:
    """Every k-th row so that at most ``max_rows`` remain (keeps the last row)."""
    if len(df) <= max_rows:
        return df
    step = int(np.ceil(len(df) / max_rows))
    idx = list(range(0, len(df), step))
    if idx[-1] != len(df) - 1:
        idx.append(len(df) - 1)
    return df.iloc[idx]


def empty_figure(title: str, message: str, height: float = 2.0) -> str:
    fig, ax = plt.subplots(figsize=(WIDTH_IN, height))
    ax.set_axis_off()
    ax.set_title(title)
    fig.subplots_adjust(top=0.8)
    ax.text(0.5, 0.5, message, ha="center", va="center", transform=ax.transAxes, color="#666666")
    return to_data_uri(fig)


def time_axis(seconds: float) -> TimeUnit:
    """Divisor and axis label: minutes for runs longer than 10 min, else seconds. A page calls this once,
    with its longest run, and hands the result to every figure so the unit never switches on a page."""
    return (60.0, "time (min)") if seconds > 600 else (1.0, "time (s)")
