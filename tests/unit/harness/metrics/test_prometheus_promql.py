"""Golden files pin every PromQL query an autoscaler can cause (tests/golden/promql/).

A change to a query is a visible diff in review. Rewrite the files with
``UPDATE_GOLDEN=1 pytest tests/unit/harness/metrics/test_prometheus_promql.py``.
The reader is driven through a fake PrometheusConnect that records the query
strings, so no network is touched.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from scalearena.contracts.series import E2E_HIST, GPU_UTIL, KV_USAGE, NUM_WAITING, REQUEST_SUCCESS, TTFT_HIST
from scalearena.harness.metrics.prometheus import PrometheusMetrics, PromQL, promql_duration

GOLDEN = Path(__file__).resolve().parents[3] / "golden" / "promql"


class RecordingClient:
    def __init__(self) -> None:
        self.queries: list[str] = []

    def custom_query(self, query: str) -> list:
        self.queries.append(query)
        return []


def _queries(promql: PromQL) -> dict[str, str]:
    """Every query, named, as the reader sends it for variant va-a100 of model llama3-70b."""
    client = RecordingClient()
    r = PrometheusMetrics("http://127.0.0.1:1", {"va-a100": "llama3-70b"}, promql=promql, client=client)
    named: dict[str, str] = {}

    def grab(name: str, call) -> None:
        call()
        named[name] = client.queries[-1]

    # WVA saturation analyzer (upstream: max_over_time over 1m, per pod)
    grab("wva_kv_usage_max_1m", lambda: r.pod_max_over_time("va-a100", KV_USAGE, 60))
    grab("wva_queue_max_1m", lambda: r.pod_max_over_time("va-a100", NUM_WAITING, 60))
    # WVA scale-to-zero: successes over the retention window (10 m)
    grab("wva_success_increase_10m", lambda: r.counter_increase("va-a100", REQUEST_SUCCESS, 600))
    # HPA / KEDA style averages, multimetric GPU busy fraction
    grab("avg_queue_30s", lambda: r.pod_avg_over_time("va-a100", NUM_WAITING, 30))
    grab("avg_gpu_util_15s", lambda: r.pod_avg_over_time("va-a100", GPU_UTIL, 15))
    # multimetric rule C: p99 over a 60 s sliding window
    grab("ttft_p99_60s", lambda: r.histogram_quantile("va-a100", TTFT_HIST, 0.99, 60))
    grab("e2e_p99_60s", lambda: r.histogram_quantile("va-a100", E2E_HIST, 0.99, 60))
    # the harness's ClusterView builder: latest sample per pod
    client.queries.clear()
    r.latest_pod_samples("va-a100")
    for i, q in enumerate(client.queries):
        named[f"view_{i}"] = q
    grab("router_queue", lambda: r.router_queue("llama3-70b"))
    return named


CASES = {
    "default": PromQL(),
    "time_scale_10": PromQL(time_scale=10.0),
    "namespaced": PromQL(variant_label="deployment", extra_labels={"namespace": "llm-d"}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_promql_golden(case: str) -> None:
    got = "".join(f"{name}\t{q}\n" for name, q in _queries(CASES[case]).items())
    path = GOLDEN / f"{case}.promql"
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(got)
    assert path.is_file(), f"missing golden file {path}; run with UPDATE_GOLDEN=1"
    assert got == path.read_text()


def test_upstream_wva_query_verbatim() -> None:
    # The query WVA's saturation analyzer issues upstream, written out by hand:
    want = 'max by (pod)(max_over_time(vllm:kv_cache_usage_perc{model_name="llama3-70b",variant="va-a100"}[1m]))'
    assert PromQL().pod_max_over_time("llama3-70b", "va-a100", KV_USAGE, 60) == want


@pytest.mark.parametrize(
    ("seconds", "literal"),
    [
        (60, "1m"),  # 60 000 ms, a whole minute
        (600, "10m"),
        (15, "15s"),
        (90, "90s"),  # 1.5 min is not a whole minute -> seconds
        (6, "6s"),  # 1m at time scale 10
        (1.5, "1500ms"),  # 15 s at time scale 10
        (3600, "1h"),
        (0.0001, "1ms"),  # never below one millisecond
    ],
)
def test_promql_duration(seconds: float, literal: str) -> None:
    assert promql_duration(seconds) == literal


def test_label_values_are_escaped() -> None:
    # a quote in a model name must not end the label value early: m"x -> m\"x
    assert PromQL().selector('m"x', None) == '{model_name="m\\"x"}'
