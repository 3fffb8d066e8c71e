"""The native series on real processes: every catalogued series, through a real Prometheus, as on sim.

A short CLUSTER=local run (one warm engine, the router, the harness's
kube-state-metrics endpoint, a real Prometheus, Locust) is read back through
the run's own Prometheus before it stops: for every entry of
contracts/series.py ``CATALOGUE`` served by the engine, the EPP (router) or
kube-state-metrics, the series exists with the catalogued labels (after the
scrape, as on a cluster), Prometheus' metadata gives it the catalogued type,
and a histogram has exactly the catalogued buckets. The test is driven by the
catalogue, so an entry without an implementation fails here (entries with a
``condition`` are emitted only under it, which no backend meets). Then the
same PromQL is asked of the run's Prometheus and of the simulator's engine
after the same scenario and seed, with values worked out by hand.
"""
from __future__ import annotations

import shutil
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import requests

from scalearena.contracts import series as S
from scalearena.harness.config.scenario import scenario_from_data
from scalearena.harness.local.backend import LocalBackend, LocalRun
from scalearena.harness.sim.backend import Simulation
from scalearena.reports.results import RunWriter
from scalearena.workloads.generate import build_requests

pytestmark = [
    pytest.mark.local,
    pytest.mark.skipif(shutil.which("prometheus") is None, reason="needs prometheus (scripts/ensure-prometheus.sh)"),
]

SCENARIO: dict[str, Any] = {
    "name": "native-series", "duration_s": 6, "drain_s": 5, "seed": 3,
    "cluster": {"variants": [{
        "name": "va", "model": "m", "gpu": "A100-80GB", "cost": 1.0, "min_replicas": 1, "max_replicas": 2,
        "startup_s": 5, "termination_grace_s": 5,
        "engine": {"max_num_seqs": 16, "kv_cache_blocks": 256, "block_size": 16,
                   "latency": {"kind": "constant", "ttft_ms": 50, "itl_ms": 10}}}]},
    "router": {"refresh_s": 0.25},
    "workload": {"arrivals": {"kind": "constant", "rate_rps": 2},
                 "input_tokens": {"kind": "fixed", "value": 100}, "output_tokens": {"kind": "fixed", "value": 10}},
    "autoscalers": [{"kind": "static"}],
    "metrics": {"scrape_interval_s": 1, "sample_interval_s": 1},
    "client": {"timeout_s": 30},
}
# 2 rps for 6 s, evenly spaced: 12 requests of 100 prompt + 10 output tokens, all served by the one engine.
N = 12
VALUES = {
    f"sum({S.PROMPT_TOKENS})": N * 100.0,
    f"sum({S.GENERATION_TOKENS})": N * 10.0,
    f"sum({S.REQUEST_SUCCESS})": float(N),
    f"sum({S.TTFT_HIST}_count)": float(N),
    f"sum({S.E2E_HIST}_count)": float(N),
    f'sum({S.CACHE_CONFIG}{{num_gpu_blocks="256",block_size="16"}})': 1.0,
    f'sum({S.KSM_SPEC_REPLICAS}{{deployment="va",namespace="scalearena"}})': 1.0,
    f'sum({S.KSM_REPLICAS}{{deployment="va"}})': 1.0,
    f'sum({S.KSM_REPLICAS_READY}{{deployment="va"}})': 1.0,
    f'sum({S.KSM_REPLICAS_UNAVAILABLE}{{deployment="va"}})': 0.0,
    # the run is over: nothing held or in flight, the engine idle (waiting 0 / 5, KV 0 / 0.8 -> 0)
    f'sum({S.EPP_QUEUE_SIZE}{{inference_pool="m",service="m-epp"}})': 0.0,
    f'max({S.EPP_POOL_SATURATION}{{model_name="m"}})': 0.0,
    f"sum({S.EPP_REQUEST_RUNNING})": 0.0,
    f'sum({S.EPP_INFLIGHT_TOKENS}{{producer_name="inflight-load-producer"}})': 0.0,
    f'sum({S.ROUTER_QUEUE}{{model_name="m"}})': 0.0,
    # the Inference Extension's counts: 12 arrivals of 100 prompt tokens, 12 answers of 10 tokens
    f"sum({S.OBJECTIVE_REQUESTS})": float(N),
    f"sum({S.OBJECTIVE_INPUT_TOKENS}_sum)": N * 100.0,
    f"sum({S.OBJECTIVE_OUTPUT_TOKENS}_sum)": N * 10.0,
    f"sum({S.OBJECTIVE_OUTPUT_TOKENS}_count)": float(N),
    # the EPP's per-request histograms: one observation per request answered in full
    f"sum({S.EPP_TTFT_HIST}_count)": float(N),
    f"sum({S.EPP_TPOT_HIST}_count)": float(N),
    # every engine TTFT (50 ms of scenario time, constant model) is in vLLM's le=0.06 bucket, none in le=0.04
    f'sum({S.TTFT_HIST}_bucket{{le="0.06"}}) - sum({S.TTFT_HIST}_bucket{{le="0.04"}})': float(N),
}
EXPORTERS = ("engine", "epp", "gateway", "kube-state-metrics")


def _families(spec: S.SeriesSpec) -> list[str]:
    if spec.type == "histogram":
        return [f"{spec.name}_bucket", f"{spec.name}_sum", f"{spec.name}_count"]
    return [spec.name]


class Probe(LocalRun):
    """The local run, read back through its own Prometheus before teardown."""

    seen: dict[str, Any] = {}

    def _collect(self, final: bool) -> None:
        if final:
            url = self.prom.url
            _await_quiet_scrape(url)
            names = [n for spec in S.CATALOGUE for n in _families(spec)]
            Probe.seen = {
                "series": {n: requests.get(url + "/api/v1/series", params={"match[]": f'{{__name__="{n}"}}'},
                                           timeout=5).json()["data"] for n in names},
                "metadata": requests.get(url + "/api/v1/metadata", timeout=5).json()["data"],
                "values": {q: _scalar(requests.get(url + "/api/v1/query", params={"query": q}, timeout=5).json()
                                      ["data"]["result"]) for q in VALUES},
            }
        super()._collect(final)


def _await_quiet_scrape(url: str, limit_s: float = 15.0) -> None:
    """Wait for a scrape of every target taken while the router proxies nothing. The client has its answer at
    [DONE], but serve-router books the request's output tokens and NTPOT when the engine's stream closes, a
    moment later, and Prometheus sees that one scrape interval (1 s here) after that: read too early, the last
    answers are missing. Bounded: the checks after it say what is missing if the router never goes quiet."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        t0 = time.time()
        while time.monotonic() < deadline:  # one scrape of every target after t0
            targets = requests.get(url + "/api/v1/targets", params={"state": "active"}, timeout=5).json()["data"]
            stamps = [datetime.fromisoformat(t["lastScrape"].replace("Z", "+00:00")).timestamp()
                      for t in targets["activeTargets"]]
            if stamps and min(stamps) > t0:
                break
            time.sleep(0.2)
        proxied = requests.get(url + "/api/v1/query", params={"query": "sum(scalearena_router_inflight)"},
                               timeout=5).json()["data"]["result"]
        if proxied and float(proxied[0]["value"][1]) == 0:
            return


def _scalar(result: list[dict[str, Any]]) -> float | None:
    return float(result[0]["value"][1]) if result else None


def _meta_type(metadata: dict[str, list[dict[str, str]]], name: str) -> str | None:
    for key in (name, name.removesuffix("_total")):  # a counter's TYPE line names the family without _total
        if key in metadata:
            return metadata[key][0]["type"]
    return None


@pytest.fixture(scope="module")
def local_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    sc = scenario_from_data(SCENARIO, "native-series")
    assert len(build_requests(sc)) == N
    out = tmp_path_factory.mktemp("local")
    writer = RunWriter(out, {"scenario": sc.name, "autoscaler": "static", "cluster": "local", "seed": sc.seed,
                             "duration_s": sc.duration_s, "slo": sc.slo.model_dump(mode="json"), "variants": []})
    Probe(sc, sc.autoscaler("static"), writer, None, LocalBackend()).run()
    summary = writer.finish()
    assert summary["requests_ok"] == N, summary
    return Probe.seen


def test_every_catalogued_series_is_served_with_its_labels_type_and_buckets(local_run: dict[str, Any]) -> None:
    problems = []
    for spec in S.CATALOGUE:
        assert spec.exporter in EXPORTERS
        if spec.condition:
            continue
        for fam in _families(spec):
            found = local_run["series"][fam]
            if not found:
                problems.append(f"{fam}: not served")
                continue
            for labels in found:
                missing = set(spec.labels) - set(labels)
                if missing:
                    problems.append(f"{fam}: labels {sorted(missing)} missing in {labels}")
        if spec.type == "histogram":
            les = {float(x["le"]) for x in local_run["series"][f"{spec.name}_bucket"]}
            if les != {*spec.buckets, float("inf")}:
                problems.append(f"{spec.name}: buckets {sorted(les)} != {spec.buckets} + +Inf")
        got = _meta_type(local_run["metadata"], spec.name)
        if got != spec.type:
            problems.append(f"{spec.name}: type {got!r}, catalogued {spec.type!r}")
    assert not problems, "\n".join(problems)


# what the simulator does not write (serve-router does): the Inference Extension's token buckets
SIM_GAPS = {f"{h}_bucket" for h in (S.OBJECTIVE_INPUT_TOKENS, S.OBJECTIVE_OUTPUT_TOKENS)}


def test_the_simulator_serves_the_same_catalogue(tmp_path: Path) -> None:
    sc = scenario_from_data(SCENARIO, "native-series")
    sim = Simulation(sc, sc.autoscaler("static"), RunWriter(tmp_path / "sim", {}), build_requests(sc))
    sim.run()
    end = sc.duration_s + sc.drain_s
    problems = []
    for spec in S.CATALOGUE:
        if spec.condition:
            continue
        for fam in _families(spec):
            if fam in SIM_GAPS:
                continue
            found = [r["metric"] for r in sim.metrics.query(f'last_over_time({{__name__="{fam}"}}[1h])', at=end)]
            if not found:
                problems.append(f"{fam}: not in the simulator")
            problems += [f"{fam}: labels {sorted(set(spec.labels) - set(m))} missing" for m in found
                         if set(spec.labels) - set(m)]
    assert not problems, "\n".join(problems)


def test_the_same_promql_gives_the_hand_worked_values_on_local_and_sim(local_run: dict[str, Any],
                                                                        tmp_path: Path) -> None:
    for q, want in VALUES.items():
        assert local_run["values"][q] == pytest.approx(want), q
    sc = scenario_from_data(SCENARIO, "native-series")
    sim = Simulation(sc, sc.autoscaler("static"), RunWriter(tmp_path / "sim", {}), build_requests(sc))
    sim.run()
    end = sc.duration_s + sc.drain_s
    for q, want in VALUES.items():
        assert _scalar(sim.metrics.query(q, at=end)) == pytest.approx(want), q
