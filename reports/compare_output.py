"""What ``scalearena compare`` prints and writes: a text table, Markdown for a
CI job summary, and compare.html.

All three list the same gated deltas in the same order (regressions first),
so the CI log, the job summary and the HTML never disagree.
"""
from __future__ import annotations

import os
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from .compare import Comparison, Delta
from .figures import WIDTH_IN, to_data_uri

VERDICT_MARK = {"regressed": "REGRESSED", "missing": "MISSING", "improved": "improved", "within": "ok",
                "same": "same", "new": "new", "n/a": "n/a"}


def gated(c: Comparison) -> list[Delta]:
    """Deltas of gated metrics, regressions first, then by run and catalog order."""
    rows = [d for d in c.deltas if d.tolerance_pct is not None]
    order = {k: i for i, k in enumerate(c.keys())}
    return sorted(rows, key=lambda d: (d not in c.regressions, order[d.key]))


def _row(d: Delta) -> list[str]:
    return [d.key, d.metric.id, d.metric.format(d.baseline), d.metric.format(d.current), d.change_text,
            f"{'-' if d.metric.direction == 'higher' else '+'}{d.tolerance_pct:g} %", VERDICT_MARK[d.verdict]]


HEADER = ["run", "metric", "baseline", "current", "change", "tolerance", "verdict"]


def verdict_line(c: Comparison) -> str:
    n_runs = len(c.current.runs)
    if c.passed:
        return f"PASS: {n_runs} runs, no regression beyond tolerance"
    parts = []
    if c.regressions:
        parts.append(f"{len(c.regressions)} regressions in {len({d.key for d in c.regressions})} runs")
    if c.incomplete:
        parts.append(f"{len(c.incomplete)} incomplete runs ({', '.join(c.incomplete)})")
    return f"FAIL: {'; '.join(parts)} (of {n_runs} runs)"


def text_table(c: Comparison) -> str:
    rows = [HEADER] + [_row(d) for d in gated(c)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEADER))]
    lines = ["  ".join(cell.ljust(w) if i < 2 else cell.rjust(w) for i, (cell, w) in enumerate(zip(r, widths,
                                                                                              strict=True)))
             for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines + ["", verdict_line(c)])


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def markdown(c: Comparison) -> str:
    icon = "✅" if c.passed else "❌"
    out = [f"## {icon} scalearena compare", "", f"**{_md_escape(verdict_line(c))}**", "",
           f"Baseline `{_md_escape(str(c.baseline.root))}` · current `{_md_escape(str(c.current.root))}`", ""]
    table = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    if c.regressions:
        out += ["### Regressions", "", *table]
        out += ["| " + " | ".join(_md_escape(x) for x in _row(d)) + " |" for d in c.regressions]
        out.append("")
    out += ["<details><summary>All gated metrics</summary>", "", *table]
    out += ["| " + " | ".join(_md_escape(x) for x in _row(d)) + " |" for d in gated(c)]
    out += ["", "</details>", ""]
    return "\n".join(out)


def append_step_summary(c: Comparison) -> Path | None:
    """Append the Markdown to $GITHUB_STEP_SUMMARY when running in GitHub Actions."""
    target = os.environ.get("GITHUB_STEP_SUMMARY")
    if not target:
        return None
    with open(target, "a", encoding="utf-8") as f:
        f.write(markdown(c) + "\n")
    return Path(target)


def delta_heatmap(c: Comparison) -> str | None:
    """Runs x gated metrics, coloured by how much worse (red) or better (green) than the baseline."""
    metric_ids = list(dict.fromkeys(d.metric.id for d in c.deltas if d.tolerance_pct is not None))
    keys = c.keys()
    if not metric_ids or not keys:
        return None
    grid = np.full((len(keys), len(metric_ids)), np.nan)
    for d in c.deltas:
        if d.metric.id in metric_ids and d.change_pct is not None:
            sign = -1.0 if d.metric.direction == "higher" else 1.0
            grid[keys.index(d.key), metric_ids.index(d.metric.id)] = sign * d.change_pct
    fig, ax = plt.subplots(figsize=(WIDTH_IN, 1.2 + 0.32 * len(keys)))
    lim = max(float(np.nanmax(np.abs(grid))) if np.isfinite(grid).any() else 1.0, 10.0)
    im = ax.imshow(np.clip(grid, -lim, lim), cmap="RdYlGn_r", vmin=-lim, vmax=lim, aspect="auto")
    ax.set_xticks(range(len(metric_ids)), metric_ids, rotation=30, ha="right")
    ax.set_yticks(range(len(keys)), keys)
    ax.grid(False)
    for (i, j), v in np.ndenumerate(grid):
        if np.isfinite(v):
            ax.text(j, i, f"{v:+.0f}", ha="center", va="center", fontsize=7)
    fig.colorbar(im, ax=ax, label="% worse than baseline (negative: better)")
    ax.set_title("Change against the baseline, direction-aware")
    return to_data_uri(fig, tight=True)


def write_compare_html(c: Comparison, path: Path) -> Path:
    from .report import _write_html, environment

    html = environment().get_template("compare.html").render(
        c=c, verdict=verdict_line(c), header=HEADER, rows=[(d, _row(d)) for d in gated(c)],
        heatmap=delta_heatmap(c), tolerances=sorted(c.tolerances.items()))
    _write_html(path, html)
    return path
