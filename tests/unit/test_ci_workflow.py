"""The CI regression gates run only when their baseline exists, and say so when they do not.

baselines/kind cannot exist before someone has run the kind suite, so a gate
that always ran would fail every nightly run for a missing directory. The
gate steps' shell is run here as written in .github/workflows/ci.yml, in a
scratch directory with a stand-in ``scalearena`` that records its arguments.
"""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]


def gate_script(job: str) -> str:
    wf = yaml.safe_load((ROOT / ".github/workflows/ci.yml").read_text())
    steps = [s for s in wf["jobs"][job]["steps"] if "compare" in str(s.get("run", ""))]
    assert len(steps) == 1, f"{job}: one gate step"
    return steps[0]["run"]


@pytest.mark.parametrize("job,cluster", [("bench-sim", "sim"), ("bench-kind", "kind")])
def test_gate_skips_with_a_notice_without_a_baseline_and_runs_with_one(tmp_path: Path, job: str,
                                                                       cluster: str) -> None:
    fake = tmp_path / ".venv/bin/scalearena"
    fake.parent.mkdir(parents=True)
    fake.write_text('#!/bin/sh\necho "$@" > called\nexit 1\n')  # a regression: exit 1
    fake.chmod(0o755)
    script = gate_script(job)
    r = subprocess.run(["bash", "-e", "-c", script], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 0 and not (tmp_path / "called").exists()
    assert r.stdout.startswith("::notice") and f"baselines/{cluster} does not exist" in r.stdout
    (tmp_path / "baselines" / cluster).mkdir(parents=True)
    r = subprocess.run(["bash", "-e", "-c", script], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 1  # the comparison's verdict fails the step
    assert (tmp_path / "called").read_text().split() == ["compare", f"baselines/{cluster}", f"results/{cluster}"]
