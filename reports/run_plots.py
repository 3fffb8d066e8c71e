"""The per-run figures: what happened over time in one run.

Types follow the WVA paper: replicas + offered traffic + mean KV usage on
twin axes (its Fig. 2), replicas per variant (Fig. 3); then queue and TTFT
over time, TTFT/ITL CDFs and the workload that was offered. Replica counts
are drawn as steps ending at each sample (the sample stands for the interval
before it, the integration rule of reports.usage). The page passes one time
unit (``TimeUnit``) to every figure so minutes and seconds never mix.
"""
from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from .figures import STATUS_COLORS, WIDTH_IN, TimeUnit, empty_figure, palette, thin, time_axis, to_data_uri


def _per_time(ts: pd.DataFrame) -> pd.DataFrame:
    """One row per sample time: totals over variants, per-model values counted once."""
    g = ts.groupby("t_s", sort=True)
    out = pd.DataFrame({
        "ready": g["ready_replicas"].sum(),
        "billed": g["ready_replicas"].sum() + g["pending_replicas"].sum() + g["terminating_replicas"].sum(),
        "spec": g["spec_replicas"].sum(),
        "waiting": g["waiting"].sum(),
    })
    per_model = ts.groupby(["t_s", "model"])[["offered_rps", "router_queue"]].first().groupby("t_s").sum()
    out["offered_rps"] = per_model["offered_rps"]
    out["router_queue"] = per_model["router_queue"]
    kv = pd.to_numeric(ts["kv_usage_mean"], errors="coerce")
    weight = ts["ready_replicas"].where(kv.notna(), 0)
    num = (kv.fillna(0) * weight).groupby(ts["t_s"]).sum()
    den = weight.groupby(ts["t_s"]).sum()
    out["kv_mean"] = (num / den.replace(0, np.nan)) * 100.0
    return out.reset_index()


def overview(ts: pd.DataFrame, summary: dict[str, Any], unit: TimeUnit | None = None) -> str:
    """Fig. 2 type: replicas per variant (left), offered load and mean KV usage (right)."""
    title = "Replicas, offered load and KV-cache usage"
    if ts.empty:
        return empty_figure(title, "no timeseries recorded")
    div, xlabel = unit or time_axis(float(ts["t_s"].max()))
    variants = sorted(ts["variant"].unique())
    colors = palette(variants)
    fig, ax = plt.subplots(figsize=(WIDTH_IN, 3.8))
    for v in variants:
        g = thin(ts[ts["variant"] == v].sort_values("t_s"))
        ax.step(g["t_s"] / div, g["ready_replicas"], where="pre", color=colors[v], lw=2, label=f"replicas {v}")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("ready replicas")
    # matplotlib's stubs type the base Locator.set_params() without kwargs; the default AutoLocator takes them.
    ax.yaxis.get_major_locator().set_params(integer=True)  # type: ignore[call-arg]  # stub too narrow
    pt = thin(_per_time(ts))
    ax2 = ax.twinx()
    ax2.plot(pt["t_s"] / div, pt["offered_rps"], color="#333333", lw=1.2, ls="--", label="offered load")
    ax2.set_ylabel("offered load (req/s)")
    ax2.grid(False)
    ax3 = ax.twinx()
    ax3.spines["right"].set_position(("axes", 1.08))
    ax3.plot(pt["t_s"] / div, pt["kv_mean"], color="#c44e52", lw=1.0, alpha=0.8, label="mean KV usage")
    ax3.set_ylim(0, 105)
    ax3.set_ylabel("mean KV-cache usage (%)", color="#c44e52")
    ax3.grid(False)
    handles = sum((a.get_legend_handles_labels()[0] for a in (ax, ax2, ax3)), [])
    labels = sum((a.get_legend_handles_labels()[1] for a in (ax, ax2, ax3)), [])
    ax.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=min(len(labels), 6))
    ax.set_ylim(bottom=0)
    ax2.set_ylim(bottom=0)
    ax.set_title(title)
    fig.subplots_adjust(left=0.06, right=0.86, bottom=0.26, top=0.91)
    return to_data_uri(fig)


def replicas_by_variant(ts: pd.DataFrame, unit: TimeUnit | None = None) -> str:
    """Fig. 3 type: ready replicas stacked per variant; billed (incl. starting/terminating) and desired."""
    title = "Replicas per variant"
    if ts.empty:
        return empty_figure(title, "no timeseries recorded")
    div, xlabel = unit or time_axis(float(ts["t_s"].max()))
    wide = ts.pivot_table(index="t_s", columns="variant", values="ready_replicas", aggfunc="sum").fillna(0)
    wide = thin(wide.sort_index())
    colors = palette(sorted(wide.columns))
    fig, ax = plt.subplots(figsize=(WIDTH_IN, 3.2))
    x = wide.index.to_numpy(dtype=float) / div
    bottom = np.zeros(len(wide))
    for v in sorted(wide.columns):
        top = bottom + wide[v].to_numpy(dtype=float)
        ax.fill_between(x, bottom, top, step="pre", color=colors[v], alpha=0.75, lw=0, label=f"ready {v}")
        bottom = top
    pt = thin(_per_time(ts))
    ax.step(pt["t_s"] / div, pt["billed"], where="pre", color="#222222", lw=1.2, ls="--",
            label="billed (ready + starting + terminating)")
    ax.step(pt["t_s"] / div, pt["spec"], where="pre", color="#888888", lw=1.0, ls=":", label="desired (spec)")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("replicas")
    # matplotlib's stubs type the base Locator.set_params() without kwargs; the default AutoLocator takes them.
    ax.yaxis.get_major_locator().set_params(integer=True)  # type: ignore[call-arg]  # stub too narrow
    ax.set_ylim(bottom=0)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.26), ncol=min(len(wide.columns) + 2, 6))
    ax.set_title(title)
    fig.subplots_adjust(left=0.06, right=0.98, bottom=0.33, top=0.9)
    return to_data_uri(fig)


def queue_and_ttft(ts: pd.DataFrame, req: pd.DataFrame, slo: dict[str, Any], unit: TimeUnit | None = None) -> str:
    """Queue (engines + gateway) over time above TTFT of each ok request by arrival time."""
    fig, (ax, bx) = plt.subplots(2, 1, figsize=(WIDTH_IN, 5.0), sharex=True)
    end = max(float(ts["t_s"].max()) if not ts.empty else 0.0,
              float(req["arrival_s"].max()) if not req.empty else 0.0)
    div, xlabel = unit or time_axis(end)
    if not ts.empty:
        pt = thin(_per_time(ts))
        ax.plot(pt["t_s"] / div, pt["waiting"], lw=1.4, label="waiting in engines")
        ax.plot(pt["t_s"] / div, pt["router_queue"], lw=1.4, label="held at gateway")
        ax.legend(loc="upper left")
    ax.set_ylabel("queued requests")
    ax.set_title("Queue and time to first token")
    ok = req[(req["status"] == "ok") & req["ttft_ms"].notna()]
    if not ok.empty:
        pts = thin(ok.sort_values("arrival_s"), 3000)
        bx.scatter(pts["arrival_s"] / div, pts["ttft_ms"], s=4, alpha=0.35, color="#4c72b0", label="TTFT (ok)")
        width = max(end / 60.0, 1.0)
        bins = (ok["arrival_s"] // width) * width + width / 2
        p99 = ok.groupby(bins)["ttft_ms"].quantile(0.99)
        bx.plot(p99.index / div, p99.values, color="#dd8452", lw=1.6, label=f"p99 per {width:.0f} s")
        if slo.get("ttft_ms"):
            bx.axhline(float(slo["ttft_ms"]), color="#c44e52", ls="--", lw=1, label="TTFT SLO")
        if ok["ttft_ms"].max() > 20 * max(ok["ttft_ms"].median(), 1e-9):
            _log_axis(bx.yaxis, bx.set_yscale)
        bx.legend(loc="upper left", ncol=3)
    else:
        bx.text(0.5, 0.5, "no successful requests", ha="center", va="center", transform=bx.transAxes)
    bx.set_ylabel("TTFT (ms)")
    bx.set_xlabel(xlabel)
    fig.subplots_adjust(left=0.07, right=0.98, bottom=0.1, top=0.93, hspace=0.12)
    return to_data_uri(fig)


def _log_axis(axis: Any, set_scale: Any) -> None:
    """Log scale labelled at 1-2-5 steps in plain numbers (1,000 not 10^3) and unlabelled minor ticks, so labels never collide."""
    set_scale("log")
    axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else f"{v:g}"))
    axis.set_minor_formatter(NullFormatter())


def _ecdf(ax: plt.Axes, values: pd.Series, slo: float | None, unit_label: str, title: str) -> None:
    a = np.sort(pd.to_numeric(values, errors="coerce").dropna().to_numpy(dtype=float))
    ax.set_title(title)
    ax.set_xlabel(unit_label)
    ax.set_ylabel("share of ok requests")
    if a.size == 0:
        ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes)
        return
    if a.size > 4000:
        a = a[np.linspace(0, a.size - 1, 4000).astype(int)]
    ax.step(a, np.linspace(1 / a.size, 1.0, a.size), where="post", lw=1.6)
    for q, ls in ((0.5, ":"), (0.99, "-.")):
        v = float(np.quantile(a, q))
        ax.axvline(v, color="#666666", ls=ls, lw=0.9, label=f"p{int(q * 100)} {v:,.0f}")
    if slo:
        ax.axvline(slo, color="#c44e52", ls="--", lw=1.2, label=f"SLO {slo:,.0f}")
    if a[-1] > 20 * max(a[len(a) // 2], 1e-9):
        _log_axis(ax.xaxis, ax.set_xscale)
    ax.set_ylim(0, 1.02)
    ax.legend(loc="lower right")


def latency_cdfs(req: pd.DataFrame, slo: dict[str, Any]) -> str:
    ok = req[req["status"] == "ok"]
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(WIDTH_IN, 3.2))
    _ecdf(ax, ok["ttft_ms"], slo.get("ttft_ms"), "TTFT (ms)", "TTFT distribution")
    _ecdf(bx, ok["itl_ms"], slo.get("itl_ms"), "mean inter-token latency (ms)", "ITL distribution")
    fig.subplots_adjust(left=0.07, right=0.98, bottom=0.16, top=0.9, wspace=0.22)
    return to_data_uri(fig)


def workload(req: pd.DataFrame, duration_s: float, unit: TimeUnit | None = None) -> str:
    """Arrivals per second by final status, and the token-length histograms."""
    if req.empty:
        return empty_figure("Workload", "no requests were sent")
    fig = plt.figure(figsize=(WIDTH_IN, 5.2))
    grid = fig.add_gridspec(2, 2, height_ratios=[1.1, 1])
    ax = fig.add_subplot(grid[0, :])
    end = max(duration_s, float(req["arrival_s"].max()))
    div, xlabel = unit or time_axis(end)
    width = max(end / 120.0, 1.0)
    edges = np.arange(0.0, end + width, width)
    bottom = np.zeros(len(edges) - 1)
    for status, color in STATUS_COLORS.items():
        counts, _ = np.histogram(req.loc[req["status"] == status, "arrival_s"], bins=edges)
        if counts.any():
            top = bottom + counts / width
            ax.fill_between(edges / div, np.append(bottom, bottom[-1]), np.append(top, top[-1]), step="post",
                            color=color, lw=0, label=status)
            bottom = top
    ax.set_xlabel(xlabel)
    ax.set_ylabel(f"arrivals (req/s, {width:.0f} s bins)")
    ax.set_title("Offered load by final request status")
    ax.legend(loc="upper left", ncol=5)
    for col, (name, pos) in enumerate((("input_tokens", grid[1, 0]), ("output_tokens", grid[1, 1]))):
        bx = fig.add_subplot(pos)
        values = pd.to_numeric(req[name], errors="coerce").dropna()
        if name == "output_tokens" and req["requested_output_tokens"].notna().any():
            values = pd.to_numeric(req["requested_output_tokens"], errors="coerce").dropna()
        bx.hist(values, bins=40, color=["#4c72b0", "#55a868"][col], alpha=0.85, histtype="stepfilled")
        bx.set_xlabel(("input (prompt)" if col == 0 else "output") + " tokens per request")
        bx.set_ylabel("requests")
    fig.subplots_adjust(left=0.07, right=0.98, bottom=0.09, top=0.94, hspace=0.42, wspace=0.18)
    return to_data_uri(fig)
