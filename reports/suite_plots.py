"""The per-suite figures: every autoscaler side by side.

Grouped bars per sweep point (``rate-2``, ``rate-3``, ...) with one bar per
autoscaler, the WVA paper's Figs. 4-6 (throughput, failures, TTFT, ITL) plus
cost and energy; and the replica count of every autoscaler over time on one
axis. Bars read their values from summary.json through the metric catalog.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from .catalog import BY_ID
from .figures import WIDTH_IN, empty_figure, palette, thin, time_axis, to_data_uri
from .load import Run, natural_key

PANELS = ("throughput_rps", "failures", "ttft_mean", "itl_mean", "cost", "energy_kwh")
FAILURE_HATCHES = {"rejected": "", "killed": "////", "timeout": "....", "too_long": "\\\\",
                   "error": "xxxx"}


def _groups(runs: list[Run]) -> tuple[list[str], list[str]]:
    sweeps = sorted({r.sweep or "all" for r in runs}, key=natural_key)
    autoscalers = sorted({r.autoscaler for r in runs})
    return sweeps, autoscalers


def grouped_bars(scenario: str, runs: list[Run]) -> str:
    """One figure per scenario: 2 x 3 panels of grouped bars (x: sweep point, hue: autoscaler)."""
    sweeps, autoscalers = _groups(runs)
    colors = palette(autoscalers)
    cell = {(r.sweep or "all", r.autoscaler): r for r in runs}
    n = len(autoscalers)
    width = 0.8 / max(n, 1)
    x = np.arange(len(sweeps))
    fig, axes = plt.subplots(2, 3, figsize=(WIDTH_IN, 5.6))
    for ax, metric_id in zip(axes.flat, PANELS, strict=True):
        metric = BY_ID[metric_id]
        for i, a in enumerate(autoscalers):
            offs = x - 0.4 + width * (i + 0.5)
            runs_a = [cell.get((s, a)) for s in sweeps]
            if metric_id == "failures":
                bottom = np.zeros(len(sweeps))
                for cause, hatch in FAILURE_HATCHES.items():
                    vals = np.array([(r.summary.get("failures") or {}).get(cause, 0) if r else 0 for r in runs_a],
                                    dtype=float)
                    ax.bar(offs, vals, width, bottom=bottom, color=colors[a], hatch=hatch, edgecolor="white",
                           lw=0.3)
                    bottom += vals
            else:
                values = [metric.value(r.summary) if r else None for r in runs_a]
                ax.bar(offs, [np.nan if v is None else v for v in values], width, color=colors[a])
        ax.set_xticks(x, sweeps, rotation=0 if len(sweeps) < 6 else 30)
        ax.set_title(metric.label)
        ax.set_ylabel(metric.unit or metric.label)
    handles = [plt.Rectangle((0, 0), 1, 1, color=colors[a]) for a in autoscalers]
    handles += [plt.Rectangle((0, 0), 1, 1, facecolor="#888888", hatch=h, edgecolor="white")
                for h in FAILURE_HATCHES.values()]
    labels = list(autoscalers) + [f"failures: {c}" for c in FAILURE_HATCHES]
    fig.subplots_adjust(left=0.06, right=0.99, bottom=0.06, top=0.84, hspace=0.42, wspace=0.28)
    fig.legend(handles, labels, loc="upper center", ncol=min(len(labels), 8), bbox_to_anchor=(0.5, 0.99),
               handleheight=1.4, handlelength=2.2, fontsize=9)
    return to_data_uri(fig)


def replicas_over_time(title: str, runs: list[Run]) -> str:
    """Total ready replicas of each autoscaler on one axis, offered load behind them."""
    series = [(r.autoscaler, r.timeseries) for r in runs if not r.timeseries.empty]
    if not series:
        return empty_figure(title, "no timeseries recorded")
    end = max(float(ts["t_s"].max()) for _, ts in series)
    div, xlabel = time_axis(end)
    colors = palette(sorted({a for a, _ in series}))
    fig, ax = plt.subplots(figsize=(WIDTH_IN, 3.4))
    ax2 = ax.twinx()
    ts0 = series[0][1]
    load = ts0.groupby(["t_s", "model"])["offered_rps"].first().groupby("t_s").sum()
    load = thin(load.to_frame()).iloc[:, 0]
    ax2.fill_between(load.index / div, 0, load.values, step="pre", color="#999999", alpha=0.18, lw=0)
    ax2.set_ylabel("offered load (req/s, shaded)")
    ax2.grid(False)
    ax2.set_ylim(bottom=0)
    for a, ts in series:
        total = thin(ts.groupby("t_s")["ready_replicas"].sum().to_frame()).iloc[:, 0]
        ax.step(total.index / div, total.values, where="pre", lw=1.8, color=colors[a], label=a)
    ax.set_zorder(ax2.get_zorder() + 1)
    ax.patch.set_visible(False)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("ready replicas (all variants)")
    # matplotlib's stubs type the base Locator.set_params() without kwargs; the default AutoLocator takes them.
    ax.yaxis.get_major_locator().set_params(integer=True)  # type: ignore[call-arg]  # stub too narrow
    ax.set_ylim(0, max(float(ts.groupby("t_s")["ready_replicas"].sum().max()) for _, ts in series) + 1)
    ax.legend(loc="upper left", ncol=min(len(series), 6))
    ax.set_title(title)
    fig.subplots_adjust(left=0.07, right=0.92, bottom=0.15, top=0.9)
    return to_data_uri(fig)
