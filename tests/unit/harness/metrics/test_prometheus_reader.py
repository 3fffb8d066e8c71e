"""The Prometheus MetricsReader: answers parsed per pod, failures -> MetricsUnavailable,
credentials never leak into messages or repr. No network: a fake client, or a
closed port on 127.0.0.1 for the unreachable case."""
from __future__ import annotations

import pytest

from scalearena.contracts.errors import MetricsUnavailable
from scalearena.contracts.series import KV_USAGE, REQUEST_SUCCESS, TTFT_HIST
from scalearena.harness.metrics.prometheus import PrometheusAuth, PrometheusMetrics

SECRET = "s3cr3t-token-value"


class FakeClient:
    def __init__(self, answers: dict[str, list]) -> None:
        self.answers = answers

    def custom_query(self, query: str) -> list:
        for key, result in self.answers.items():
            if key in query:
                return result
        return []


def _series(pod: str, value: str, **labels: str) -> dict:
    return {"metric": {"pod": pod, **labels}, "value": [1000.0, value]}


def test_pod_max_over_time_parses_per_pod_and_drops_nan() -> None:
    client = FakeClient({"max_over_time": [_series("p0", "0.83"), _series("p1", "0.25"), _series("p2", "NaN")]})
    r = PrometheusMetrics("http://127.0.0.1:1", {"v": "m"}, client=client)
    assert r.pod_max_over_time("v", KV_USAGE, 60) == {"p0": 0.83, "p1": 0.25}


def test_counter_increase_empty_is_zero_and_value_is_read() -> None:
    r = PrometheusMetrics("http://127.0.0.1:1", {"v": "m"}, client=FakeClient({}))
    assert r.counter_increase("v", REQUEST_SUCCESS, 600) == 0.0
    r = PrometheusMetrics("http://127.0.0.1:1", {"v": "m"}, client=FakeClient({"increase": [{"metric": {}, "value": [0, "42"]}]}))
    assert r.counter_increase("v", REQUEST_SUCCESS, 600) == 42.0


def test_histogram_quantile_none_when_no_observation() -> None:
    r = PrometheusMetrics("http://127.0.0.1:1", {"v": "m"}, client=FakeClient({"histogram_quantile": [{"metric": {}, "value": [0, "NaN"]}]}))
    assert r.histogram_quantile("v", TTFT_HIST, 0.99, 60) is None


def test_latest_pod_samples_joins_the_instant_queries() -> None:
    client = FakeClient(
        {
            "timestamp(": [_series("p0", "1234.5")],
            "vllm:cache_config_info": [_series("p0", "1", num_gpu_blocks="1024", block_size="16")],
            "vllm:kv_cache_usage_perc": [_series("p0", "0.5")],
            "vllm:num_requests_waiting": [_series("p0", "3")],
            "vllm:num_requests_running": [_series("p0", "2")],
            "gpu_utilization": [_series("p0", "0.9")],
        }
    )
    r = PrometheusMetrics("http://127.0.0.1:1", {"v": "m"}, client=client)
    [pm] = r.latest_pod_samples("v")
    assert (pm.pod, pm.ts, pm.kv_usage, pm.waiting, pm.running, pm.gpu_util) == ("p0", 1234.5, 0.5, 3, 2, 0.9)
    assert (pm.num_gpu_blocks, pm.block_size) == (1024, 16)


def test_bearer_token_is_sent_as_authorization_header(tmp_path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(SECRET + "\n")
    r = PrometheusMetrics("http://127.0.0.1:1", {"v": "m"}, auth=PrometheusAuth(bearer_token_file=str(token_file)))
    assert r._client.headers == {"Authorization": f"Bearer {SECRET}"}


def test_tls_options_reach_the_session(tmp_path) -> None:
    auth = PrometheusAuth(ca_file="/etc/ca.pem", client_cert="/c.pem", client_key="/k.pem")
    r = PrometheusMetrics("https://127.0.0.1:1", {"v": "m"}, auth=auth)
    assert r._client._session.verify == "/etc/ca.pem"
    assert r._client._session.cert == ("/c.pem", "/k.pem")


def test_unknown_variant_is_unavailable() -> None:
    r = PrometheusMetrics("http://127.0.0.1:1", {"v": "m"}, client=FakeClient({}))
    with pytest.raises(MetricsUnavailable):
        r.pod_max_over_time("nope", KV_USAGE, 60)
