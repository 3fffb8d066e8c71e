"""The phases a kwok run's Prometheus had against the load, read back from the run's own Prometheus data.

Prometheus scrapes every target at an offset within the scrape interval set by a hash of the target
(scrape/target.go ``offset``), from the Unix epoch, and evaluates every rule group at its own hash offset
(rules/group.go ``EvalTimestamp``); so against a run's load, whose start is an arbitrary wall time, each
target's scrapes and each group's evaluations fall at an offset of their own, different in every run. The
simulator takes them as ``phases`` (harness/config/phase_spec.py): one offset for the engines' scrapes (the
pod that served from the start: the one every early decision reads), one for the gateway's, one per rule
group. A kwok run keeps its Prometheus' data in the run folder (``kwok/services/prometheus/data``, the
write-ahead log of the run's two-hour head block); this module starts the Prometheus the kwok tools built
over a copy of it, on a free loopback port, and reads the timestamps of ``up`` (one sample per scrape of
each target) and of each recorded series (one per evaluation of its group), all on the run's time axis:
scenario seconds = (wall - t0) x time scale, t0 the load's start (``locust-start.json``).

Written here rather than taken from a library: reading a TSDB needs Prometheus itself (its Go packages),
which the kwok tools already build; what is ours is which series stand for which loop.
"""
from __future__ import annotations

import json
import shutil
import tempfile
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

Raw = Callable[[str, float], list[dict[str, Any]]]  # (range-vector selector, at) -> Prometheus' ``result`` (a matrix)
DATA = Path("kwok") / "services" / "prometheus"


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


def from_run_folder(run: Path, scale: float, scrape_interval_s: float,
                    prometheus: Path | None = None) -> dict[str, Any] | None:
    """The measured ``phases`` of a kwok run (None when the folder holds no Prometheus data or no load start)."""
    start, data = run / "locust-start.json", run / DATA / "data"
    if not start.is_file() or not data.is_dir():
        return None
    t0 = float(json.loads(start.read_text())["t0"])
    groups = rule_groups_of(run / DATA / "config" / "scalearena-rules.yml", scale)
    with serve(data, prometheus) as raw:
        return measure(raw, t0, scale, scrape_interval_s, groups)


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
