"""Free text full of markup reaches the reports as text, never as HTML or script (issue 31 item 6).

A scenario whose description, model id and tenant carry ``</script><script>``, an ``onerror=`` image and
a template expression is run on the simulator and compared with itself; every page (suite, run, compare)
is opened in headless Chromium with a probe that reports whether any injected script ran (``window.PWNED``)
and whether an injected ``<img>`` exists in the DOM. Skipped when no Chromium is installed.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.unit.harness.cli.test_cli import scalearena

BROWSER = next((b for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None)
MARKUP = "</script><script>window.PWNED=1</script><img class=pwn src=x onerror=window.PWNED=2> {{7*7}}"
PROBE = """<script>window.addEventListener("load", () => { const p = document.createElement("pre");
p.id = "probe"; p.textContent = JSON.stringify({pwned: window.PWNED || null,
imgs: document.querySelectorAll("img.pwn").length, text: document.body.textContent.includes("window.PWNED=1")});
document.body.appendChild(p); });</script>"""


def _scenario(tmp: Path) -> Path:
    sc = {"name": "markup", "description": MARKUP, "duration_s": 60, "seed": 1,
          "cluster": {"variants": [{"name": "va", "model": "m" + MARKUP, "gpu": "H100-SXM", "min_replicas": 1,
                                    "max_replicas": 3, "engine": {"kv_cache_blocks": 1024, "latency": {
                                        "kind": "constant", "ttft_ms": 100, "itl_ms": 5}}}]},
          "workload": {"arrivals": {"kind": "poisson", "rate_rps": 2}, "tenant": "t" + MARKUP,
                       "input_tokens": {"kind": "fixed", "value": 100}, "output_tokens": {"kind": "fixed", "value": 50}},
          "autoscalers": [{"kind": "hpa"}], "slo": {"ttft_ms": 1000, "itl_ms": 50}}
    path = tmp / "markup.yaml"
    path.write_text(yaml.safe_dump(sc))
    return path


def _probe(page: Path, tmp: Path) -> dict:
    copy = tmp / f"probe-{page.parent.name}-{page.name}"
    copy.write_text(page.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>", 1), encoding="utf-8")
    r = subprocess.run([BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",  # type: ignore[list-item]
                        "--disable-background-networking", f"--user-data-dir={tmp / 'profile'}",
                        "--virtual-time-budget=3000", "--dump-dom", copy.as_uri()], capture_output=True, text=True,
                       timeout=120)
    m = re.search(r'<pre id="probe">(.*?)</pre>', r.stdout, re.S)
    assert m, f"no probe output from {BROWSER}: {r.stderr[-500:]}"
    return json.loads(m.group(1).replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&"))


@pytest.mark.skipif(BROWSER is None, reason="no Chromium installed (make test installs it: scripts/ensure-chromium.sh)")
def test_markup_in_free_text_is_shown_as_text_and_never_runs(tmp_path: Path) -> None:
    out = tmp_path / "out"
    r = scalearena("run", str(_scenario(tmp_path)), "--out", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    cmp = tmp_path / "compare.html"
    r = scalearena("compare", str(out), str(out), "--html", str(cmp))
    assert r.returncode == 0, r.stdout + r.stderr
    pages = [out / "report.html", out / "markup" / "hpa" / "report.html", cmp]
    seen = {p.name if p.parent == tmp_path else str(p.relative_to(out)): _probe(p, tmp_path) for p in pages}
    assert all(v["pwned"] is None and v["imgs"] == 0 for v in seen.values()), seen
    assert seen["report.html"]["text"], seen  # the suite page holds the description (its configuration), as text
