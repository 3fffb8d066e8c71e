"""A real Prometheus process for one local run: generated config, file-based
service discovery, TSDB in the run folder.

Why a real Prometheus and not a direct scrape: the point of CLUSTER=local is
that autoscalers see metrics the way they do on Kubernetes — scraped at an
interval, aged by staleness, read back with PromQL — and survive the same
failures (a Prometheus restart, a target that disappears mid-window).

The harness owns this process: its own config, its own port on 127.0.0.1,
its own TSDB under ``<run>/prometheus/``. It never touches a system
Prometheus service. Engines come and go, so targets live in a file-SD JSON
file (``targets.json``) rewritten atomically (temp + rename) whenever the
set changes; Prometheus picks the change up through its file watcher, with
``refresh_interval`` as a fallback.

Paths: every path written into the config or handed to the process is
absolute. Prometheus resolves a relative file-SD path against the config
file's folder, not its working directory, so a relative run folder made it
watch a folder that does not exist and scrape nothing (issue 17, item 1).
``wait_for_up_targets`` is the run's guard against any such silent failure:
the backend fails the run when no target is up after the first scrape.

Time scale: with ``time_scale`` s > 1 every duration is divided by s (scrape
interval, lookback delta), so a 60 s scenario runs in 60/s wall seconds and
PromQL windows (divided by the reader in harness/metrics/prometheus.py) still
cover the same number of scrapes.
"""
from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests
import yaml

from scalearena.contracts.errors import UserError
from scalearena.harness.local.supervisor import LOOPBACK, Supervisor, free_port
from scalearena.harness.metrics.prometheus import promql_duration as prometheus_duration
from scalearena.reports.results import atomic_write_bytes

JOB_ENGINES = "engines"
JOB_ROUTER = "router"
JOB_KUBE_STATE = "kube-state-metrics"


def wait_ready(url: str, child: Any, timeout_s: float) -> None:
    """Until the Prometheus at ``url`` (the supervised ``child``) answers ``/-/ready``; one UserError, with the log
    tail, when it exits first or is not ready within ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not child.alive():
            raise UserError(f"prometheus exited with code {child.returncode()} at start:\n{child.log_tail()}",
                            where=str(child.log_path))
        try:
            if requests.get(f"{url}/-/ready", timeout=0.5).status_code == 200:
                return
        except requests.RequestException:
            pass
        time.sleep(0.05)
    raise UserError(f"prometheus not ready after {timeout_s:.0f} s", where=str(child.log_path))


def find_prometheus() -> str:
    """The prometheus binary: $PROMETHEUS_BIN, else `prometheus` on PATH."""
    env = os.environ.get("PROMETHEUS_BIN")
    if env:
        if os.access(env, os.X_OK):
            return env
        raise UserError(f"PROMETHEUS_BIN={env} is not executable", expected="a prometheus binary")
    found = shutil.which("prometheus")
    if not found:
        raise UserError(
            "prometheus is not installed; CLUSTER=local needs a real Prometheus",
            expected="`scripts/ensure-prometheus.sh` (apt-get install -y prometheus) or PROMETHEUS_BIN",
        )
    return found


@dataclass(frozen=True)
class Target:
    """One scrape target and the labels Prometheus attaches to its series."""

    address: str  # host:port
    labels: dict[str, str]


def render_targets(targets: Iterable[Target]) -> bytes:
    """The file-SD JSON document: one group per target (labels differ per pod)."""
    groups: list[dict[str, Any]] = [{"targets": [t.address], "labels": dict(sorted(t.labels.items()))} for t in targets]
    groups.sort(key=lambda g: g["targets"][0])
    return (json.dumps(groups, indent=2) + "\n").encode()


def render_config(
    scrape_interval_s: float, engines_sd: Path, router_sd: Path, time_scale: float = 1.0,
    kube_state_sd: Path | None = None,
) -> dict:
    """The prometheus.yml document (as a dict) for one run; with ``kube_state_sd`` a third job scrapes the
    harness's kube-state-metrics endpoint (kube_state.py)."""
    interval = scrape_interval_s / time_scale
    sd_refresh = prometheus_duration(max(interval, 0.5))
    jobs = [(JOB_ENGINES, engines_sd), (JOB_ROUTER, router_sd)]
    if kube_state_sd is not None:
        jobs.append((JOB_KUBE_STATE, kube_state_sd))
    return {
        "global": {
            "scrape_interval": prometheus_duration(interval),
            "scrape_timeout": prometheus_duration(min(interval, 10.0)),
            "evaluation_interval": prometheus_duration(interval),
        },
        "scrape_configs": [
            {"job_name": job, "honor_labels": True,
             "file_sd_configs": [{"files": [str(sd)], "refresh_interval": sd_refresh}]}
            for job, sd in jobs
        ],
    }


class PrometheusProcess:
    """Start and stop one Prometheus and keep its file-SD targets current."""

    def __init__(
        self,
        supervisor: Supervisor,
        run_dir: Path,
        scrape_interval_s: float,
        staleness_s: float = 300.0,
        time_scale: float = 1.0,
        name: str = "prometheus",
        rule_groups: list[dict[str, Any]] | None = None,
    ) -> None:
        self.supervisor = supervisor
        self.dir = Path(run_dir).resolve() / "prometheus"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.scrape_interval_s = scrape_interval_s
        self.staleness_s = staleness_s
        self.time_scale = time_scale
        self.name = name
        self.port = free_port()
        self.engines_sd = self.dir / "targets-engines.json"
        self.router_sd = self.dir / "targets-router.json"
        self.kube_state_sd = self.dir / "targets-kube-state.json"
        self.config_path = self.dir / "prometheus.yml"
        self._engines: dict[str, Target] = {}
        self._router: list[Target] = []
        self._kube_state: list[Target] = []
        self.binary = find_prometheus()
        config = render_config(scrape_interval_s, self.engines_sd, self.router_sd, time_scale, self.kube_state_sd)
        if rule_groups:  # a kubernetes autoscaler's PrometheusRules / rule files, evaluated here as on a cluster
            rules_path = self.dir / "rules.yml"
            rules_path.write_text(yaml.safe_dump({"groups": rule_groups}, sort_keys=False))
            config["rule_files"] = [str(rules_path)]
        self.config_path.write_text(yaml.safe_dump(config))
        self._write_targets()

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    # -- targets ---------------------------------------------------------------------------------
    def set_engine(self, pod: str, address: str, labels: dict[str, str], pod_label: bool = True) -> None:
        """A scrape target; ``pod_label=False`` leaves the pod label to the engine (honor_labels)."""
        self._engines[pod] = Target(address, {**labels, "pod": pod} if pod_label else {**labels, "slot": pod})
        self._write_targets()

    def set_router(self, address: str, labels: dict[str, str] | None = None) -> None:
        self._router = [Target(address, {"pod": "router", **(labels or {})})]
        self._write_targets()

    def set_kube_state(self, address: str) -> None:
        """The harness's kube-state-metrics endpoint (its series carry their own namespace)."""
        self._kube_state = [Target(address, {})]
        self._write_targets()

    def _write_targets(self) -> None:
        atomic_write_bytes(self.engines_sd, render_targets(self._engines.values()))
        atomic_write_bytes(self.router_sd, render_targets(self._router))
        atomic_write_bytes(self.kube_state_sd, render_targets(self._kube_state))

    # -- process ---------------------------------------------------------------------------------
    def argv(self) -> list[str]:
        lookback = prometheus_duration(self.staleness_s / self.time_scale)
        return [
            self.binary,
            f"--config.file={self.config_path}",
            f"--storage.tsdb.path={self.dir / 'tsdb'}",
            f"--web.listen-address={LOOPBACK}:{self.port}",
            f"--query.lookback-delta={lookback}",
            "--storage.tsdb.retention.time=1d",
            "--log.level=warn",
        ]

    def start(self, timeout_s: float = 30.0) -> None:
        child = self.supervisor.start(self.name, self.argv())
        try:
            wait_ready(self.url, child, timeout_s)
        except UserError:
            if child.alive():  # not ready in time: it goes
                self.supervisor.kill(self.name)
            raise

    def stop(self, grace_s: float = 10.0) -> None:
        self.supervisor.stop(self.name, grace_s)

    def kill(self) -> None:
        """An outage: the process dies at once (TSDB head is replayed from the WAL on restart)."""
        self.supervisor.kill(self.name)

    def running(self) -> bool:
        child = self.supervisor.get(self.name)
        return child is not None and child.alive()

    def wait_for_up_targets(self, timeout_s: float) -> int:
        """Block until Prometheus reports at least one target up; the count, or RuntimeError at the deadline.

        A run whose Prometheus scrapes nothing would hold every autoscaler at its
        start replicas and still exit 0, so the caller fails the run instead.
        """
        deadline = time.monotonic() + timeout_s
        targets: list[dict] = []
        while True:
            try:
                targets = self.active_targets()
            except (requests.RequestException, KeyError, ValueError):
                targets = []
            up = sum(1 for t in targets if t.get("health") == "up")
            if up:
                return up
            if time.monotonic() >= deadline:
                break
            time.sleep(0.1)
        errors = sorted({str(t.get("lastError")) for t in targets if t.get("lastError")})[:3]
        raise RuntimeError(
            f"prometheus scrapes no target {timeout_s:.1f} s (wall) after the run started "
            f"({len(targets)} active, 0 up{'; ' + '; '.join(errors) if errors else ''}); "
            f"autoscalers would see no metrics. See {self.supervisor.log_dir / (self.name + '.log')}"
        )

    def active_targets(self) -> list[dict]:
        """GET /api/v1/targets: what Prometheus currently scrapes (tests, diagnostics)."""
        r = requests.get(f"{self.url}/api/v1/targets", params={"state": "active"}, timeout=2.0)
        r.raise_for_status()
        return list(r.json()["data"]["activeTargets"])
