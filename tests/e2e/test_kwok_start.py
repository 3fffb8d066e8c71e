"""CLUSTER=kwok: starts that fail leave nothing behind, and a missing Go is bad input (kube/kwok.py, kube/tools.py).
Part of the kwok tier (tests/e2e/test_kwok.py)."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from scalearena.contracts.errors import RunFailed
from tests.e2e.kwokkit import ROOT, ours

pytestmark = [pytest.mark.e2e, pytest.mark.kwok]


@pytest.mark.parametrize("step", ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"])
def test_an_interrupted_start_leaves_no_process(tools_built: None, tmp_path: Path, step: str) -> None:
    """Issue 26 item 2: `down` leaves no process behind whatever failed: the start is interrupted right after each
    component's process starts, and no process naming the cluster's folder survives."""
    from scalearena.harness.kube.kwok import KwokCluster

    class Stop(Exception):
        pass

    def stop_at(name: str) -> None:
        if name == step:
            raise Stop(name)

    folder = tmp_path / "cp"
    c = KwokCluster(folder, on_start=stop_at)
    with pytest.raises(Stop):
        c.up()
    assert ours(folder) == []
    assert not folder.exists()


def test_a_bad_flag_fails_the_start_with_the_component_and_its_log(tools_built: None, tmp_path: Path) -> None:
    from scalearena.harness.kube.kwok import KwokCluster
    from scalearena.harness.kube.tools import binary

    wrapper = tmp_path / "kube-scheduler"
    wrapper.write_text(f"#!/bin/sh\nexec {binary('kube-scheduler')} --no-such-flag \"$@\"\n")
    wrapper.chmod(0o755)
    c = KwokCluster(tmp_path / "cp", binary=lambda n: wrapper if n == "kube-scheduler" else binary(n))
    with pytest.raises(RunFailed) as e:
        c.up()
    assert "kube-scheduler exited" in str(e.value) and "unknown flag: --no-such-flag" in str(e.value)
    assert ours(tmp_path / "cp") == []


def test_kwok_tools_reports_missing_go(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PATH"} | {"PATH": str(tmp_path),
                                                                 "SCALEARENA_TOOLS_DIR": str(tmp_path / "bin")}
    py = shutil.which("python3") or "python3"
    r = subprocess.run([str(ROOT / ".venv/bin/scalearena"), "kwok", "tools"], env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 2, (py, r.stdout, r.stderr)
    assert "go" in r.stderr and "Traceback" not in r.stderr
