"""Shared plotting plumbing: Agg backend, one theme, figures inlined as PNG.

Figures are rendered to base64 PNG data URIs so report.html opens offline
with nothing beside it. Sizes are chosen for a 1366 px laptop screen (an
11 in x 100 dpi figure is 1100 px wide); long series are thinned before
plotting so a 40-run suite renders in seconds.
"""
from __future__ import annotations

import base64
import io
from collections.abc import Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
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


def palette(names: Sequence[str]) -> dict[str, tuple[float, float, float]]:
    """A stable colour per name (variants or autoscalers), colour-blind safe."""
    colors = sns.color_palette("colorblind", max(len(names), 1))
    return {n: colors[i % len(colors)] for i, n in enumerate(names)}


def to_data_uri(fig: plt.Figure, tight: bool = False) -> str:
    """PNG data URI. Figures set their own margins: ``bbox_inches="tight"`` draws twice (slow)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight" if tight else None)
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


def time_axis(seconds: float) -> tuple[float, str]:
    """Divisor and axis label: minutes for runs longer than 10 min, else seconds."""
    return (60.0, "time (min)") if seconds > 600 else (1.0, "time (s)")
