"""The per-suite figures: every autoscaler side by side.

Grouped bars per sweep point (``rate-2``, ``rate-3``, ...) with one bar per
autoscaler, the WVA paper's Figs. 4-6 (goodput rather than throughput: a request
served past its SLO is not served; failures, TTFT, ITL) plus cost and energy;
and the replica count of every autoscaler over time on one axis. Bars read their values from summary.json through the metric catalog.

The page decides, once, each autoscaler's colour, the time unit and the cost
unit, and passes them in: the same autoscaler is the same colour in every
figure. Failure causes are black hatching on white in the legend, never a
fill colour, so no autoscaler colour can be mistaken for one. Replica lines of
different autoscalers are dodged by a fraction of a replica so equal counts
stay visible side by side instead of hiding each other.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from .catalog import BY_ID, Metric
from .figures import WIDTH_IN, TimeUnit, empty_figure, palette, thin, time_axis, to_data_uri
from .load import Run, natural_key

PANELS = ("goodput_rps", "failures", "ttft_mean", "itl_mean", "cost", "energy_kwh")  # cost: the page's unit
DODGE = 0.3  # replicas: total spread of the lines of one plot
FAILURE_HATCHES = {"rejected": "", "killed": "////", "timeout": "....", "too_long": "\\\\",
                   "error": "xxxx"}


def _groups(runs: list[Run]) -> tuple[list[str], list[str]]:
    sweeps = sorted({r.sweep or "all" for r in runs}, key=natural_key)
    autoscalers = sorted({r.autoscaler for r in runs})
    return sweeps, autoscalers


def grouped_bars(scenario: str, runs: list[Run], colors: dict[str, str] | None = None,
                 cost: Metric | None = None) -> str:
    """One figure per scenario: 2 x 3 panels of grouped bars (x: sweep point, hue: autoscaler)."""
    sweeps, autoscalers = _groups(runs)
    colors = colors or palette(autoscalers)
    cell = {(r.sweep or "all", r.autoscaler): r for r in runs}
    n = len(autoscalers)
    width = 0.8 / max(n, 1)
    x = np.arange(len(sweeps))
    fig, axes = plt.subplots(2, 3, figsize=(WIDTH_IN, 5.6))
    for ax, metric_id in zip(axes.flat, PANELS, strict=True):
        metric = (cost or BY_ID["cost"]) if metric_id == "cost" else BY_ID[metric_id]
        for i, a in enumerate(autoscalers):
            offs = x - 0.4 + width * (i + 0.5)
            runs_a = [cell.get((s, a)) for s in sweeps]
            if metric_id == "failures":
                bottom = np.zeros(len(sweeps))
                for cause, hatch in FAILURE_HATCHES.items():
                    vals = np.array([(r.summary.get("failures") or {}).get(cause, 0) if r else 0 for r in runs_a],
                                    dtype=float)
                    ax.bar(offs, vals, width, bottom=bottom, color=colors[a], hatch=hatch, edgecolor="black",
                           lw=0.3)
                    bottom += vals
            else:
                values = [metric.value(r.summary) if r else None for r in runs_a]
                ax.bar(offs, [np.nan if v is None else v for v in values], width, color=colors[a])
        ax.set_xticks(x, sweeps, rotation=0 if len(sweeps) < 6 else 30)
        ax.set_title(metric.label if metric.id != "gpu_hours" else "Cost (GPU-hours)")
        ax.set_ylabel(metric.unit or metric.label)
    handles = [plt.Rectangle((0, 0), 1, 1, color=colors[a]) for a in autoscalers]
    handles += [plt.Rectangle((0, 0), 1, 1, facecolor="white", hatch=h, edgecolor="black", lw=0.6)
                for h in FAILURE_HATCHES.values()]
    labels = list(autoscalers) + [f"failed: {c}" for c in FAILURE_HATCHES]
    ncol = min(len(labels), 6)
    rows = -(-len(labels) // ncol)
    top = 0.93 - 0.045 * rows  # room for the legend's rows above the panels
    fig.subplots_adjust(left=0.06, right=0.99, bottom=0.06, top=top, hspace=0.42, wspace=0.28)
    fig.legend(handles, labels, loc="upper center", ncol=ncol, bbox_to_anchor=(0.5, 0.995),
               handleheight=1.4, handlelength=2.2, fontsize=9)
    return to_data_uri(fig)


def replicas_over_time(title: str, runs: list[Run], colors: dict[str, str] | None = None,
                       unit: TimeUnit | None = None) -> str:
    """Total ready replicas of each autoscaler on one axis, offered load behind them."""
    series = [(r.autoscaler, r.timeseries) for r in runs if not r.timeseries.empty]
    if not series:
        return empty_figure(title, "no timeseries recorded")
    div, xlabel = unit or time_axis(max(float(ts["t_s"].max()) for _, ts in series))
    colors = colors or palette(sorted({a for a, _ in series}))
    fig, ax = plt.subplots(figsize=(WIDTH_IN, 3.4))
    ax2 = ax.twinx()
    ts0 = series[0][1]
    load = ts0.groupby(["t_s", "model"])["offered_rps"].first().groupby("t_s").sum()
    load = thin(load.to_frame()).iloc[:, 0]
    ax2.fill_between(load.index / div, 0, load.values, step="pre", color="#999999", alpha=0.18, lw=0)
    ax2.set_ylabel("offered load (req/s, shaded)")
    ax2.grid(False)
    ax2.set_ylim(bottom=0)
    for i, (a, ts) in enumerate(series):
        total = thin(ts.groupby("t_s")["ready_replicas"].sum().to_frame()).iloc[:, 0]
        dodge = (i - (len(series) - 1) / 2) * DODGE / max(len(series) - 1, 1)
        ax.step(total.index / div, total.values + dodge, where="pre", lw=1.6, color=colors[a], label=a)
    ax.set_zorder(ax2.get_zorder() + 1)
    ax.patch.set_visible(False)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("ready replicas (all variants)")
    # matplotlib's stubs type the base Locator.set_params() without kwargs; the default AutoLocator takes them.
    ax.yaxis.get_major_locator().set_params(integer=True)  # type: ignore[call-arg]  # stub too narrow
    ax.set_ylim(0, max(float(ts.groupby("t_s")["ready_replicas"].sum().max()) for _, ts in series) + 1)
    ax.legend(loc="upper left", bbox_to_anchor=(1.07, 1.0), borderaxespad=0.0, fontsize=8)
    ax.set_title(title)
    fig.subplots_adjust(left=0.06, right=0.78, bottom=0.15, top=0.9)
    return to_data_uri(fig)
