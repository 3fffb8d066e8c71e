"""HTML reports: structure (golden), escaping of hostile names, empty runs, decision-log collapsing.

Result folders are built by hand here (RunWriter + a few records), not by the
simulator. The golden file pins the structure of the pages — sections,
tables, figures — never pixels. Rewrite it with SCALEARENA_UPDATE_GOLDEN=1.
Figures are Chart.js specs in ``<script type="application/json">`` elements; the only
executable script of a page is the inlined chart code (reports/figures.page_scripts).
"""
from __future__ import annotations

import json
import os
from html.parser import HTMLParser
from pathlib import Path

import pytest

from scalearena.contracts.records import RequestRecord, TimeseriesRecord
from scalearena.controllers.base import Decision, Reason
from scalearena.reports.figures import page_scripts
from scalearena.reports.load import load_results
from scalearena.reports.report import decision_rows, write_run_report, write_suite_report
from scalearena.reports.results import RunWriter, run_dir

GOLDEN = Path(__file__).parents[2] / "golden" / "report_structure.json"
EVIL = "<script>alert(1)</script>"
VARIANTS = [{"name": "va-a100", "model": "m", "gpu": "A100", "gpus_per_replica": 1, "cost": 1.0, "tdp_w": 400.0}]


def _write_run(out: Path, scenario: str, autoscaler: str, sweep: str | None, folder: str | None = None,
               n_requests: int = 6, reason: str = "kv spare 0.05 < 0.1") -> Path:
    meta = {"scenario": scenario, "autoscaler": autoscaler, "cluster": "sim", "seed": 1, "duration_s": 30.0,
            "sample_interval_s": 10.0, "slo": {"ttft_ms": 500.0, "itl_ms": 50.0}, "variants": VARIANTS}
    d = run_dir(out, folder or scenario, autoscaler if folder is None else "as", sweep)
    w = RunWriter(d, meta)
    for i in range(n_requests):
        ok = i % 3 != 2
        w.add_request(RequestRecord(
            request_id=i, model="m", arrival_s=i * 4.0, first_token_s=i * 4.0 + 0.2 if ok else None,
            end_s=i * 4.0 + 1.0, input_tokens=100 + i, output_tokens=20 if ok else 0,
            status="ok" if ok else "rejected", http_status=200 if ok else 429, variant="va-a100" if ok else None,
            pod="p0" if ok else None, ttft_ms=200.0 + 50 * i if ok else None, itl_ms=30.0 if ok else None,
            e2e_ms=1000.0))
    for t in (10.0, 20.0, 30.0):
        w.add_timeseries(TimeseriesRecord(
            t_s=t, variant="va-a100", model="m", spec_replicas=1 + (t > 10), ready_replicas=1 + (t > 20),
            pending_replicas=int(t == 20), terminating_replicas=0, kv_usage_mean=0.5, kv_usage_max=0.7, waiting=1,
            running=2, gpu_util_mean=0.6, offered_rps=0.25, completed_rps=0.2, router_queue=0))
    w.add_decision(10.0, autoscaler, Decision("va-a100", 1, 2, (Reason("saturation", reason),)))
    for t in (20.0, 30.0):
        w.add_decision(t, autoscaler, Decision("va-a100", 2, 2, (Reason("steady", "no trigger"),)))
    w.finish()
    return d


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("suite")
    for a in ("wva", "hpa"):
        for sweep in ("rate-2", "rate-10"):
            _write_run(tmp_path, "rates", a, sweep)
        _write_run(tmp_path, "stairs", a, None)
    (tmp_path / "suite.json").write_text(json.dumps({"seed": 1, "git_sha": "abc123", "versions": {"x": "1"}}))
    write_suite_report(tmp_path)  # parallel path; the tests below read what it wrote
    return tmp_path


class _Structure(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: dict[str, int] = {}
        self.h2: list[str] = []
        self.ids: list[str] = []
        self._in_h2 = False
        self._script: str | None = None  # type of the <script> being read
        self.code: list[str] = []  # executable scripts
        self.specs: list[str] = []  # JSON figure specs

    def handle_starttag(self, tag, attrs):
        self.tags[tag] = self.tags.get(tag, 0) + 1
        a = dict(attrs)
        if tag == "h2":
            self._in_h2 = True
            self.h2.append("")
        if a.get("id") and tag in ("section", "figure", "h2"):
            self.ids.append(a["id"])
        if tag == "script":
            self._script = a.get("type") or "text/javascript"
            assert a.get("src") is None, "scripts must be inlined"
            (self.specs if self._script == "application/json" else self.code).append("")
        if tag == "img":
            assert a["src"].startswith("data:image/png;base64,"), "figures must be inlined"
        if tag == "canvas":
            self.tags["panel"] = self.tags.get("panel", 0) + 1

    def handle_endtag(self, tag):
        if tag == "h2":
            self._in_h2 = False
        if tag == "script":
            self._script = None

    def handle_data(self, data):
        if self._in_h2:
            self.h2[-1] += data.strip()
        if self._script is not None:
            (self.specs if self._script == "application/json" else self.code)[-1] += data

    def summary(self) -> dict:
        return {"h2": self.h2, "ids": self.ids,
                "count": {t: self.tags.get(t, 0)
                          for t in ("table", "img", "figure", "section", "details", "a", "panel")}}


def _structure(html: str) -> dict:
    """The page's outline; checks on the way that the only code is the inlined chart code and that
    every figure spec is JSON with one Chart.js config per canvas."""
    p = _Structure()
    p.feed(html)
    assert p.code == [page_scripts()]
    panels = [json.loads(spec) for spec in p.specs]
    assert sum(len(x) for x in panels) == p.tags.get("panel", 0)
    assert all("<" not in spec for spec in p.specs)  # jinja's tojson escapes < > & (no </script> inside)
    return p.summary()


def test_structure_matches_golden(suite):
    got = {"suite": _structure((suite / "report.html").read_text()),
           "run": _structure((suite / "rates" / "wva" / "rate-2" / "report.html").read_text())}
    if os.environ.get("SCALEARENA_UPDATE_GOLDEN"):
        GOLDEN.write_text(json.dumps(got, indent=2) + "\n")
    assert got == json.loads(GOLDEN.read_text())


def test_suite_links_every_run_and_marks_best(suite):
    html = (suite / "report.html").read_text()
    for key in ("rates/wva/rate-2", "rates/hpa/rate-10", "stairs/hpa"):
        assert f'href="./{key}/report.html"' in html
        assert (suite / key / "report.html").is_file()
    assert 'class="best"' not in html  # identical runs: no column has a single best
    assert "abc123" in html  # git sha from suite.json


def test_every_page_with_figures_inlines_the_chart_code():
    # a page that places figures must extend base.html and keep its scripts block (a renderer that
    # forgot the chart code shipped a tuning page whose scatter never drew)
    templates = Path(__file__).parents[3] / "reports" / "templates"
    with_figures = [t for t in templates.glob("*.html") if not t.name.startswith("_")
                    and ("chart_figure(" in t.read_text() or '"_run_body.html"' in t.read_text())]
    assert {t.name for t in with_figures} >= {"run.html", "suite.html", "tune.html"}
    for t in with_figures:
        text = t.read_text()
        assert '{% extends "base.html" %}' in text and "{% block scripts %}" not in text, t.name
    assert "{% block scripts %}{% endblock %}" in (templates / "compare.html").read_text()  # no figures there


def test_hostile_names_are_escaped(tmp_path):
    d = _write_run(tmp_path, EVIL, EVIL, None, folder="evil", reason=EVIL)
    suite_html = write_suite_report(tmp_path, jobs=1).read_text()
    run_html = (d / "report.html").read_text()
    for html in (run_html, suite_html):
        assert EVIL not in html
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html or "\\u003cscript\\u003e" in html
        assert _structure(html)  # and no <script> but the chart code


def test_run_without_requests_or_timeseries(tmp_path):
    meta = {"scenario": "idle", "autoscaler": "static", "cluster": "sim", "seed": 0, "duration_s": 10.0,
            "slo": {"ttft_ms": 1.0, "itl_ms": 1.0}, "variants": []}
    w = RunWriter(tmp_path / "idle" / "static", meta)
    w.finish()
    html = write_run_report(tmp_path / "idle" / "static").read_text()
    # nothing to draw: each figure says why in words, with no chart panel
    assert html.count("no timeseries recorded") == 2 and html.count("no requests were sent") == 1
    assert _structure(html)["count"]["figure"] == 5
    assert load_results(tmp_path).runs[0].summary["requests_total"] == 0


def test_decision_rows_collapse_holds():
    def dec(t, cur, want):
        return {"t_s": t, "variant": "v", "loop": "main", "current_replicas": cur, "desired_replicas": want,
                "action": "hold" if cur == want else ("scale_up" if want > cur else "scale_down"),
                "reasons": [{"rule": "r", "message": "m"}], "alerts": []}
    rows, truncated = decision_rows([dec(0, 1, 1), dec(15, 1, 1), dec(30, 1, 2), dec(45, 2, 2)])
    # holds at 0 and 15 collapse into one row, then the scale-up, then one hold
    assert [r["action_label"] for r in rows] == ["hold ×2", "scale up", "hold ×1"]
    assert rows[0]["t"] == "0.0–15.0" and rows[1]["replicas"] == "1 → 2"
    assert truncated == 0


def test_decision_reasons_name_their_rule_once():
    d = {"t_s": 2.0, "variant": "v", "current_replicas": 1, "desired_replicas": 2, "action": "scale_up",
         "reasons": [{"rule": "kpa", "message": "kpa: stable 1.12 / panic 3.00"},
                     {"rule": "clamp", "message": "kpa: 3 clamped to [1, 2]"}], "alerts": []}
    (row,), _ = decision_rows([d])
    # the kpa message carries its rule already (was "kpa: kpa: stable ..."); the clamp's does not
    assert row["reasons"] == "kpa: stable 1.12 / panic 3.00; clamp: kpa: 3 clamped to [1, 2]"


def test_report_refuses_a_folder_mixing_suites(tmp_path):
    from scalearena.contracts.errors import UserError

    for name in ("a", "b"):
        _write_run(tmp_path / name, "stairs", "wva", None)
        (tmp_path / name / "suite.json").write_text(json.dumps({"runs": [{"dir": "stairs/wva"}]}))
    with pytest.raises(UserError, match="mixes runs of 2 unrelated suites: a/suite.json, b/suite.json"):
        load_results(tmp_path)
    with pytest.raises(UserError, match="belong to the suite in"):
        load_results(tmp_path / "a" / "stairs")  # below the suite: point at the suite folder instead
    assert [r.key for r in load_results(tmp_path / "a").runs] == ["stairs/wva"]
    _write_run(tmp_path / "a", "burst", "hpa", None)  # a later run written into the suite's folder
    with pytest.raises(UserError, match="holds runs its suite.json does not list: burst/hpa"):
        load_results(tmp_path / "a")


def test_rendering_is_incremental_by_content_hash(tmp_path):
    from scalearena.reports.report import stored_hash

    for a in ("wva", "hpa"):
        _write_run(tmp_path, "stairs", a, None)
    calls: list[tuple[str, int, int]] = []
    write_suite_report(tmp_path, jobs=1, progress=lambda *a: calls.append(a))
    # 2 run pages rendered, then the suite page
    assert ("run pages", 2, 2) in calls and calls[-1] == ("suite page", 1, 1)
    wva, hpa = tmp_path / "stairs" / "wva" / "report.html", tmp_path / "stairs" / "hpa" / "report.html"
    before = {p: (stored_hash(p), p.stat().st_mtime_ns) for p in (wva, hpa, tmp_path / "report.html")}
    assert all(h and len(h) == 64 for h, _ in before.values())
    calls.clear()
    write_suite_report(tmp_path, jobs=1, progress=lambda *a: calls.append(a))
    assert calls[0] == ("run pages", 0, 0)  # nothing to render
    assert {p: (stored_hash(p), p.stat().st_mtime_ns) for p in before} == before
    # a changed input of one run re-renders that run page and the suite page only
    _write_run(tmp_path, "stairs", "wva", None, n_requests=9)
    calls.clear()
    write_suite_report(tmp_path, jobs=1, progress=lambda *a: calls.append(a))
    assert ("run pages", 1, 1) in calls
    assert stored_hash(wva) != before[wva][0] and hpa.stat().st_mtime_ns == before[hpa][1]
    assert stored_hash(tmp_path / "report.html") != before[tmp_path / "report.html"][0]


def test_suite_scalars_read_as_times_and_words():
    from scalearena.reports.suite_page import scalar_text

    # 1796175351.06 s after the epoch: 20789 days (2026-12-02) + 5751 s = 01:35:51 UTC
    assert scalar_text("started_unix", 1796175351.0635126) == "2026-12-02 01:35:51 UTC"
    assert (scalar_text("complete", True), scalar_text("complete", False)) == ("yes", "no")
    assert scalar_text("cluster", "sim") == "sim" and scalar_text("seeds_unix", None) is None


def test_report_in_a_log_says_what_it_renders(tmp_path):
    from click.testing import CliRunner

    from scalearena.reports.cli import report

    for a in ("wva", "hpa"):
        _write_run(tmp_path, "stairs", a, None)
    first = CliRunner().invoke(report, [str(tmp_path), "--jobs", "1"])  # not a terminal: no live bar
    assert first.exit_code == 0, first.output
    assert "report: run pages: 2 to render" in first.output
    again = CliRunner().invoke(report, [str(tmp_path), "--jobs", "1"])  # nothing changed: nothing to say
    assert again.exit_code == 0 and "to render" not in again.output


def test_a_run_whose_summary_cannot_be_trusted_is_left_out_and_named(tmp_path):
    """A summary with goodput NaN (or counts that do not add up) was drawn as if measured; now the suite report
    leaves the run out with one warning naming the file and field, removes its page, and a report of that run
    alone is one error (exit 2)."""
    import json

    from click.testing import CliRunner

    from scalearena.reports.cli import report

    for a in ("wva", "hpa"):
        _write_run(tmp_path, "stairs", a, None)
    write_suite_report(tmp_path, jobs=1)
    bad = tmp_path / "stairs" / "hpa"
    s = json.loads((bad / "summary.json").read_text())
    s["requests_ok"] += 500  # 6 requests: 4 ok + 2 rejected; 504 + 2 != 6
    (bad / "summary.json").write_text(json.dumps(s))
    r = CliRunner().invoke(report, [str(tmp_path), "--jobs", "1"])
    assert r.exit_code == 0, r.output
    assert f"warning: left out of the report: {bad / 'summary.json'}: requests_total: got 6 (expected requests_ok " \
           "+ requests_failed = 504 + 2 = 506)" in r.output
    assert not (bad / "report.html").exists() and (tmp_path / "stairs" / "wva" / "report.html").exists()
    page = (tmp_path / "report.html").read_text()
    assert "stairs/wva/report.html" in page and "stairs/hpa/report.html" not in page
    alone = CliRunner().invoke(report, [str(bad)])
    assert alone.exit_code == 2 and "requests_total: got 6" in alone.output
