"""Start-ups in a run report: each pod's phases on a timeline and a per-phase table, from pods.jsonl.

A pod's row shows where its start-up went (Pending: scheduling, waiting for a GPU, node provisioning;
ContainerCreating: image pull; Running, not Ready: weight load, warm-up, a sleep-mode wake; Ready
from the end of the last phase until the pod went). The table gives each phase's count and p50 / p95
/ max durations, so a scale-up's decision-to-ready lag (summary ``scaling``) can be read as its parts.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from scalearena.reports.figures import TimeUnit, axis, figure, legend_item, panel
from scalearena.reports.load import natural_key

MAX_ROWS = 40
PHASE_COLORS = {
    "scheduling": "#c7c7c7", "unschedulable": "#8c8c8c", "node_provisioning": "#d1495b",
    "image_pull": "#edae49", "weight_load": "#3d7ea6", "warmup": "#8e6bbf", "startup": "#66a5ad",
    "wake": "#2a9d8f", "promote": "#2a9d8f", "asleep": "#e9d8a6", "ready": "#a8d5a2",
}


def started(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Pods that went through a start-up in the run (not the ones Ready at t=0)."""
    return [p for p in pods if p.get("phases")]


def phase_table(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per phase, in lifecycle order: stage, count, p50 / p95 / max seconds."""
    by: dict[str, tuple[str, list[float]]] = {}
    for p in pods:
        for ph in p.get("phases") or []:
            by.setdefault(ph["phase"], (ph.get("stage", ""), []))[1].append(float(ph["end_s"]) - float(ph["start_s"]))
    order = list(PHASE_COLORS)
    rows = []
    for name in sorted(by, key=lambda n: order.index(n) if n in order else len(order)):
        stage, d = by[name]
        a = np.asarray(d)
        rows.append({"phase": name, "stage": stage, "count": int(a.size), "p50": float(np.percentile(a, 50)),
                     "p95": float(np.percentile(a, 95)), "max": float(a.max())})
    return rows


def timeline(pods: list[dict[str, Any]], end_s: float, unit: TimeUnit) -> dict[str, Any] | None:
    """The first MAX_ROWS started pods (by creation), one row of floating bars each (a Chart.js horizontal
    bar chart, one dataset per phase); None if no pod started in the run."""
    rows = sorted(started(pods), key=lambda p: (float(p.get("created_s") or 0.0), natural_key(str(p.get("pod")))))
    if not rows:
        return None
    shown = rows[:MAX_ROWS]
    div = unit[0]
    bars: dict[str, list[dict[str, Any]]] = {}

    def bar(kind: str, name: str, a: float, b: float) -> None:
        bars.setdefault(kind, []).append({"y": name, "x": [round(a / div, 4), round(b / div, 4)],
                                          "s": round(b - a, 1)})

    for p in shown:
        name, phases = str(p["pod"]), p["phases"]
        stop = float(p["ended_s"]) if p.get("ended_s") is not None else end_s
        for i, ph in enumerate(phases):
            a, b = float(ph["start_s"]), float(ph["end_s"])
            bar(ph["phase"], name, a, b)
            # Ready from the end of a start (the last Running phase) until the next phase or the pod's end
            nxt = float(phases[i + 1]["start_s"]) if i + 1 < len(phases) else stop
            if ph.get("stage") == "Running" and p.get("ready_s") is not None and nxt > b:
                bar("ready", name, b, nxt)
    order = [n for n in PHASE_COLORS if n in bars] + sorted(set(bars) - set(PHASE_COLORS))
    data = [{"label": n.replace("_", " "), "data": bars[n], "backgroundColor": PHASE_COLORS.get(n, "#999999"),
             "borderWidth": 0, "grouped": False, "barPercentage": 0.8, "categoryPercentage": 1.0, "key": f"p:{n}",
             "tip": "span"} for n in order]
    scales = {"x": axis(unit[1], min=0, max=round(end_s / div, 3)),
              "y": {"type": "category", "labels": [str(p["pod"]) for p in shown], "ticks": {"font": {"size": 12}},
                    "grid": {"display": False}}}
    more = f" (first {len(shown)} of {len(rows)})" if len(rows) > len(shown) else ""
    legend = [legend_item(n.replace("_", " "), PHASE_COLORS.get(n, "#999999"), "box", f"p:{n}") for n in order]
    caption = ("Each started pod's phases (pods.jsonl): Pending (scheduling, waiting for a GPU, node provisioning), "
               "ContainerCreating (image pull), Running not Ready (weight load, warm-up, wake), then Ready until the "
               f"pod went{more}.")
    return figure("startups", "Pod start-ups", caption,
                  [panel(data, scales, kind="bar", height=60 + 18 * len(shown), indexAxis="y",
                         interaction={"mode": "nearest", "axis": "y", "intersect": True})], legend)
