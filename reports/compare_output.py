"""What ``scalearena compare`` prints and writes: a text table, Markdown for a
CI job summary, and compare.html.

All three lead with the verdict, then list the same deltas in the same order:
by default only what changed beyond tolerance (regressions first, then
improvements), with ``verbose`` every metric of every run, so the CI log, the
job summary and the HTML never disagree. The heatmap's colour scale is
symmetric and clipped (``HEATMAP_CLIP_PCT``) so one +6000 % cell cannot wash
out a -66 % goodput collapse; each cell prints its true number.
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


HEATMAP_CLIP_PCT = 100.0  # colour saturates at +-100 %; the number in the cell stays exact


def gated(c: Comparison) -> list[Delta]:
    """Deltas of gated metrics, regressions first, then by run and catalog order."""
    rows = [d for d in c.deltas if d.tolerance_pct is not None]
    order = {k: i for i, k in enumerate(c.keys())}
    return sorted(rows, key=lambda d: (d not in c.regressions, order[d.key]))


def shown(c: Comparison, verbose: bool = False) -> list[Delta]:
    """What a reader needs: regressions, then improvements beyond tolerance; every known delta when verbose."""
    if verbose:
        order = {k: i for i, k in enumerate(c.keys())}
        known = [d for d in c.deltas if d.verdict != "n/a"]  # a metric neither side has is noise
        return sorted(known, key=lambda d: (d not in c.regressions, order[d.key]))
    return c.regressions + c.improvements


def _row(d: Delta) -> list[str]:
    tol = "–" if d.tolerance_pct is None else f"{'-' if d.metric.direction == 'higher' else '+'}{d.tolerance_pct:g} %"
    return [d.key, d.metric.id, d.metric.format(d.baseline), d.metric.format(d.current), d.change_text, tol,
            VERDICT_MARK[d.verdict]]


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


def config_warning(c: Comparison) -> list[str]:
    """Lines saying that the two sides did not measure the same thing (empty when they did)."""
    if not c.config_changes:
        return []
    return ["warning: SLOs or workload differ between baseline and current (numbers are not comparable):",
            *[f"  {line}" for line in c.config_changes]]


def text_table(c: Comparison, verbose: bool = False) -> str:
    """Verdict first, then the config warning, then the table of notable (or, verbose, all) deltas."""
    out = [verdict_line(c), *config_warning(c)]
    deltas = shown(c, verbose)
    if deltas:
        rows = [HEADER] + [_row(d) for d in deltas]
        widths = [max(len(r[i]) for r in rows) for i in range(len(HEADER))]
        lines = ["  ".join(cell.ljust(w) if i < 2 else cell.rjust(w)
                           for i, (cell, w) in enumerate(zip(r, widths, strict=True))) for r in rows]
        lines.insert(1, "  ".join("-" * w for w in widths))
        out += ["", *lines]
    n_quiet = len(gated(c)) - len(c.regressions) - len(c.improvements)
    if not verbose:
        out += ["", f"{n_quiet} gated metric values within tolerance not shown (--verbose lists every metric)."]
    return "\n".join(out)


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def markdown(c: Comparison) -> str:
    icon = "✅" if c.passed else "❌"
    out = [f"## {icon} scalearena compare", "", f"**{_md_escape(verdict_line(c))}**", "",
           f"Baseline `{_md_escape(str(c.baseline.root))}` · current `{_md_escape(str(c.current.root))}`", ""]
    if c.config_changes:
        out += [f"> ⚠️ {_md_escape(config_warning(c)[0])}", ">",
                *[f"> - `{_md_escape(line)}`" for line in c.config_changes], ""]
    table = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    for title, deltas in (("Regressions", c.regressions), ("Improvements beyond tolerance", c.improvements)):
        if deltas:
            out += [f"### {title}", "", *table]
            out += ["| " + " | ".join(_md_escape(x) for x in _row(d)) + " |" for d in deltas]
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
    lim = HEATMAP_CLIP_PCT
    im = ax.imshow(np.clip(grid, -lim, lim), cmap="RdYlGn_r", vmin=-lim, vmax=lim, aspect="auto")
    ax.set_xticks(range(len(metric_ids)), metric_ids, rotation=30, ha="right")
    ax.set_yticks(range(len(keys)), keys)
    ax.grid(False)
    for (i, j), v in np.ndenumerate(grid):
        if np.isfinite(v):
            ax.text(j, i, "0" if round(v) == 0 else f"{v:+.0f}", ha="center", va="center", fontsize=7,
                    color="white" if abs(v) > 0.7 * lim else "black")
    cbar = fig.colorbar(im, ax=ax, label=f"% worse than baseline (negative: better; clipped at ±{lim:.0f})",
                        extend="both")
    cbar.set_ticks([-lim, -lim / 2, 0, lim / 2, lim])
    ax.set_title("Change against the baseline, direction-aware")
    return to_data_uri(fig, tight=True)


def write_compare_html(c: Comparison, path: Path, verbose: bool = False) -> Path:
    from .report import _write_html, environment

    html = environment().get_template("compare.html").render(
        c=c, verdict=verdict_line(c), header=HEADER, rows=[(d, _row(d)) for d in shown(c, verbose)],
        all_rows=[(d, _row(d)) for d in (gated(c) if not verbose else [])], warning=config_warning(c),
        heatmap=delta_heatmap(c), tolerances=sorted(c.tolerances.items()))
    _write_html(path, html)
    return path
