"""`scalearena paper` end to end on a shortened suite: every claim is evaluated from real runs."""
from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow  # 92 simulated runs


def test_paper_command_writes_the_page_from_runs(tmp_path):
    doc = tmp_path / "paper.md"
    r = subprocess.run(
        [sys.executable, "-m", "scalearena", "paper", "--seeds", "2", "--no-sensitivity", "--no-hetero",
         "--no-report", "--set", "duration_s=120", "--set", "drain_s=0", "--out", str(tmp_path / "out"),
         "--doc", str(doc)],
        capture_output=True, text=True, timeout=600,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    text = doc.read_text()
    # exp1 and exp2: 7 autoscalers each; physical: 4 rates x 8 (the 7 plus wva-headroom); 2 seeds:
    # (7 + 7 + 4 x 8) x 2 = 92 runs
    assert len(list((tmp_path / "out").rglob("summary.json"))) == 92
    for claim in ("exp1-replicas", "exp1-kv", "exp2-order", "phys-throughput", "phys-failures", "phys-cap",
                  "phys-inversion", "phys-throughput (wva-headroom)", "phys-cap (wva-headroom)"):
        assert f": {claim}" in text
    assert "seeds [1, 2]" in text
    assert "not evaluated" not in text  # every claim found its runs
