"""Cost against SLO attainment, one panel per sweep point of a scenario: where each autoscaler sits
relative to the target, the deployable Pareto front and the bound (the oracle frontier).

Drawing only: the points, the front and the target come from ``suite_decide.decisions`` (the logic
lives in reports/verdict.py); the tune report (reports/tune.py) draws its study with the same code, its
trials being the points without a colour of their own (two datasets: grey, blue on the front). Each autoscaler keeps the page's colour; the oracle is a star, the
front a dashed step line through its points, the target a horizontal line over a shaded band of
attainments that meet it. The bound is a solid line along the oracle frontier's lower convex hull
(reports/verdict.py ``Frontier``), dropping straight down at the floor's cost, with the frontier's runs
as small diamonds; a point beyond noise below it (a bound violation) is ringed in red. Without
frontier runs only the oracle's own cost is marked, dotted. Points averaged over seeds carry their seeds' 95 % intervals as error
bars when ``errors`` gives them.
"""
from __future__ import annotations

import math
from typing import Any

from scalearena.reports.figures import annotation_line, axis, figure, legend_item, nums, panel
from scalearena.reports.suite_decide import PointDecision
from scalearena.reports.verdict import page_cost

MAX_COLUMNS = 4
GREEN = "#4c9f70"
TRIAL, TRIAL_FRONT = "#8c959f", "#0969da"
BOUND, VIOLATION, PERFECT = "#1f2328", "#cf222e", "#8250df"  # points without a colour of their own (a tuning study's trials)


def _trials(d: PointDecision, colors: dict[str, str]) -> list[dict[str, Any]]:
    """A tuning study's trials (points without a colour of their own): two datasets, off and on the front."""
    front = {p.name for p in d.verdict.front}
    out = []
    for on, color, label, radius in ((False, TRIAL, "trial", 2.5), (True, TRIAL_FRONT, "trial on the front", 3.5)):
        pts = [p for p in d.points if p.name not in colors and not p.bound and (p.name in front) == on
               and p.cost is not None and p.attainment is not None]
        if pts:
            out.append({"type": "scatter", "label": label, "xy": [nums([p.cost or 0.0 for p in pts], 4),
                        nums([(p.attainment or 0.0) * 100 for p in pts], 3)], "backgroundColor": color,
                        "borderWidth": 0, "pointRadius": radius, "pointHoverRadius": radius + 2,
                        "key": f"t:{label}", "tip": "xy", "order": 2, "clip": False})
    return out


def _segment(x0: float, y0: float, x1: float, y1: float, color: str, key: str) -> dict[str, Any]:
    return {"type": "line", "label": "95 % CI", "xy": [nums([x0, x1], 4), nums([y0, y1], 3)], "borderColor": color,
            "borderWidth": 1.2, "pointRadius": 0, "key": key, "tip": "xy"}


def _panel(d: PointDecision, colors: dict[str, str], title: str, cost_label: str,
           errors: dict[tuple[str, str], tuple[float, float]]) -> dict[str, Any]:
    v = d.verdict
    known = [p for p in d.points if p.cost is not None and p.attainment is not None]
    data: list[dict[str, Any]] = _trials(d, colors)
    for p in known:
        if p.name not in colors and not p.bound:
            continue  # a trial: drawn by _trials
        x, y, c = p.cost or 0.0, (p.attainment or 0.0) * 100, colors.get(p.name, "#333333")
        data.append({"type": "scatter", "label": p.name, "xy": [nums([x], 4), nums([y], 3)], "backgroundColor": c,
                     "borderColor": "#000000", "borderWidth": 0.8, "pointStyle": "star5" if p.bound else "circle",
                     "pointRadius": 6, "pointHoverRadius": 8,
                     "key": f"a:{p.name}", "tip": "xy", "order": 1, "clip": False})
        xerr, yerr = errors.get((d.point, p.name), (0.0, 0.0))
        if xerr:
            data.append(_segment(x - xerr, y, x + xerr, y, c, f"a:{p.name}"))
        if yerr:
            data.append(_segment(x, y - yerr * 100, x, y + yerr * 100, c, f"a:{p.name}"))
    if len(v.front) > 1:
        data.append({"type": "line", "label": "Pareto front", "stepped": "before", "borderDash": [5, 4],
                     "xy": [nums([p.cost or 0.0 for p in v.front], 4),
                            nums([(p.attainment or 0.0) * 100 for p in v.front], 3)],
                     "borderColor": "#333333", "borderWidth": 1.1, "pointRadius": 0, "order": 3, "key": "front",
                     "tip": "xy"})
    data += _frontier(d)
    if v.pick is not None:
        data.append({"type": "scatter", "label": f"verdict: {v.pick.name}", "tip": "xy", "key": "verdict",
                     "xy": [nums([v.pick.cost or 0.0], 4), nums([(v.pick.attainment or 0.0) * 100], 3)],
                     "pointRadius": 13, "pointHoverRadius": 13, "backgroundColor": "rgba(0,0,0,0)",
                     "borderColor": "#000000", "borderWidth": 1.6, "order": 0, "clip": False})
    notes: dict[str, Any] = {
        "band": {"type": "box", "yMin": v.target * 100, "yMax": 100.5, "backgroundColor": "rgba(76,159,112,0.10)",
                 "borderWidth": 0},
        "target": annotation_line(v.target * 100, GREEN, dash=(), width=1.2)}
    if v.bound is not None and v.bound.cost is not None and not _has_frontier(d):
        notes["bound"] = annotation_line(v.bound.cost, "#333333", vertical=True, dash=(2, 3), width=1.0)
    if d.perfect is not None and d.perfect.cost is not None:
        notes["perfect"] = annotation_line(d.perfect.cost, PERFECT, vertical=True, dash=(2, 3), width=1.2)
    low = max(0.0, min([v.target * 100 - 5, *[(p.attainment or 0) * 100 - 3 for p in known]]))
    hull = next((ds for ds in data if ds.get("key") == "bound"), None)
    if hull is not None and v.frontier.floor is not None:  # flat below the floor: drawn down to the axis
        hull["xy"] = [[hull["xy"][0][0], *hull["xy"][0]], [round(low, 1), *hull["xy"][1]]]
    scales = {"x": axis(cost_label, min=0, **_x_limit(d, known)), "y": axis("SLO attainment (%)", min=round(low, 1),
                                                                             max=100.5)}
    return panel(data, scales, kind="scatter", height=330, title=title,
                 plugins={"annotation": {"annotations": notes}},
                 interaction={"mode": "nearest", "intersect": True})


def _x_limit(d: PointDecision, known: list[Any]) -> dict[str, float]:
    """Frontier runs far dearer than every compared point (the top headrooms) would squeeze the points into
    a corner: the axis then ends a little past the dearest point, the bound's line running off the edge."""
    top = max([p.cost or 0.0 for p in known] + [d.perfect.cost or 0.0 if d.perfect else 0.0])
    far = max((p.cost or 0.0 for p in d.verdict.frontier.usable), default=0.0)
    if top <= 0 or far <= 1.25 * top:
        return {}
    step = 10 ** math.floor(math.log10(top * 1.15)) / 2
    return {"max": math.ceil(top * 1.15 / step) * step}


def _has_frontier(d: PointDecision) -> bool:
    return any(p.frontier for p in d.verdict.frontier.usable)


def _frontier(d: PointDecision) -> list[dict[str, Any]]:
    """The bound's hull (page cost unit), the frontier's runs, and rings on bound violations."""
    if not _has_frontier(d):
        return []
    v, out = d.verdict, []
    hull = v.frontier.hull(page_cost)
    out.append({"type": "line", "label": "bound (oracle frontier)", "xy": [nums([c for _, c in hull], 4),
                nums([a * 100 for a, _ in hull], 3)], "borderColor": BOUND, "borderWidth": 1.6, "pointRadius": 0,
                "order": 4, "key": "bound", "tip": "xy"})
    runs = [p for p in v.frontier.usable if p.frontier]
    out.append({"type": "scatter", "label": "oracle frontier run", "names": [p.name for p in runs],
                "xy": [nums([p.cost or 0.0 for p in runs], 4), nums([(p.attainment or 0.0) * 100 for p in runs], 3)],
                "backgroundColor": BOUND, "pointStyle": "rectRot", "pointRadius": 3, "pointHoverRadius": 5,
                "borderWidth": 0, "order": 2, "key": "bound", "tip": "xy"})
    bad = [p for p in d.points if p.name in v.violations and p.cost is not None and p.attainment is not None]
    if bad:
        out.append({"type": "scatter", "label": "bound violation", "tip": "xy", "key": "violation",
                    "xy": [nums([p.cost or 0.0 for p in bad], 4), nums([(p.attainment or 0.0) * 100 for p in bad], 3)],
                    "pointRadius": 10, "pointHoverRadius": 10, "backgroundColor": "rgba(0,0,0,0)",
                    "borderColor": VIOLATION, "borderWidth": 1.8, "order": 0, "clip": False})
    return out


def cost_vs_attainment(scenario: str, decisions: list[PointDecision], colors: dict[str, str],
                       cost_label: str, errors: dict[tuple[str, str], tuple[float, float]] | None = None
                       ) -> dict[str, Any]:
    """One figure per scenario; ``errors``: (point, autoscaler) -> (cost, attainment) CI half widths."""
    panels = [_panel(d, colors, f"{scenario}{' / ' + d.point if d.point else ''}", cost_label, errors or {})
              for d in decisions]
    names = sorted({p.name for d in decisions for p in d.points if p.name in colors or p.bound})
    bound = {p.name for d in decisions for p in d.points if p.bound}
    legend = [legend_item(a, colors.get(a, "#333333"), "star" if a in bound else "marker", f"a:{a}") for a in names]
    for label, color in (("trial", TRIAL), ("trial on the front", TRIAL_FRONT)):
        if any(ds["key"] == f"t:{label}" for pnl in panels for ds in pnl["data"]["datasets"]):
            legend.append(legend_item(label, color, "marker", f"t:{label}"))
    legend += [legend_item("Pareto front (deployable)", "#333333", "dash", "front"),
               legend_item("target attainment", GREEN, "line"),
               legend_item("verdict", "#000000", "ring", "verdict")]
    frontier = any(_has_frontier(d) for d in decisions)
    if frontier:
        legend.append(legend_item("bound: oracle frontier", BOUND, "line", "bound"))
        if any(d.verdict.violations for d in decisions):
            legend.append(legend_item("bound violation", VIOLATION, "ring", "violation"))
    elif bound:
        legend.append(legend_item("oracle's cost (bound)", "#333333", "dot"))
    if any(d.perfect is not None and d.perfect.cost is not None for d in decisions):
        legend.append(legend_item("perfect system (#1499)", PERFECT, "dot"))
    caption = (f"One point per autoscaler ({cost_label}, means over seeds); star: the oracle (a bound: it reads the "
               "future)" + ("; solid line: the bound, the oracle frontier's lower hull (diamonds: its runs at "
                            "several headrooms and the floor), regret is the GPU-hours above it" if frontier else
                            ", dotted line at its cost") +
               "; dashed: the Pareto front of the deployable autoscalers; circled: the verdict; shaded: attainments "
               "meeting the target" + ("; dotted purple: the perfect system's cost (llm-d-autoscaling #1499, "
                                       "instant scaling at the SLO-bounded replica capacity)" if
                                       any(d.perfect is not None for d in decisions) else "") + ".")
    return figure(f"scatter-{scenario}", "", caption, panels, legend,
                  columns=min(max(len(decisions), 1), MAX_COLUMNS))
