"""The per-run figures: what happened over time in one run.

Types follow the WVA paper: replicas + offered traffic + mean KV usage on
twin axes (its Fig. 2), replicas per variant (Fig. 3); then queue and TTFT
over time, TTFT/ITL CDFs and the workload that was offered. Replica counts
are drawn as steps ending at each sample (the sample stands for the interval
before it, the integration rule of reports.usage: Chart.js ``stepped: "after"``
draws the vertical first, helpers.canvas.js ``_steppedLineTo``). The page passes
one time unit (``TimeUnit``) to every figure so minutes and seconds never mix.
Each function returns a figure spec (reports/figures.py), drawn by the browser.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from scalearena.reports.figures import (
    STATUS_COLORS,
    TimeUnit,
    annotation_line,
    axis,
    dataset,
    empty_figure,
    figure,
    legend_item,
    palette,
    panel,
    thin,
    time_axis,
)

# The requests.parquet columns the figures read (the page reads no others: less to decode).
REQUEST_COLUMNS = ("arrival_s", "status", "ttft_ms", "itl_ms", "input_tokens", "output_tokens",
                   "requested_output_tokens")
PRE = "after"  # Chart.js name of matplotlib's where="pre" (see the module docstring)
KV_RED = "#c44e52"
Y_WIDTH = 72  # px: stacked panels of one figure share their x positions


def per_time(ts: pd.DataFrame) -> pd.DataFrame:
    """One row per sample time: totals over variants, per-model values (offered load, gateway queue)
    counted once, and the ready-weighted mean KV usage in %. numpy bincounts, not pandas groupby: this
    runs for every run page and groupby over string columns was half of a page's cost."""
    if ts.empty:
        return pd.DataFrame(columns=["t_s", "ready", "billed", "spec", "waiting", "offered_rps", "router_queue",
                                     "kv_mean"])
    times, at = np.unique(ts["t_s"].to_numpy(dtype=float), return_inverse=True)
    n = times.size

    def total(col: str | np.ndarray) -> np.ndarray:
        w = ts[col].to_numpy(dtype=float) if isinstance(col, str) else col
        return np.bincount(at, weights=w, minlength=n)

    ready = ts["ready_replicas"].to_numpy(dtype=float)
    _, model = np.unique(ts["model"].to_numpy(dtype=str), return_inverse=True)
    _, first = np.unique(at * (int(model.max()) + 1) + model, return_index=True)  # first row of (t, model)
    once = np.zeros(len(ts), dtype=bool)
    once[first] = True
    kv = pd.to_numeric(ts["kv_usage_mean"], errors="coerce").to_numpy(dtype=float)
    known = ~np.isnan(kv)
    den = total(np.where(known, ready, 0.0))
    with np.errstate(invalid="ignore", divide="ignore"):
        kv_mean = np.where(den > 0, total(np.where(known, kv * ready, 0.0)) / den * 100.0, np.nan)
    return pd.DataFrame({
        "t_s": times, "ready": total(ready),
        "billed": total(ready + ts["pending_replicas"].to_numpy(dtype=float)
                        + ts["terminating_replicas"].to_numpy(dtype=float)
                        + (ts["standby_replicas"].to_numpy(dtype=float) if "standby_replicas" in ts else 0.0)),
        "spec": total("spec_replicas"), "waiting": total("waiting"),
        "offered_rps": total(np.where(once, ts["offered_rps"].to_numpy(dtype=float), 0.0)),
        "router_queue": total(np.where(once, ts["router_queue"].to_numpy(dtype=float), 0.0)),
        "kv_mean": kv_mean,
    })


def _x(unit: TimeUnit, end_s: float, titled: bool = True) -> dict[str, Any]:
    x = axis(unit[1], min=0, max=round(end_s / unit[0], 3))
    x["title"]["display"] = titled
    return x


def overview(ts: pd.DataFrame, summary: dict[str, Any], unit: TimeUnit | None = None,
             pt: pd.DataFrame | None = None) -> dict[str, Any]:
    """Fig. 2 type: replicas per variant (left), offered load and mean KV usage (right)."""
    title = "Replicas, offered load and KV-cache usage"
    caption = ("Ready replicas per variant (left axis), offered load (right) and mean KV-cache usage of ready pods "
               "(outer right) — the WVA paper's Fig. 2 view.")
    if ts.empty:
        return empty_figure("overview", title, "no timeseries recorded", caption)
    end = float(ts["t_s"].max())
    div, _ = unit = unit or time_axis(end)
    variants = sorted(ts["variant"].unique())
    colors = palette(variants)
    data = []
    for v in variants:
        g = thin(ts[ts["variant"] == v].sort_values("t_s"))
        data.append(dataset(f"replicas {v}", g["t_s"] / div, g["ready_replicas"], colors[v], stepped=PRE,
                            borderWidth=2.2, key=f"v:{v}", yAxisID="y"))
    pt = thin(per_time(ts) if pt is None else pt)
    data.append(dataset("offered load (req/s)", pt["t_s"] / div, pt["offered_rps"], "#333333", borderDash=[5, 4],
                        borderWidth=1.3, key="load", yAxisID="y2"))
    data.append(dataset("mean KV usage (%)", pt["t_s"] / div, pt["kv_mean"], KV_RED, borderWidth=1.1,
                        key="kv", yAxisID="y3", digits=1))
    scales = {"x": _x(unit, end), "y": axis("ready replicas", min=0, fmt="int", position="left"),
              "y2": axis("offered load (req/s)", min=0, position="right", grid={"drawOnChartArea": False}),
              "y3": axis("mean KV-cache usage (%)", min=0, max=100, position="right",
                         grid={"drawOnChartArea": False}, ticks={"color": KV_RED})}
    scales["y3"]["title"]["color"] = KV_RED
    legend = [legend_item(f"replicas {v}", colors[v], "line", f"v:{v}") for v in variants]
    legend += [legend_item("offered load", "#333333", "dash", "load"),
               legend_item("mean KV usage", KV_RED, "thin", "kv")]
    return figure("overview", title, caption, [panel(data, scales, height=380)], legend)


def replicas_by_variant(ts: pd.DataFrame, unit: TimeUnit | None = None, pt: pd.DataFrame | None = None
                        ) -> dict[str, Any]:
    """Fig. 3 type: ready replicas stacked per variant; billed (incl. starting/terminating) and desired."""
    title = "Replicas per variant"
    caption = "Ready replicas stacked per variant; dashed: billed pods (holding GPUs); dotted: desired replicas."
    if ts.empty:
        return empty_figure("replicas", title, "no timeseries recorded", caption)
    end = float(ts["t_s"].max())
    div, _ = unit = unit or time_axis(end)
    times, at = np.unique(ts["t_s"].to_numpy(dtype=float), return_inverse=True)
    names, variant = np.unique(ts["variant"].to_numpy(dtype=str), return_inverse=True)
    wide = np.zeros((times.size, names.size))
    np.add.at(wide, (at, variant), ts["ready_replicas"].to_numpy(dtype=float))
    keep = thin(pd.DataFrame({"i": np.arange(times.size)}))["i"].to_numpy()
    colors = palette(list(names))
    x = times[keep] / div
    data = [dataset(f"ready {v}", x, wide[keep, j], colors[v] + "bf", stepped=PRE, fill="origin" if j == 0 else "-1",
                    borderWidth=0, stack="ready", key=f"v:{v}")
            for j, v in enumerate(names)]
    pt = thin(per_time(ts) if pt is None else pt)
    data.append(dataset("billed (ready + starting + terminating)", pt["t_s"] / div, pt["billed"], "#222222",
                        stepped=PRE, borderDash=[5, 4], borderWidth=1.3, stack="billed", key="billed"))
    data.append(dataset("desired (spec)", pt["t_s"] / div, pt["spec"], "#888888", stepped=PRE, borderDash=[2, 3],
                        borderWidth=1.3, stack="spec", key="spec"))
    scales = {"x": _x(unit, end), "y": axis("replicas", min=0, fmt="int", stacked=True)}
    legend = [legend_item(f"ready {v}", colors[v], "box", f"v:{v}") for v in names]
    legend += [legend_item("billed (ready + starting + terminating)", "#222222", "dash", "billed"),
               legend_item("desired (spec)", "#888888", "dot", "spec")]
    return figure("replicas", title, caption, [panel(data, scales, height=320)], legend)


def _log_axis_needed(values: np.ndarray) -> bool:
    return values.size > 0 and float(values.max()) > 20 * max(float(np.median(values)), 1e-9)


def queue_and_ttft(ts: pd.DataFrame, req: pd.DataFrame, slo: dict[str, Any], unit: TimeUnit | None = None,
                   pt: pd.DataFrame | None = None) -> dict[str, Any]:
    """Queue (engines + gateway) over time above TTFT of each ok request by arrival time."""
    title = "Queue and time to first token"
    caption = ("Top: requests waiting in engines and held at the gateway. Bottom: TTFT of each successful request "
               "by arrival time, its p99 per time bin, and the TTFT SLO.")
    end = max(float(ts["t_s"].max()) if not ts.empty else 0.0,
              float(req["arrival_s"].max()) if not req.empty else 0.0)
    div, _ = unit = unit or time_axis(end)
    top: list[dict[str, Any]] = []
    if not ts.empty:
        pt = thin(per_time(ts) if pt is None else pt)
        top = [dataset("waiting in engines", pt["t_s"] / div, pt["waiting"], "#4c72b0", key="waiting"),
               dataset("held at gateway", pt["t_s"] / div, pt["router_queue"], "#dd8452", key="gateway")]
    panels = [panel(top, {"x": _x(unit, end, titled=False), "y": axis("queued requests", min=0, width=Y_WIDTH)},
                    height=230)]
    ok = req[(req["status"] == "ok") & req["ttft_ms"].notna()]
    legend = [legend_item("waiting in engines", "#4c72b0", "line", "waiting"),
              legend_item("held at gateway", "#dd8452", "line", "gateway")]
    bottom: list[dict[str, Any]] = []
    annotations: dict[str, Any] = {}
    y = axis("TTFT (ms)", min=0, width=Y_WIDTH)
    if not ok.empty:
        pts = thin(ok.sort_values("arrival_s"), 3000)
        bottom.append(dataset("TTFT (ok)", pts["arrival_s"] / div, pts["ttft_ms"], "#4c72b059", type="scatter",
                              pointRadius=1.6, borderWidth=0, key="ttft", digits=1))
        width = max(end / 60.0, 1.0)
        arrival = ok["arrival_s"].to_numpy(dtype=float)
        bins = (arrival // width) * width + width / 2
        p99 = ok["ttft_ms"].groupby(bins).quantile(0.99)
        bottom.append(dataset(f"p99 per {width:.0f} s", p99.index.to_numpy() / div, p99.to_numpy(), "#dd8452",
                              key="p99", digits=1))
        legend += [legend_item("TTFT of each ok request", "#4c72b0", "marker", "ttft"),
                   legend_item(f"p99 per {width:.0f} s", "#dd8452", "line", "p99")]
        if _log_axis_needed(ok["ttft_ms"].to_numpy(dtype=float)):
            y = axis("TTFT (ms)", type="logarithmic", fmt="log125", width=Y_WIDTH)
    if slo.get("ttft_ms"):
        annotations["slo"] = annotation_line(float(slo["ttft_ms"]), KV_RED)
        legend.append(legend_item(f"TTFT SLO {float(slo['ttft_ms']):,.0f} ms", KV_RED, "dash"))
    panels.append(panel(bottom, {"x": _x(unit, end), "y": y}, height=270,
                        plugins={"annotation": {"annotations": annotations}}))
    if ok.empty:
        panels[-1]["title"] = "no successful requests"
    return figure("queue", title, caption, panels, legend)


def _ecdf(values: pd.Series, slo: float | None, label: str, name: str) -> dict[str, Any]:
    a = np.sort(pd.to_numeric(values, errors="coerce").dropna().to_numpy(dtype=float))
    if a.size == 0:
        return panel([], {"x": axis(label), "y": axis("share of ok requests", min=0, max=1)}, height=300,
                     title=f"{name}: no data")
    p50, p99 = float(np.quantile(a, 0.5)), float(np.quantile(a, 0.99))
    shares = np.linspace(1 / a.size, 1.0, a.size)
    if a.size > 2000:
        idx = np.linspace(0, a.size - 1, 2000).astype(int)
        a, shares = a[idx], shares[idx]
    marks = {"p50": annotation_line(p50, "#666666", vertical=True, dash=(2, 3), width=1.0),
             "p99": annotation_line(p99, "#666666", vertical=True, dash=(8, 3, 2, 3), width=1.0)}
    title = f"{name} distribution — p50 {p50:,.0f} · p99 {p99:,.0f}"
    if slo:
        marks["slo"] = annotation_line(float(slo), KV_RED, vertical=True, width=1.4)
        title += f" · SLO {float(slo):,.0f}"
    x = axis(label, type="logarithmic", fmt="log125") if _log_axis_needed(a) else axis(label, min=0)
    data = [dataset(name, a, shares, "#4c72b0", stepped="before", digits=4, clip=False)]
    return panel(data, {"x": x, "y": axis("share of ok requests", min=0, max=1)}, height=300, title=title,
                 plugins={"annotation": {"annotations": marks}})


def latency_cdfs(req: pd.DataFrame, slo: dict[str, Any]) -> dict[str, Any]:
    ok = req[req["status"] == "ok"]
    legend = [legend_item("p50", "#666666", "dot"), legend_item("p99", "#666666", "dash"),
              legend_item("SLO", KV_RED, "dash")]
    return figure("cdf", "Latency CDFs", "Empirical CDFs over successful requests, with p50, p99 and the SLO.",
                  [_ecdf(ok["ttft_ms"], slo.get("ttft_ms"), "TTFT (ms)", "TTFT"),
                   _ecdf(ok["itl_ms"], slo.get("itl_ms"), "mean inter-token latency (ms)", "ITL")], legend, columns=2)


def _histogram(values: pd.Series, color: str, label: str) -> dict[str, Any]:
    v = pd.to_numeric(values, errors="coerce").dropna().to_numpy(dtype=float)
    counts, edges = np.histogram(v, bins=40) if v.size else (np.zeros(1), np.array([0.0, 1.0]))
    data = [dataset(label, edges, np.append(counts, counts[-1]), color, stepped="before", fill="origin",
                    backgroundColor=color + "d9", borderWidth=0)]
    return panel(data, {"x": axis(label, min=float(edges[0]), max=float(edges[-1])), "y": axis("requests", min=0)},
                 height=230)


def workload(req: pd.DataFrame, duration_s: float, unit: TimeUnit | None = None) -> dict[str, Any]:
    """Arrivals per second by final status, and the token-length histograms."""
    title = "Workload"
    caption = "Arrivals per second coloured by how each request ended; token-length histograms."
    if req.empty:
        return empty_figure("workload", title, "no requests were sent", caption)
    end = max(duration_s, float(req["arrival_s"].max()))
    div, _ = unit = unit or time_axis(end)
    width = max(end / 120.0, 1.0)
    edges = np.arange(0.0, end + width, width)
    arrival = req["arrival_s"].to_numpy(dtype=float)
    status = req["status"].to_numpy()
    data: list[dict[str, Any]] = []
    legend: list[dict[str, Any]] = []
    for s, color in STATUS_COLORS.items():
        counts, _ = np.histogram(arrival[status == s], bins=edges)
        if counts.any():
            rate = np.append(counts, counts[-1]) / width
            data.append(dataset(s, edges / div, rate, color, stepped="before", fill="origin" if not data else "-1",
                                backgroundColor=color, borderWidth=0, stack="arrivals", key=f"s:{s}"))
            legend.append(legend_item(s, color, "box", f"s:{s}"))
    top = panel(data, {"x": _x(unit, end), "y": axis(f"arrivals (req/s, {width:.0f} s bins)", min=0, stacked=True)},
                height=270, span=2, title="Offered load by final request status")
    out_col = "output_tokens"
    if "requested_output_tokens" in req and req["requested_output_tokens"].notna().any():
        out_col = "requested_output_tokens"
    panels = [top, _histogram(req["input_tokens"], "#4c72b0", "input (prompt) tokens per request"),
              _histogram(req[out_col], "#55a868", "output tokens per request")]
    return figure("workload", title, caption, panels, legend, columns=2)
