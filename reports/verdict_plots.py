"""Cost against SLO attainment, one panel per sweep point of a scenario: where each autoscaler sits
relative to the target, the deployable Pareto front and the oracle's bound.

Drawing only: the points, the front and the target come from ``suite_decide.decisions`` (the logic
lives in reports/verdict.py). Each autoscaler keeps the page's colour; the oracle is a star, the
front a dashed step line through its points, the target a horizontal line over a shaded band of
attainments that meet it. Points averaged over seeds carry their seeds' spread as error bars when
``errors`` gives it.
"""
from __future__ import annotations

import matplotlib.pyplot as plt

from .figures import WIDTH_IN, to_data_uri
from .suite_decide import PointDecision

MAX_COLUMNS = 4


def _panel(ax: plt.Axes, d: PointDecision, colors: dict[str, str], title: str,
           errors: dict[tuple[str, str], tuple[float, float]]) -> None:
    v = d.verdict
    known = [p for p in d.points if p.cost is not None and p.attainment is not None]
    ax.axhspan(v.target * 100, 100.5, color="#4c9f70", alpha=0.08, lw=0)
    ax.axhline(v.target * 100, color="#4c9f70", lw=1.0, ls="-")
    if len(v.front) > 1:
        xs = [p.cost or 0.0 for p in v.front]  # front points all have a cost
        ys = [(p.attainment or 0.0) * 100 for p in v.front]
        ax.step(xs, ys, where="post", color="#333333", lw=1.0, ls="--", zorder=2)
    for p in known:
        xerr, yerr = errors.get((d.point, p.name), (0.0, 0.0))
        x, y = p.cost or 0.0, (p.attainment or 0.0) * 100  # known: both set
        ax.errorbar([x], [y], xerr=[xerr] if xerr else None, yerr=[yerr * 100] if yerr else None,
                    fmt="*" if p.bound else "o", ms=13 if p.bound else 8, color=colors.get(p.name, "#333333"),
                    mec="black", mew=0.6, elinewidth=0.8, capsize=2, zorder=3)
        if v.pick is not None and p.name == v.pick.name:
            ax.scatter([x], [y], s=260, facecolors="none", edgecolors="black", lw=1.4, zorder=4)
    if v.bound is not None and v.bound.cost is not None:
        ax.axvline(v.bound.cost, color="#333333", lw=0.8, ls=":", zorder=1)
    ax.set_title(title)
    ax.set_ylim(max(0.0, min([v.target * 100 - 5, *[(p.attainment or 0) * 100 - 3 for p in known]])), 100.5)
    ax.set_xlim(left=0)
    ax.set_ylabel("SLO attainment (%)")


def cost_vs_attainment(scenario: str, decisions: list[PointDecision], colors: dict[str, str],
                       cost_label: str, errors: dict[tuple[str, str], tuple[float, float]] | None = None) -> str:
    """One figure per scenario; ``errors``: (point, autoscaler) -> (cost, attainment) CI half widths."""
    n = max(len(decisions), 1)
    cols = min(n, MAX_COLUMNS)
    rows = -(-n // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(WIDTH_IN, 3.3 * rows + 0.6), squeeze=False)
    for ax, d in zip(axes.flat, decisions, strict=False):
        _panel(ax, d, colors, f"{scenario}{' / ' + d.point if d.point else ''}", errors or {})
        ax.set_xlabel(cost_label)
    for ax in list(axes.flat)[len(decisions):]:
        ax.set_axis_off()
    names = sorted({p.name for d in decisions for p in d.points})
    handles = [plt.Line2D([], [], marker="*" if any(p.bound for d in decisions for p in d.points if p.name == a)
                          else "o", ls="", color=colors.get(a, "#333333"), mec="black", ms=9, label=a)
               for a in names]
    handles += [plt.Line2D([], [], color="#333333", ls="--", label="Pareto front (deployable)"),
                plt.Line2D([], [], color="#4c9f70", label="target attainment"),
                plt.Line2D([], [], marker="o", ls="", mfc="none", mec="black", ms=12, label="verdict")]
    ncol = min(len(handles), 6)
    legend_rows = -(-len(handles) // ncol)
    top = 1 - (0.06 + 0.05 * legend_rows) / (rows * 0.8 + 0.2)
    fig.subplots_adjust(left=0.07, right=0.99, bottom=0.14 / rows, top=top, hspace=0.5, wspace=0.25)
    fig.legend(handles=handles, loc="upper center", ncol=ncol, bbox_to_anchor=(0.5, 0.995), fontsize=8)
    return to_data_uri(fig)
