"""Pure pieces of the local backend: flag durations, prompt counting, the /metrics
page round trip, Prometheus config and file-SD rendering. No processes, no network."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from scalearena.harness.config.engine_spec import EngineSpec
from scalearena.harness.local.cli import parse_duration_s
from scalearena.harness.local.metrics_text import engine_metrics_text, parse_engine_metrics
from scalearena.harness.local.prometheus import Target, render_config, render_targets
from scalearena.harness.sim.engine.histogram import TTFT_BUCKETS, Histogram


@pytest.mark.parametrize(
    ("text", "unit", "seconds"),
    [("100ms", "ms", 0.1), ("2s", "ms", 2.0), ("1m30s", "ms", 90.0), ("250", "ms", 0.25), ("30", "s", 30.0),
     ("1.5s", "ms", 1.5)],
)
def test_durations_follow_llm_d_inference_sim(text: str, unit: str, seconds: float) -> None:
    assert parse_duration_s(text, unit) == pytest.approx(seconds)


class _M:  # an EngineMetrics-shaped snapshot
    running, waiting, kv_usage, busy_s, request_success_total = 3, 2, 0.8125, 12.5, 7
    prefix_cache_queries, prefix_cache_hits = 100, 40
    prompt_tokens_total, generation_tokens_total = 900, 120

    def __init__(self) -> None:
        self.ttft = Histogram(TTFT_BUCKETS)
        self.ttft.observe(0.2, 2)
        self.itl = Histogram((0.01, 0.1))
        self.e2e = Histogram((1.0, 10.0))


def test_metrics_page_round_trip_with_pod_label() -> None:
    spec = EngineSpec(kv_cache_blocks=256, latency={"kind": "constant"})
    text = engine_metrics_text(_M(), "m", 0.5, spec, 256, pod="va-0").decode()
    assert 'vllm:num_requests_running{model_name="m",pod="va-0"} 3.0' in text
    assert 'vllm:request_success_total{finished_reason="length",model_name="m",pod="va-0"} 7.0' in text
    assert 'num_gpu_blocks="256"' in text and 'block_size="16"' in text
    assert 'vllm:prefix_cache_queries_total{model_name="m",pod="va-0"} 100.0' in text
    assert 'vllm:prefix_cache_hits_total{model_name="m",pod="va-0"} 40.0' in text
    assert 'vllm:prompt_tokens_total{model_name="m",pod="va-0"} 900.0' in text
    assert 'vllm:generation_tokens_total{model_name="m",pod="va-0"} 120.0' in text
    # two TTFT observations of 0.2 s: le=0.1 holds 0, le=0.25 holds 2, sum 0.4
    assert 'vllm:time_to_first_token_seconds_bucket{le="0.1",model_name="m",pod="va-0"} 0.0' in text
    assert 'vllm:time_to_first_token_seconds_bucket{le="0.25",model_name="m",pod="va-0"} 2.0' in text
    assert 'vllm:time_to_first_token_seconds_sum{model_name="m",pod="va-0"} 0.4' in text
    assert parse_engine_metrics(text) == {"running": 3.0, "waiting": 2.0, "kv_usage": 0.8125, "gpu_util": 0.5}


def test_prometheus_config_scales_durations(tmp_path: Path) -> None:
    cfg = render_config(15.0, tmp_path / "e.json", tmp_path / "r.json", time_scale=10.0)
    # 15 s scrape interval at time scale 10 -> 1.5 s wall = 1500ms
    assert cfg["global"]["scrape_interval"] == "1500ms"
    assert cfg["global"]["scrape_timeout"] == "1500ms"
    assert [j["job_name"] for j in cfg["scrape_configs"]] == ["engines", "router"]
    assert all(j["honor_labels"] for j in cfg["scrape_configs"])
    cfg = render_config(15.0, tmp_path / "e.json", tmp_path / "r.json", kube_state_sd=tmp_path / "k.json")
    assert [j["job_name"] for j in cfg["scrape_configs"]] == ["engines", "router", "kube-state-metrics"]
    assert cfg["scrape_configs"][2]["file_sd_configs"][0]["files"] == [str(tmp_path / "k.json")]


def test_file_sd_document() -> None:
    doc = json.loads(render_targets([Target("127.0.0.1:9002", {"variant": "b"}), Target("127.0.0.1:9001", {"variant": "a"})]))
    assert doc == [{"targets": ["127.0.0.1:9001"], "labels": {"variant": "a"}},
                   {"targets": ["127.0.0.1:9002"], "labels": {"variant": "b"}}]
