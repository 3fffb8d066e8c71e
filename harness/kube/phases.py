"""The phases a kwok run's Prometheus had against the load, read back from the run's own Prometheus data.

Prometheus scrapes every target at an offset within the scrape interval set by a hash of the target
(scrape/target.go ``offset``), from the Unix epoch, and evaluates every rule group at its own hash offset
(rules/group.go ``EvalTimestamp``); so against a run's load, whose start is an arbitrary wall time, each
target's scrapes and each group's evaluations fall at an offset of their own, different in every run. The
simulator takes them as ``phases`` (harness/config/phase_spec.py): one offset for the engines' scrapes (the
pod that served from the start: the one every early decision reads), one for the gateway's, one for
kube-state-metrics', one per rule group. A kwok run keeps its Prometheus' data in the run folder (``kwok/services/prometheus/data``, the
write-ahead log of the run's two-hour head block); this module starts the Prometheus the kwok tools built
over a copy of it, on a free loopback port, and reads the timestamps of ``up`` (one sample per scrape of
each target) and of each recorded series (one per evaluation of its group), all on the run's time axis:
scenario seconds = (wall - t0) x time scale, t0 the load's start (``locust-start.json``).

The HPA controller queues an HPA's next sync a sync period after the last one *ended* (horizontal.go
``processNextWorkItem``: ``AddRateLimited`` after ``reconcileKey``), so each sync falls one reconcile later than
creation + k x period: ``sync_lag_of`` reads that lag from the controller's own log (its "Successfully rescaled"
lines: the only syncs v1.33 logs at verbosity 0, each timed to the microsecond) against the run's measured lead.

Written here rather than taken from a library: reading a TSDB needs Prometheus itself (its Go packages),
which the kwok tools already build; what is ours is which series stand for which loop.
"""
from __future__ import annotations

import json
import math
import re
import shutil
import tempfile
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from scalearena.harness.control.actuation import HPA_SYNC_S
from scalearena.harness.kube.births import KCM_LOG

Raw = Callable[[str, float], list[dict[str, Any]]]  # (range-vector selector, at) -> Prometheus' ``result`` (a matrix)
DATA = Path("kwok") / "services" / "prometheus"
WVA_STARTED = " WVA controller: "  # kube/wva/__main__.py serve: logged as its loop starts
RESCALED = '"Successfully rescaled"'  # horizontal.go's message when a sync changed an HPA's target (klog, verbosity 0)
KLOG_TIME = re.compile(r"[IWE](\d\d)(\d\d) (\d\d):(\d\d):(\d\d)\.(\d{6}) ")  # Lmmdd hh:mm:ss.uuuuuu


def offset_of(times: list[float], t0: float, scale: float, interval_s: float) -> float | None:
    """A loop's offset in (scenario seconds, within ``interval_s``) from the wall times it ran at: the first one
    after the load's start; None when it never ran after it."""
    after = [(t - t0) * scale for t in times if t >= t0]
    return round(min(after) % interval_s, 3) if after else None


def measure(raw: Raw, t0: float, scale: float, scrape_interval_s: float,
            groups: dict[str, tuple[float, list[str]]]) -> dict[str, Any]:
    """``phases`` fields from a run's series: ``groups`` maps a rule group's name to its interval (scenario
    seconds) and its records."""
    out: dict[str, Any] = {}
    at = t0 + 3600.0  # the selectors' hour after the load's start holds the whole run
    ups = raw('up{component=~"variant|gateway"}[1h]', at)
    pods: dict[str, list[list[float]]] = {}  # variant -> each pod's scrape times
    for r in ups:
        if r["metric"].get("component") == "variant" and r["values"]:
            pods.setdefault(r["metric"].get("variant", ""), []).append([float(ts) for ts, _ in r["values"]])
    if pods:  # the pod whose scrapes began first (it served from the start): the engines' chain
        out["engine_scrape_s"] = offset_of(min((p for ps in pods.values() for p in ps), key=min), t0, scale,
                                           scrape_interval_s)
        # every pod's own offset, in the order their scrapes began (the simulator's pods in their order of
        # readiness take them: harness/sim/scrapes.py)
        per = {v: [offset_of(p, t0, scale, scrape_interval_s) for p in sorted(ps, key=min)] for v, ps in pods.items()}
        out["pod_scrape_s"] = {v: [x for x in xs if x is not None] for v, xs in sorted(per.items())}
    wva = [float(ts) for r in raw('up{component="wva-controller"}[1h]', at) for ts, _ in r["values"]]
    if wva:
        out["published_scrape_s"] = offset_of(wva, t0, scale, scrape_interval_s)
    ksm = [float(ts) for r in raw('up{job="kube-state-metrics"}[1h]', at) for ts, _ in r["values"]]
    if ksm:
        out["kube_state_scrape_s"] = offset_of(ksm, t0, scale, scrape_interval_s)
    gateway = [float(ts) for r in ups if r["metric"].get("component") == "gateway" for ts, _ in r["values"]]
    if gateway:
        out["gateway_scrape_s"] = offset_of(gateway, t0, scale, scrape_interval_s)
    rules: dict[str, float] = {}
    for name, (interval_s, records) in groups.items():
        times = [float(ts) for rec in records for r in raw(f'{{__name__="{rec}"}}[1h]', at) for ts, _ in r["values"]]
        if (x := offset_of(times, t0, scale, interval_s)) is not None:
            rules[name] = x
    if rules:
        out["rules_s"] = rules
    return {k: v for k, v in out.items() if v is not None}


def rule_groups_of(rule_file: Path, scale: float) -> dict[str, tuple[float, list[str]]]:
    """Each recording-rule group of the run's Prometheus rule file: its interval in scenario seconds (the file's
    are wall seconds, divided by the time scale: kube/timescale.py) and its records."""
    from scalearena.harness.promql.rules import load_rule_groups

    if not rule_file.is_file():
        return {}
    groups = load_rule_groups(yaml.safe_load(rule_file.read_text()) or {"groups": []}, str(rule_file))
    return {g.name: (g.interval_s * scale, [r.record for r in g.rules if r.record]) for g in groups}


def klog_walls(text: str, year: int, marker: str = "") -> list[float]:
    """The wall times of the klog lines of ``text`` that hold ``marker`` (klog writes the local time without the
    year: ``I1205 22:23:46.018695 13953 file.go:884] ...``)."""
    out = []
    for line in text.splitlines():
        if marker in line and (m := KLOG_TIME.match(line)):
            out.append(datetime(year, int(m[1]), int(m[2]), int(m[3]), int(m[4]), int(m[5]), int(m[6])).timestamp())
    return out


def rescales(text: str, t0: float, scale: float) -> list[float]:
    """The times (scenario seconds after the load's start) of the HPA controller's rescales in its log ``text``,
    from lines as v1.33 writes them: ``I1205 22:23:46.018695 13953 horizontal.go:884] "Successfully rescaled"
    logger=... HPA="scalearena/va-sim" currentReplicas=1 desiredReplicas=2 ...``; the year is t0's."""
    return [round((w - t0) * scale, 3) for w in klog_walls(text, datetime.fromtimestamp(t0).year, RESCALED)]


def start_lag_of(run: Path, scale: float) -> float | None:
    """The mean time (scenario seconds) from an HPA's rescale to the start of each engine container it made: the
    Deployment and ReplicaSet controllers, the scheduler, KWOK's Running stage and the pod launcher between
    them (the container's readiness then follows its probe's initialDelaySeconds, the scenario's startup_s).
    Read from the controller's log and each engine's first log line (llm-d-inference-sim logs in klog format
    as it starts); the pods that started after the load's start only. None without such a pod."""
    start, log = run / "locust-start.json", run / "kwok" / "control-plane" / KCM_LOG
    if not start.is_file() or not log.is_file():
        return None
    t0 = float(json.loads(start.read_text())["t0"])
    year = datetime.fromtimestamp(t0).year
    scaled = klog_walls(log.read_text(errors="replace"), year, RESCALED)
    lags = []
    for f in sorted((run / "kwok" / "pods").glob("*_engine.log")):
        with f.open(errors="replace") as fh:
            first = klog_walls(fh.readline(), year)
        if first and first[0] > t0 and (before := [w for w in scaled if w <= first[0]]):
            lags.append((first[0] - max(before)) * scale)
    return round(sum(lags) / len(lags), 3) if lags else None


def sync_lag_of(times: list[float], lead_s: float, period_s: float) -> float | None:
    """The mean lag per sync of an HPA's syncs at ``times`` (scenario seconds) behind creation + k x period, the
    HPA made ``lead_s`` before the load: the time one reconcile takes (None without a sync to read it from).
    The k-th sync after the creation is the one nearest creation + k x period (the lag is tens of milliseconds a
    sync, so k is exact for a thousand periods)."""
    lags = []
    for t in times:
        k = round((t + lead_s) / period_s)
        if k >= 1:
            lags.append((t + lead_s - k * period_s) / k)
    return round(max(0.0, sum(lags) / len(lags)), 4) if lags else None


def from_run_folder(run: Path, scale: float, scrape_interval_s: float, lead_s: float | None = None,
                    prometheus: Path | None = None) -> dict[str, Any] | None:
    """The measured ``phases`` of a kwok run (None when the folder holds no Prometheus data or no load start):
    its Prometheus' offsets and, given its controllers' lead (``lead_s``: the run's ``control_lead`` event) where
    the HPA controller rescaled, the controller's lag per sync."""
    start, data = run / "locust-start.json", run / DATA / "data"
    if not start.is_file() or not data.is_dir():
        return None
    t0 = float(json.loads(start.read_text())["t0"])
    groups = rule_groups_of(run / DATA / "config" / "scalearena-rules.yml", scale)
    with serve(data, prometheus) as raw:
        out = measure(raw, t0, scale, scrape_interval_s, groups)
    out["keda_query_grid_s"] = wall_seconds(t0, scale)
    log = run / "kwok" / "control-plane" / KCM_LOG
    if lead_s is not None and log.is_file():
        lag = sync_lag_of(rescales(log.read_text(errors="replace"), t0, scale), lead_s, HPA_SYNC_S)
        if lag is not None:
            out["sync_lag_s"] = lag
    if (own := wva_lead_of(run / "kwok" / "services" / "logs", t0, scale)) is not None:
        out["decide_lead_s"] = own
    return out


def wall_seconds(t0: float, scale: float) -> list[float]:
    """[spacing, offset] of the wall clock's whole seconds on the run's time axis (scenario seconds): the first at
    ceil(t0) - t0 wall seconds after the load's start, then every wall second (KEDA's Prometheus queries fall on
    them: phase_spec.PhaseSpec.keda_query_grid_s)."""
    return [scale, round(((math.ceil(t0) - t0) * scale) % scale, 3)]


def wva_lead_of(logs: Path, t0: float, scale: float) -> float | None:
    """The WVA controller's lead (scenario seconds) from its process' start to the load's: its first cycle runs as
    it starts and every period after (kube/wva/__main__.py ``run_cycles``, a fixed ticker), so its start sets the
    phase of its loop. From the first line of its log (``2026-12-05 22:55:56,095 INFO scalearena.wva WVA
    controller: ...``, Python logging's local time); None without the log or before the load's start."""
    for f in sorted(logs.glob("wva-controller-*.log")):
        with f.open(errors="replace") as fh:
            for line in fh:
                if WVA_STARTED in line:
                    wall = datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp()
                    return round((t0 - wall) * scale, 3) if wall <= t0 else None
    return None


@contextmanager
def serve(data: Path, prometheus: Path | None = None, timeout_s: float = 60.0) -> Iterator[Raw]:
    """Prometheus over a copy of ``data`` (the copy is replayed and compacted, the run's folder is left as it was)
    on a free loopback port, supervised as a local run's (harness/local), for as long as the block lasts."""
    from scalearena.harness.kube.tools import binary
    from scalearena.harness.local.prometheus import wait_ready
    from scalearena.harness.local.supervisor import Supervisor, free_port

    exe = prometheus or binary("prometheus")
    with tempfile.TemporaryDirectory(prefix="scalearena-phases-") as tmp:
        shutil.copytree(data, Path(tmp) / "data")
        (Path(tmp) / "prometheus.yml").write_text("global: {scrape_interval: 15s}\n")
        url = f"http://127.0.0.1:{free_port()}"
        sup = Supervisor(Path(tmp) / "logs")
        child = sup.start("prometheus", [str(exe), f"--config.file={tmp}/prometheus.yml",
                                         f"--storage.tsdb.path={tmp}/data", f"--web.listen-address={url[7:]}"])
        try:
            wait_ready(url, child, timeout_s)

            def raw(selector: str, at: float) -> list[dict[str, Any]]:
                q = urllib.parse.urlencode({"query": selector, "time": f"{at:.3f}"})
                with urllib.request.urlopen(f"{url}/api/v1/query?{q}", timeout=30) as r:
                    return list(json.load(r)["data"]["result"])

            yield raw
        finally:
            sup.close()
