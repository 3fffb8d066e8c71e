"""Issue 17 item 1: a relative run folder must still give Prometheus absolute file-SD
paths, and a Prometheus that scrapes nothing must fail the run, not run it blind.

Uses the real prometheus binary on 127.0.0.1; Prometheus' own /metrics is the target, so
no other process is needed. Bounded: each wait has a deadline of a few seconds."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from scalearena.harness.local.prometheus import PrometheusProcess
from scalearena.harness.local.supervisor import LOOPBACK, Supervisor

pytestmark = pytest.mark.skipif(shutil.which("prometheus") is None, reason="prometheus not installed")


def test_relative_run_folder_gets_absolute_paths_and_scrapes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with Supervisor(Path("run") / "logs") as sup:
        prom = PrometheusProcess(sup, Path("run"), scrape_interval_s=0.5)
        cfg = yaml.safe_load(prom.config_path.read_text())
        files = [f for job in cfg["scrape_configs"] for sd in job["file_sd_configs"] for f in sd["files"]]
        # engines, router, kube-state-metrics: each job its own file-SD file
        assert len(files) == 3 and all(Path(f).is_absolute() and Path(f).exists() for f in files)
        assert all(a.split("=", 1)[1].startswith("/") for a in prom.argv() if a.startswith(("--config.file=", "--storage.tsdb.path=")))
        prom.start()
        prom.set_router(f"{LOOPBACK}:{prom.port}")  # Prometheus scrapes its own /metrics
        assert prom.wait_for_up_targets(timeout_s=10.0) == 1


def test_no_up_target_fails_with_a_message(tmp_path: Path) -> None:
    with Supervisor(tmp_path / "logs") as sup:
        prom = PrometheusProcess(sup, tmp_path, scrape_interval_s=0.5)
        prom.start()
        with pytest.raises(RuntimeError, match=r"prometheus scrapes no target .*0 up"):
            prom.wait_for_up_targets(timeout_s=1.0)
