"""CLUSTER=local with the real llm-d-inference-sim as the engine (``--backend-option engine=llm-d-inference-sim``).

The binary is the one `make kwok-tools` builds from source (kube/tools.py). Where it is not built the test is
skipped with the reason, as the kwok tier is (tests/e2e/test_kwok.py); SCALEARENA_REQUIRE_KWOK=1 (what .ci/run
sets) turns that skip into a failure. The run (local_inference_sim.yaml, 15 s + 3 s drain at time scale 1,
about 30 s of wall time) goes through serve-router and a real Prometheus, which reads the sim's series through
the harness's metrics relay (the sim labels them with no pod).
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from scalearena.harness.config.scenario import load_scenario
from scalearena.harness.kube import tools
from scalearena.harness.local.backend import LocalBackend, LocalRun
from scalearena.reports.results import RunWriter

HERE = Path(__file__).parent
REQUIRED = os.environ.get("SCALEARENA_REQUIRE_KWOK") == "1"
pytestmark = [
    pytest.mark.local,
    pytest.mark.skipif(shutil.which("prometheus") is None, reason="needs prometheus (scripts/ensure-prometheus.sh)"),
]


def _need_sim() -> None:
    path = tools.binary("llm-d-inference-sim")
    if not path.is_file():
        if REQUIRED:
            pytest.fail(f"SCALEARENA_REQUIRE_KWOK=1 but {path} is not built (make kwok-tools)")
        pytest.skip(f"{path} not built (make kwok-tools)")


class Probe(LocalRun):
    """The local run, read back through its own Prometheus (the reader the autoscalers use) before teardown."""

    seen: dict[str, Any] = {}

    def _collect(self, final: bool) -> None:
        if final:
            samples = self.reader.latest_pod_samples("va")
            Probe.seen = {
                "pods": [(p.pod, p.kv_usage, p.waiting, p.running) for p in samples],
                "requests": self.reader.counter_increase("va", "vllm:request_success_total", 60.0),
            }
        super()._collect(final)


def test_requests_served_by_the_real_sim_at_its_configured_ttft(tmp_path: Path) -> None:
    _need_sim()
    sc = load_scenario(HERE / "local_inference_sim.yaml")
    cfg = sc.autoscaler("static")
    out = tmp_path / "run"
    writer = RunWriter(out, {"scenario": sc.name, "autoscaler": cfg.label, "cluster": "local", "seed": sc.seed,
                             "duration_s": sc.duration_s, "slo": sc.slo.model_dump(mode="json"), "variants": []})
    Probe(sc, cfg, writer, None, LocalBackend(engine="llm-d-inference-sim")).run()
    summary = writer.finish()
    # 2 rps for 15 s, evenly spaced: 30 requests, all served by the one sim pod
    assert summary["requests_total"] == 30
    assert summary["requests_ok"] == 30, summary["failures"]
    req = pd.read_parquet(out / "requests.parquet")
    assert set(req["pod"]) == {"va-0"}
    assert '"DisplayModelName": "m"' in (out / "logs" / "va-0.log").read_text()  # the sim's config dump at start
    # TTFT: about 0.5 requests in flight (270 ms each at 2 rps), so the sim's load factor is 1 (and
    # time_factor_under_load is 1 anyway): it sleeps the configured 200 ms, whole, before the first token.
    # The client adds the router hop and HTTP (a few ms on an idle host), so the median is 200 ms and a little
    # more; within 15 %: 170 to 230 ms.
    assert summary["ttft_ms"]["p50"] == pytest.approx(200.0, rel=0.15)
    # Prometheus read the sim's series, labelled with the pod by the relay: one pod, idle at the end
    assert [p[0] for p in Probe.seen["pods"]] == ["va-0"]
    assert Probe.seen["pods"][0][1:] == (0.0, 0, 0)
    assert Probe.seen["requests"] > 0  # vllm:request_success_total grew through the pod-labelled scrape
