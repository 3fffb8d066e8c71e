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

from scalearena.reports.compare import ALPHA, Comparison, Delta

VERDICT_MARK = {"regressed": "REGRESSED", "missing": "MISSING", "improved": "improved", "within": "ok",
                "same": "same", "new": "new", "n/a": "n/a", "noise": "noise"}


HEATMAP_CLIP_PCT = 100.0  # colour saturates at +-100 %; the number in the cell stays exact


def gated(c: Comparison) -> list[Delta]:
    """Deltas of gated metrics that either side has (a metric neither reports, e.g. USD for unpriced GPUs, is not
    gated), regressions first, then by run and catalog order."""
    rows = [d for d in c.deltas if d.tolerance_pct is not None and d.verdict != "n/a"]
    order = {k: i for i, k in enumerate(c.keys())}
    return sorted(rows, key=lambda d: (d not in c.regressions, order[d.key]))


def shown(c: Comparison, verbose: bool = False) -> list[Delta]:
    """What a reader needs: regressions, then improvements beyond tolerance; every known delta when verbose."""
    if verbose:
        order = {k: i for i, k in enumerate(c.keys())}
        known = [d for d in c.deltas if d.verdict != "n/a"]  # a metric neither side has is noise
        return sorted(known, key=lambda d: (d not in c.regressions, order[d.key]))
    return c.regressions + c.noisy + c.improvements


def _row(d: Delta) -> list[str]:
    tol = "–" if d.tolerance_pct is None else f"{'-' if d.metric.direction == 'higher' else '+'}{d.tolerance_pct:g} %"
    return [d.key, d.metric.id, d.metric.format(d.baseline), d.metric.format(d.current), d.change_text, tol,
            VERDICT_MARK[d.verdict], d.noise_text]


HEADER = ["run", "metric", "baseline", "current", "change", "tolerance", "verdict", "seeds: p, 95 % CI"]


def noise_line(c: Comparison) -> str:
    """How the verdict treats seed noise (docs/reports.md, "Regression or noise")."""
    if c.noise_blind:
        return ("noise-blind: one seed per run, so a change beyond tolerance cannot be told from seed noise "
                "(repeat both sides over seeds, `seeds: [1, 2, 3]` in the suite, to test it)")
    return (f"over {c.seeds}+ seeds per run: a worsening beyond tolerance is a regression only at p < {ALPHA:g} "
            "(paired t over the seeds both sides ran, else Welch t); otherwise it is listed as noise")


def verdict_line(c: Comparison) -> str:
    n_runs = len(c.keys())
    noisy = f"; {len(c.noisy)} changes beyond tolerance within seed noise" if c.noisy else ""
    if c.passed:
        return f"PASS: {n_runs} runs, no regression beyond tolerance{noisy}"
    parts = []
    if c.regressions:
        parts.append(f"{len(c.regressions)} regressions in {len({d.key for d in c.regressions})} runs")
    if c.incomplete:
        parts.append(f"{len(c.incomplete)} incomplete runs ({', '.join(c.incomplete)})")
    return f"FAIL: {'; '.join(parts)} (of {n_runs} runs){noisy}"


def config_warning(c: Comparison) -> list[str]:
    """Lines saying that the two sides did not measure the same thing (empty when they did)."""
    if not c.config_changes:
        return []
    return ["warning: SLOs, workload or cluster differ between baseline and current (numbers are not comparable):",
            *[f"  {line}" for line in c.config_changes]]


REFUSED = ("NOT COMPARED: SLOs, workload or cluster differ between baseline and current (listed below); "
           "rerun one side, or pass --allow-config-change to compare anyway")


def text_table(c: Comparison, verbose: bool = False, refused: bool = False) -> str:
    """Verdict first, then the config warning, then the table of notable (or, verbose, all) deltas. ``refused``
    (the sides measured different things and --allow-config-change was not given): the refusal comes first
    and the verdict reads as what comparing anyway would say."""
    verdict = f"if compared anyway: {verdict_line(c)}" if refused else verdict_line(c)
    out = [*([REFUSED] if refused else []), verdict, noise_line(c), *config_warning(c)]
    deltas = shown(c, verbose)
    if deltas:
        rows = [HEADER] + [_row(d) for d in deltas]
        widths = [max(len(r[i]) for r in rows) for i in range(len(HEADER))]
        lines = ["  ".join(cell.ljust(w) if i < 2 else cell.rjust(w)
                           for i, (cell, w) in enumerate(zip(r, widths, strict=True))) for r in rows]
        lines.insert(1, "  ".join("-" * w for w in widths))
        out += ["", *lines]
    n_quiet = len(gated(c)) - len(c.regressions) - len(c.noisy) - len(c.improvements)
    if not verbose:
        out += ["", f"{n_quiet} gated metric values within tolerance not shown (--verbose lists every metric)."]
    return "\n".join(out)


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def markdown(c: Comparison, refused: bool = False) -> str:
    """The step summary; ``refused`` (different SLOs or workload, no --allow-config-change): the refusal leads."""
    icon = "⛔" if refused else "✅" if c.passed else "❌"
    verdict = f"if compared anyway: {verdict_line(c)}" if refused else verdict_line(c)
    out = [f"## {icon} scalearena compare", "", *([f"**{_md_escape(REFUSED)}**", ""] if refused else []),
           f"**{_md_escape(verdict)}**", "",
           f"Baseline `{_md_escape(str(c.baseline.root))}` · current `{_md_escape(str(c.current.root))}`", ""]
    if c.config_changes:
        out += [f"> ⚠️ {_md_escape(config_warning(c)[0])}", ">",
                *[f"> - `{_md_escape(line)}`" for line in c.config_changes], ""]
    table = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    out += [f"_{_md_escape(noise_line(c))}_", ""]
    for title, deltas in (("Regressions", c.regressions), ("Beyond tolerance but within seed noise", c.noisy),
                          ("Improvements beyond tolerance", c.improvements)):
        if deltas:
            out += [f"### {title}", "", *table]
            out += ["| " + " | ".join(_md_escape(x) for x in _row(d)) + " |" for d in deltas]
            out.append("")
    out += ["<details><summary>All gated metrics</summary>", "", *table]
    out += ["| " + " | ".join(_md_escape(x) for x in _row(d)) + " |" for d in gated(c)]
    out += ["", "</details>", ""]
    return "\n".join(out)


def append_step_summary(c: Comparison, refused: bool = False) -> Path | None:
    """Append the Markdown to $GITHUB_STEP_SUMMARY when running in GitHub Actions."""
    target = os.environ.get("GITHUB_STEP_SUMMARY")
    if not target:
        return None
    with open(target, "a", encoding="utf-8") as f:
        f.write(markdown(c, refused) + "\n")
    return Path(target)


# ColorBrewer RdYlGn, 5 classes (colorbrewer2.org), reversed: green = better, red = worse than the baseline.
_HEAT_STOPS = ((-1.0, (26, 150, 65)), (-0.5, (166, 217, 106)), (0.0, (255, 255, 191)), (0.5, (253, 174, 97)),
               (1.0, (215, 25, 28)))


def heat_color(v: float, lim: float = HEATMAP_CLIP_PCT) -> str:
    """Background of a heatmap cell: ``v`` (signed % worse) clipped to +-``lim``, interpolated on the stops."""
    x = max(-1.0, min(1.0, v / lim))
    for (x0, c0), (x1, c1) in zip(_HEAT_STOPS, _HEAT_STOPS[1:], strict=False):
        if x <= x1:
            f = (x - x0) / (x1 - x0)
            return "#" + "".join(f"{round(a + f * (b - a)):02x}" for a, b in zip(c0, c1, strict=True))
    return "#d7191c"


def delta_heatmap(c: Comparison) -> dict[str, object] | None:
    """Runs x gated metrics, as an HTML table coloured by how much worse (red) or better (green) than
    the baseline; every cell prints its exact change (a number is text, not pixels)."""
    metric_ids = list(dict.fromkeys(d.metric.id for d in c.deltas if d.tolerance_pct is not None))
    keys = c.keys()
    if not metric_ids or not keys:
        return None
    grid: dict[tuple[str, str], float] = {}
    for d in c.deltas:
        if d.metric.id in metric_ids and d.change_pct is not None:
            grid[(d.key, d.metric.id)] = (-1.0 if d.metric.direction == "higher" else 1.0) * d.change_pct
    rows = []
    for key in keys:
        cells = []
        for m in metric_ids:
            v = grid.get((key, m))
            if v is None:
                cells.append({"text": "", "bg": "#ffffff", "fg": "#1f2328", "title": f"{key} {m}: no change known"})
            else:
                cells.append({"text": "0" if round(v) == 0 else f"{v:+.0f}", "bg": heat_color(v), "fg": _ink(v),
                              "title": f"{key} {m}: {v:+.2f} % {'worse' if v > 0 else 'better' if v < 0 else ''}"})
        rows.append({"key": key, "cells": cells})
    return {"metrics": metric_ids, "rows": rows, "clip": HEATMAP_CLIP_PCT,
            "scale": [{"label": f"{x:+.0f}", "bg": heat_color(x), "fg": _ink(x)} for x in (-100, -50, 0, 50, 100)]}


def _ink(v: float, lim: float = HEATMAP_CLIP_PCT) -> str:
    """Text colour readable on ``heat_color(v)``: white on the two dark ends of the scale."""
    return "#ffffff" if abs(v) > 0.7 * lim else "#1f2328"


def write_compare_html(c: Comparison, path: Path, verbose: bool = False, refused: bool = False) -> Path:
    from scalearena.reports.report import _write_html, environment

    verdict = f"{REFUSED} — if compared anyway: {verdict_line(c)}" if refused else verdict_line(c)
    html = environment().get_template("compare.html").render(
        c=c, verdict=verdict, passed=c.passed and not refused, noise=noise_line(c), header=HEADER, rows=[(d, _row(d)) for d in shown(c, verbose)],
        all_rows=[(d, _row(d)) for d in (gated(c) if not verbose else [])], warning=config_warning(c),
        heatmap=delta_heatmap(c), tolerances=sorted(c.tolerances.items()))
    _write_html(path, html)
    return path
