"""Reports as a reader sees them: rendered in headless Chromium at laptop and desktop width.

The demo suite (reports.demo: arithmetic, not the simulator) with eight
autoscalers, among them long names, is rendered; then each page is opened in
Debian's ``chromium`` with a probe script injected into a copy of it that
writes measurements into the DOM (read back with ``--dump-dom``): page and
key-table widths against the viewport, text cut off inside its box (legend
entries are HTML: their text extent against their box), images that failed to
decode, console errors, and the figures themselves: every Chart.js canvas drew
a chart (pixels painted, a plot area of sensible size, every axis inside the
canvas). Skipped, saying why, when no Chromium is installed (``make test``
installs it when it can: scripts/ensure-chromium.sh).
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from scalearena.reports.compare import compare
from scalearena.reports.compare_output import write_compare_html
from scalearena.reports.demo import write_demo_results
from scalearena.reports.report import write_suite_report

BROWSER = next((b for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None)
AUTOSCALERS = (("wva", 10.0), ("hpa", 45.0), ("keda", 60.0), ("kpa", 20.0), ("multimetric", 30.0),
               ("static", 0.0), ("oracle", 5.0), ("wva-headroom", 12.0))
WIDTHS = (1366, 1920)

PROBE_HEAD = """<script>window.__errors = [];
const __ce = console.error; console.error = (...a) => { window.__errors.push(a.join(" ")); __ce(...a); };
window.addEventListener("error", e => window.__errors.push(String(e.message || (e.target && e.target.src)
  || "error")), true);</script>"""
PROBE_TAIL = """<script>window.addEventListener("load", () => {
  const vw = document.documentElement.clientWidth;
  const wide = [...document.querySelectorAll("body *")].filter(el => {
    const r = el.getBoundingClientRect();
    return r.width > 0 && r.right > vw + 1 && !el.closest(".scroll, pre, details:not([open])");
  }).map(el => el.tagName + "." + el.className);
  const scrolled = [...document.querySelectorAll(".scroll")].filter(d => d.querySelector("table.summary"))
    .filter(d => d.scrollWidth > d.clientWidth + 1).map(d => d.querySelector("table").className);
  const clipped = [...document.querySelectorAll("th, td, .kpi, figcaption, h1, h2, h3, nav a, .badge, .chip, "
                                                + "ul.legend li, .fig-title")]
    .filter(el => getComputedStyle(el).overflow !== "visible" && el.scrollWidth > el.clientWidth + 1)
    .map(el => el.textContent.slice(0, 40));
  const images = [...document.images].filter(i => !i.complete || i.naturalWidth === 0).map(i => i.alt);
  const canvases = [...document.querySelectorAll("figure.chart canvas")];
  const charts = canvases.map(c => [c, window.Chart && Chart.getChart(c)]);
  const undrawn = charts.filter(([c, ch]) => !ch).map(([c]) => c.getAttribute("aria-label"));
  const blank = charts.filter(([c, ch]) => ch).filter(([c]) => {
    const px = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
    let painted = 0; for (let i = 3; i < px.length; i += 4) { if (px[i]) painted++; }
    return painted < 500; }).map(([c]) => c.getAttribute("aria-label"));
  const squashed = charts.filter(([c, ch]) => ch).filter(([c, ch]) => {
    const a = ch.chartArea; return a.right - a.left < 80 || a.bottom - a.top < 60; }).map(([c]) => c.getAttribute("aria-label"));
  const axesOut = charts.filter(([c, ch]) => ch).flatMap(([c, ch]) => Object.values(ch.scales)
    .filter(s => s.left < -1 || s.top < -1 || s.right > ch.width + 1 || s.bottom > ch.height + 1)
    .map(s => c.getAttribute("aria-label") + ":" + s.id));
  // computed font sizes: every element holding text of its own, in a table (>= 12 px) or not (>= 14 px),
  // the table's ::after marks (the best cell's star) too; the smallest of each with an example
  const px = (el, pseudo) => parseFloat(getComputedStyle(el, pseudo).fontSize);
  const fonts = {body: [99, ""], table: [99, ""]};
  const note = (where, size, what) => { if (size < fonts[where][0]) { fonts[where] = [size, what]; } };
  [...document.body.querySelectorAll("*")].filter(el => !el.closest("script, style, canvas"))
    .filter(el => [...el.childNodes].some(n => n.nodeType === 3 && n.textContent.trim()))
    .forEach(el => note(el.closest("table") ? "table" : "body", px(el), el.tagName + "." + el.className + ": "
                        + el.textContent.trim().slice(0, 30)));
  document.querySelectorAll("td, th").forEach(el => { const c = getComputedStyle(el, "::after").content;
    if (c && c !== "none" && c !== "normal") { note("table", px(el, "::after"), el.tagName + "::after " + c); } });
  const chartFont = window.Chart ? Math.min(Chart.defaults.font.size, ...charts.filter(([c, ch]) => ch)
    .flatMap(([c, ch]) => Object.values(ch.scales).map(s => (s.options.ticks.font && s.options.ticks.font.size)
                                                          || Chart.defaults.font.size))) : null;
  const firstCanvas = canvases.length ? canvases[0].getBoundingClientRect().top + window.scrollY : null;
  const verdictBox = document.getElementById("verdict");
  const verdictBottom = verdictBox ? verdictBox.getBoundingClientRect().bottom + window.scrollY : null;
  const p = document.createElement("pre"); p.id = "probe";
  p.textContent = JSON.stringify({pageWidth: document.documentElement.scrollWidth, viewport: vw, wide, scrolled,
                                  clipped, images, errors: window.__errors, canvases: canvases.length,
                                  undrawn, blank, squashed, axesOut, fonts, chartFont, firstCanvas,
                                  verdictBottom});
  document.body.appendChild(p);
});</script>"""

pytestmark = pytest.mark.skipif(BROWSER is None, reason="no chromium on PATH (Debian: apt-get install -y chromium; "
                                "`make test` runs scripts/ensure-chromium.sh)")


def measure(page: Path, width: int, tmp: Path) -> dict:
    html = page.read_text(encoding="utf-8")
    probe = tmp / f"probe-{width}-{page.parent.name}-{page.name}"
    probe.write_text(html.replace("<head>", "<head>" + PROBE_HEAD, 1).replace("</body>", PROBE_TAIL + "</body>", 1),
                     encoding="utf-8")
    r = subprocess.run([BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                        "--disable-background-networking", "--disable-component-update", "--hide-scrollbars",
                        f"--user-data-dir={tmp / 'profile'}", f"--window-size={width},900",
                        "--virtual-time-budget=5000", "--dump-dom", probe.as_uri()],
                       capture_output=True, text=True, timeout=120)
    m = re.search(r'<pre id="probe">(.*?)</pre>', r.stdout, re.S)
    assert m, f"no probe output from {BROWSER}: {r.stderr[-500:]}"
    return json.loads(m.group(1).replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">")
                      .replace("&amp;", "&"))


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    out = tmp_path_factory.mktemp("legibility")
    base = write_demo_results(out / "base", seed=1, autoscalers=AUTOSCALERS)
    cur = write_demo_results(out / "cur", seed=2, lag_scale=1.5, autoscalers=AUTOSCALERS)
    suite = write_suite_report(cur, jobs=1)
    cmp_page = write_compare_html(compare(base, cur), cur / "compare.html")
    run_page = cur / "demo-rates" / "wva-headroom" / "rate-5" / "report.html"
    seeded = write_suite_report(write_demo_results(out / "seeds", seed=3, autoscalers=AUTOSCALERS, seeds=(1, 2, 3)),
                                jobs=1)
    return {"suite": suite, "run": run_page, "compare": cmp_page, "seeds": seeded, "tmp": out}


EXPECTED_PANELS = {"run": 9, "suite": None, "compare": 0, "seeds": None}  # run: 1 + 1 + 2 + 2 + 3 panels of five figures


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("which", ["suite", "run", "compare", "seeds"])
def test_page_fits_the_viewport_without_errors(pages, which, width):
    m = measure(pages[which], width, pages["tmp"])
    assert m["viewport"] == width
    assert m["pageWidth"] <= width, m["wide"]
    assert m["wide"] == []
    assert m["scrolled"] == []  # the key table needs no horizontal scrolling
    assert m["clipped"] == []
    assert m["images"] == []
    assert m["errors"] == []
    assert m["undrawn"] == [] and m["blank"] == [] and m["squashed"] == [] and m["axesOut"] == []
    if EXPECTED_PANELS[which] is not None:
        assert m["canvases"] == EXPECTED_PANELS[which]
    else:
        assert m["canvases"] > 0


@pytest.mark.parametrize("which", ["suite", "run", "compare", "seeds"])
def test_text_is_at_least_14_px_and_table_text_at_least_12_px(pages, which):
    """Body text (everything outside tables: headings, prose, legends, captions, badges, code) >= 14 px and table
    text (cells, unit labels, the best cell's star, interval lines) >= 12 px, measured as Chromium computes them
    at 1366 px; the chart axes' tick labels >= 12 px too."""
    m = measure(pages[which], 1366, pages["tmp"])
    body, table = m["fonts"]["body"], m["fonts"]["table"]
    assert body[0] >= 14, body  # [smallest size, an element with it]
    assert table[0] >= 12, table
    assert body[0] < 99 and table[0] < 99  # both kinds were found: the probe measured something
    if which != "compare":  # the compare page draws no chart
        assert m["chartFont"] >= 12


@pytest.mark.parametrize("which", ["run", "seeds"])
def test_run_and_suite_lead_with_a_chart_and_the_verdict_above_the_fold(pages, which):
    """At 1366 x 768 the first screen of a run page shows its replicas-and-load chart (its canvas starts above
    768 px) and a suite page's verdict box ends above 768 px (its SLO, picks and figures are on it)."""
    m = measure(pages[which], 1366, pages["tmp"])
    if which == "run":
        assert m["firstCanvas"] is not None and m["firstCanvas"] < 768, m["firstCanvas"]
    else:
        assert m["verdictBottom"] is not None and m["verdictBottom"] < 768, m["verdictBottom"]
