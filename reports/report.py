"""report.html for one run and for a suite of runs.

Every number shown comes from summary.json (written by ``reports.metrics``)
or is drawn straight from the run's parquet files; nothing is recomputed
with a second definition. Templates are jinja2 with autoescaping on, so a
scenario or autoscaler name can never inject markup. The suite page links to
each run's own report.html (written beside its summary.json) and embeds the
side-by-side figures; per-run reports render in parallel processes.

Rendering is incremental: every page carries, in a ``<meta
name="scalearena-inputs">`` tag, a SHA-256 over the bytes of its input files
and of the renderer itself (this package's modules and templates). A page
whose stored hash matches is not rendered again, so re-running ``report`` or
``make bench`` after an unchanged (deterministic) run costs a few hashes.
"""
from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from functools import cache
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader

from scalearena import __version__
from scalearena.contracts.errors import UserError
from scalearena.contracts.records import FAILURE_CAUSES
from scalearena.reports import run_plots, startup_plots
from scalearena.reports.catalog import BY_ID, cost_metric, cost_tooltip
from scalearena.reports.figures import page_scripts, page_time_unit
from scalearena.reports.load import ResultSet, Run, load_results
from scalearena.reports.metrics import json_clean
from scalearena.reports.results import atomic_write_bytes, atomic_write_json
from scalearena.reports.signal_health import flat_text, missing_text
from scalearena.reports.suite_decide import SUITE_INPUTS
from scalearena.reports.trust import check_summary

TEMPLATES = Path(__file__).parent / "templates"
CHARTJS_VERSION = "4.6.1"  # reports/static/chart.umd.min.js
MAX_DECISION_ROWS = 400
RUN_INPUTS = ("summary.json", "requests.parquet", "timeseries.parquet", "decisions.jsonl", "pods.jsonl")
_HASH_META = re.compile(rb'<meta name="scalearena-inputs" content="([0-9a-f]{64})">')
Progress = Callable[[str, int, int], None]  # (step, done, total)


@cache
def renderer_fingerprint() -> str:
    """SHA-256 over this package's code, templates and scripts: a changed renderer re-renders every page."""
    h = hashlib.sha256(__version__.encode())
    here = Path(__file__).parent
    for path in sorted([*here.glob("*.py"), *TEMPLATES.glob("*.html"), *(here / "static").glob("*.js")]):
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def inputs_hash(files: list[Path], *extra: str) -> str:
    """SHA-256 over the renderer, ``extra`` strings and the bytes of ``files`` (a missing file counts too)."""
    h = hashlib.sha256(renderer_fingerprint().encode())
    for e in extra:
        h.update(b"\0" + e.encode())
    for f in files:
        h.update(b"\0" + f.name.encode() + b"\0")
        if f.is_file():
            with f.open("rb") as fh:
                h.update(hashlib.file_digest(fh, "sha256").digest())
    return h.hexdigest()


def stored_hash(page: Path) -> str | None:
    """The inputs hash a page was rendered from, read from its head (None if absent or unreadable)."""
    try:
        with page.open("rb") as fh:
            m = _HASH_META.search(fh.read(4096))
    except OSError:
        return None
    return m.group(1).decode() if m else None


def run_inputs_hash(run_dir: Path, suite_link: str | None, color: str | None = None) -> str:
    return inputs_hash([run_dir / n for n in RUN_INPUTS], suite_link or "", color or "")


def fmt(value: Any, spec: str = "{}") -> str:
    if value is None or isinstance(value, dict | list):
        return "–"
    try:
        return spec.format(value)
    except (ValueError, TypeError):
        return str(value)


@cache
def environment() -> Environment:
    """One jinja2 environment per process (templates compile once)."""
    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=True, trim_blocks=True, lstrip_blocks=True)
    # every page that extends base.html inlines the chart code (a page without figures overrides the
    # ``scripts`` block), so no renderer can forget it and ship figures that never draw
    env.globals.update(fmt=fmt, version=__version__, causes=FAILURE_CAUSES, chartjs_version=CHARTJS_VERSION,
                       chart_scripts=page_scripts, missing_text=missing_text,
                       flat_text=flat_text)
    env.policies["json.dumps_kwargs"] = {"separators": (",", ":")}
    return env


def _reason(rule: str, message: str) -> str:
    """``rule: message``, unless the message already starts with the rule ("kpa: stable 2.0 ...")."""
    return message if message.startswith(f"{rule}:") else f"{rule}: {message}"


def _reason_text(d: dict[str, Any]) -> str:
    parts = [_reason(str(r.get("rule", "?")), str(r.get("message", ""))) for r in d.get("reasons") or []]
    parts += [f"ALERT {a}" for a in d.get("alerts") or []]
    if d.get("limited"):
        parts.append("limited by capacity")
    return "; ".join(parts)


def decision_rows(decisions: list[dict[str, Any]], limit: int = MAX_DECISION_ROWS, div: float = 1.0
                  ) -> tuple[list[dict], int]:
    """Actions, alerts and collapsed runs of holds (one row per run of holds of a variant); times are
    divided by ``div`` (60: minutes, the page's unit)."""
    rows: list[dict[str, Any]] = []
    holds: dict[tuple[str, str], dict[str, Any]] = {}
    tf = "{:.1f}" if div == 1.0 else "{:.2f}"

    def flush(key: tuple[str, str]) -> None:
        h = holds.pop(key, None)
        if h:
            t0, t1 = tf.format(h["t0"] / div), tf.format(h["t1"] / div)
            span = t0 if h["n"] == 1 else f"{t0}–{t1}"
            rows.append({"t_s": h["t0"], "t": span, "loop": key[1], "variant": key[0], "action": "hold",
                         "action_label": f"hold ×{h['n']}", "replicas": h["replicas"], "reasons": h["reason"]})

    for d in sorted(decisions, key=lambda d: float(d.get("t_s", 0.0))):
        key = (str(d.get("variant", "?")), str(d.get("loop", "main")))
        t = float(d.get("t_s", 0.0))
        if d.get("action", "hold") == "hold":
            h = holds.setdefault(key, {"t0": t, "n": 0})
            h.update(t1=t, n=h["n"] + 1, replicas=str(d.get("current_replicas", "")), reason=_reason_text(d))
            continue
        flush(key)
        rows.append({"t_s": t, "t": tf.format(t / div), "loop": key[1], "variant": key[0], "action": d.get("action"),
                     "action_label": str(d.get("action", "")).replace("_", " "),
                     "replicas": f"{d.get('current_replicas', '?')} → {d.get('desired_replicas', '?')}",
                     "reasons": _reason_text(d)})
    for key in list(holds):
        flush(key)
    rows.sort(key=lambda r: r["t_s"])
    return rows[:limit], max(len(rows) - limit, 0)


def _kpis(s: dict[str, Any]) -> list[dict[str, str]]:
    """Headline numbers; cost in the page's one unit (USD, else only the GPU-hours), the rest on hover."""
    cost = cost_metric([s])
    ids = ["throughput_rps", "goodput_rps", "slo_attainment", "failures", "ttft_p99", "itl_p99", "replicas_mean",
           "gpu_hours", "energy_kwh", "scaling_actions"]
    if cost.id == "cost_usd":
        ids.insert(ids.index("gpu_hours"), "cost_usd")
    return [{"label": BY_ID[i].heading, "value": BY_ID[i].format(BY_ID[i].value(s)),
             "title": cost_tooltip(s) if i in ("cost_usd", "gpu_hours") else ""} for i in ids]


def _pair(a: Any, b: Any, spec: str = "{:.0f}") -> str:
    return f"{fmt(a, spec)} / {fmt(b, spec)}"


def scaling_rows(s: dict[str, Any], div: float = 1.0) -> list[tuple[str, str]]:
    """The run page's scaling KPIs (summary ``scaling`` and ``efficiency``; docs/metrics.md), as
    (what, value) rows; step times in the page's unit (``div``), durations in seconds."""
    sc, eff = s.get("scaling") or {}, s.get("efficiency") or {}
    lag, vo, rec = (sc.get(k) or {} for k in ("decision_to_ready_lag_s", "vs_oracle", "slo_recovery"))
    tf = "{:.1f} s" if div == 1.0 else "{:.2f} min"
    steps = "; ".join(
        f"at {fmt(st.get('t_s', 0) / div, tf)}: {fmt(st.get('rate_before_rps'), '{:.1f}')} → "
        f"{fmt(st.get('rate_after_rps'), '{:.1f}')} req/s, "
        + ("not recovered" if st.get("recover_s") is None else f"{fmt(st.get('recover_s'), '{:.0f}')} s")
        for st in rec.get("steps") or []) or "no load step"
    cost = "cost_usd" if eff.get("cost_usd_per_1m_output_tokens") is not None else "cost"
    unit = "USD" if cost == "cost_usd" else "variantCost·h"
    return [
        ("scale-ups / scale-downs", _pair(sc.get("scale_up_count"), sc.get("scale_down_count"))),
        ("largest step (replicas)", fmt(sc.get("largest_step"))),
        (f"oscillations (reversals within {fmt(sc.get('oscillation_window_s'), '{:.0f}')} s)",
         fmt(sc.get("oscillations"))),
        ("decision to ready, p50 / p95 (s)", _pair(lag.get("p50"), lag.get("p95"))),
        ("requests lost to scale-down (killed)", fmt(sc.get("requests_lost_to_scale_down"))),
        ("under- / over-provisioned against the oracle's schedule (GPU-s)",
         _pair(vo.get("under_provisioned_gpu_s"), vo.get("over_provisioned_gpu_s"))),
        ("the oracle's schedule (GPU-s)", fmt(vo.get("oracle_gpu_s"), "{:.0f}")),
        (f"recovery to {fmt(rec.get('target'), '{:.0%}')} SLO attainment after a load step", steps),
        (f"cost per 1M output / total tokens ({unit})",
         _pair(eff.get(f"{cost}_per_1m_output_tokens"), eff.get(f"{cost}_per_1m_total_tokens"), "{:.3g}")),
        ("energy per 1M tokens (kWh, TDP)", fmt(eff.get("energy_kwh_per_1m_tokens"), "{:.3g}")),
    ]


def run_context(run: Run, color: str | None = None) -> dict[str, Any]:
    s = run.summary
    slo = s.get("slo") or {}
    req, ts = run.request_columns(run_plots.REQUEST_COLUMNS), run.timeseries
    unit = page_time_unit([run])
    pt = run_plots.per_time(ts)
    figures = [run_plots.overview(ts, s, unit, pt), run_plots.replicas_by_variant(ts, unit, pt),
               run_plots.queue_and_ttft(ts, req, slo, unit, pt), run_plots.latency_cdfs(req, slo),
               run_plots.workload(req, float(s.get("duration_s") or 0.0), unit)]
    end_s = max(float(s.get("duration_s") or 0.0), float(ts["t_s"].max()) if len(ts) else 0.0)
    starts = startup_plots.timeline(run.pods, end_s, unit)
    if starts is not None:
        figures.append(starts)
    rows, truncated = decision_rows(run.decisions, div=unit[0])
    counts = dict(s.get("decisions") or {})
    counts.setdefault("scale_up", 0)
    counts.setdefault("scale_down", 0)
    counts.setdefault("hold", 0)
    counts["alerts"] = s.get("alerts", counts.get("alert", 0))
    by_variant = (s.get("replicas") or {}).get("by_variant") or {}
    extra = s.get("variants") or {}
    variants = [{"name": n, **v, **{k: extra.get(n, {}).get(k) for k in
                                    ("replica_hours", "gpu_hours", "cost", "cost_usd", "energy_kwh")},
                 "billed_mean": (extra.get(n, {}).get("billed_replicas") or {}).get("mean")}
                for n, v in sorted(by_variant.items())]
    raw_events = s.get("events")
    events = [{"t": fmt(e.get("t_s") / unit[0] if isinstance(e.get("t_s"), int | float) else None,
                        "{:.1f}" if unit[0] == 1.0 else "{:.2f}"), "kind": e.get("kind", "?"),
               "details": ", ".join(f"{k}={v}" for k, v in e.items() if k not in ("t_s", "kind"))}
              for e in (raw_events if isinstance(raw_events, list) else [])]
    return {"r": run, "s": s, "kpis": _kpis(s), "variants": variants, "color": color,
            "time_unit": "min" if unit[0] == 60.0 else "s", "usd": cost_metric([s]).id == "cost_usd",
            "lead": figures[0], "figures": figures[1:],  # lead: replicas and load, on the first screen
            "decision_rows": rows, "truncated": truncated, "counts": counts, "events": events,
            "scaling": scaling_rows(s, unit[0]),
            "startup_rows": startup_plots.phase_table(run.pods)}


def render_run(run: Run, suite_link: str | None = None, inputs: str | None = None, color: str | None = None) -> str:
    return environment().get_template("run.html").render(**run_context(run, color), suite_link=suite_link,
                                                         inputs_hash=inputs)


def _write_html(path: Path, html: str) -> None:
    atomic_write_bytes(path, html.encode("utf-8"))
    path.chmod(0o644)  # a report is meant to be shared; mkstemp creates 0600


def write_run_report(run_dir: str | Path, suite_link: str | None = None, force: bool = False,
                     color: str | None = None) -> Path:
    """Write ``run_dir/report.html`` for the run whose summary.json is in ``run_dir`` (skipped when the
    page already holds the hash of the same inputs, unless ``force``); ``color``: the autoscaler's colour
    on the suite page."""
    out = Path(run_dir) / "report.html"
    digest = run_inputs_hash(Path(run_dir), suite_link, color)
    if not force and stored_hash(out) == digest:
        return out
    rs = load_results(run_dir)
    if not rs.single_run:
        raise ValueError(f"{run_dir} is not a run folder (no summary.json)")
    check_summary(rs.runs[0])  # an untrustworthy summary renders nothing: one error naming the file and field
    _write_html(out, render_run(rs.runs[0], suite_link, digest, color))
    return out


def _write_run_job(args: tuple[str, str, str]) -> str | None:
    run_dir, suite_link, color = args
    try:
        write_run_report(run_dir, suite_link, force=True, color=color)  # the caller already found it out of date
    except Exception as e:  # one broken run must not cost the whole suite report
        return f"{run_dir}: {type(e).__name__}: {e}"
    return None


def render_suite(rs: Any, inputs: str | None = None, min_attainment: float | None = None) -> str:
    from scalearena.reports.suite_page import suite_context

    return environment().get_template("suite.html").render(**suite_context(rs, min_attainment),
                                                           inputs_hash=inputs)


def _render_pages(tasks: list[tuple[str, str, str]], jobs: int, progress: Progress,
                  suite_page: Callable[[], None]) -> list[str | None]:
    """Render the given run pages, ``jobs`` processes at a time, reporting each finished page; the
    suite page (``suite_page``) is written in this process meanwhile (it needs only the summaries)."""
    errors: list[str | None] = []
    if jobs > 1 and len(tasks) > 1:
        with ProcessPoolExecutor(max_workers=jobs, mp_context=get_context("fork")) as pool:
            pending = pool.map(_write_run_job, tasks)
            suite_page()
            for err in pending:
                errors.append(err)
                progress("run pages", len(errors), len(tasks))
    else:
        for t in tasks:
            errors.append(_write_run_job(t))
            progress("run pages", len(errors), len(tasks))
        suite_page()
    return errors


def trusted(rs: ResultSet) -> ResultSet:
    """``rs`` without the runs whose summary cannot be trusted (reports/trust.py), each named in a warning; such a
    run's own page is removed, so nothing drawn from it is left to be read."""
    keep = []
    for r in rs.runs:
        try:
            check_summary(r)
        except UserError as e:
            print(f"warning: left out of the report: {e.render()}")
            (r.dir / "report.html").unlink(missing_ok=True)
            continue
        keep.append(r)
    return ResultSet(rs.root, keep, rs.suite, rs.single_run)


def write_suite_report(out_dir: str | Path, jobs: int | None = None, progress: Progress | None = None,
                       force: bool = False, min_attainment: float | None = None) -> Path:
    """Write every run's report.html, then OUT/report.html comparing all runs side by side.

    Pages whose inputs are unchanged are kept (see the module docstring) unless ``force``;
    ``progress(step, done, total)`` is called as pages are finished; ``min_attainment`` overrides
    every scenario's SLO-attainment target of the verdict."""
    report = progress or (lambda step, done, total: None)
    rs = load_results(out_dir)
    if rs.single_run:
        return write_run_report(out_dir, force=force)
    rs = trusted(rs)
    from scalearena.reports.suite_page import suite_colors

    root = rs.root
    tasks, digests = [], []
    colors = suite_colors(rs)
    for r in rs.runs:
        link = os.path.relpath(root / "report.html", r.dir)
        digest = run_inputs_hash(r.dir, link, colors[r.autoscaler])
        digests.append(digest)
        if force or stored_hash(r.dir / "report.html") != digest:
            tasks.append((str(r.dir), link, colors[r.autoscaler]))
    out = root / "report.html"
    suite_digest = inputs_hash([root / f for f in SUITE_INPUTS], *digests, f"min_attainment={min_attainment}")

    def suite_page() -> None:
        from scalearena.reports.suite_page import summary_json
        from scalearena.reports.suite_stats import SUMMARY_FILE

        if force or stored_hash(out) != suite_digest or not (root / SUMMARY_FILE).is_file():
            _write_html(out, render_suite(rs, suite_digest, min_attainment))
            atomic_write_json(root / SUMMARY_FILE, json_clean(summary_json(rs)))

    report("run pages", 0, len(tasks))
    errors = _render_pages(tasks, jobs or min(len(tasks), os.cpu_count() or 1), report, suite_page)
    for err in filter(None, errors):
        print(f"warning: run report failed: {err}")
    report("suite page", 1, 1)
    return out
