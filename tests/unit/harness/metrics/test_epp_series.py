"""The llm-d EPP series and vLLM token / prefix-cache counters, read back through PromQL."""
from __future__ import annotations

import pytest

from scalearena.harness.metrics.memory import MemoryMetrics, Sample
from scalearena.harness.sim.engine.histogram import E2E_BUCKETS, ITL_BUCKETS, TTFT_BUCKETS

Z = ((0.0,) * (len(TTFT_BUCKETS) + 1), (0.0,) * (len(ITL_BUCKETS) + 1), (0.0,) * (len(E2E_BUCKETS) + 1))


def tok(t: float, prompt: float, gen: float, queries: float, hits: float, inflight: float) -> Sample:
    return Sample(t, 0.5, 1, 2, None, 0.0, *Z, *(float(v) for v in (queries, hits, prompt, gen, inflight)))


def _one(m: MemoryMetrics, expr: str, at: float) -> float:
    (row,) = m.query(expr, at=at)
    return float(row["value"][1])


def test_token_counters_and_inflight_tokens_per_endpoint() -> None:
    m = MemoryMetrics(staleness_s=300)
    m.models["va"] = "llama"
    m.record("va", "va-0", tok(0.0, 100, 10, 100, 0, 500))
    m.record("va", "va-0", tok(60.0, 700, 130, 700, 300, 800))
    # increase over [0, 60] with both ends sampled: 700 - 100 = 600 prompt tokens, 130 - 10 = 120 generated
    assert _one(m, "increase(vllm:prompt_tokens_total[60s])", 60.0) == pytest.approx(600.0)
    assert _one(m, "increase(vllm:generation_tokens_total[60s])", 60.0) == pytest.approx(120.0)
    # hit ratio of the window: (300 - 0) / (700 - 100) = 0.5
    assert _one(m, "increase(vllm:prefix_cache_hits_total[60s]) / increase(vllm:prefix_cache_queries_total[60s])",
                60.0) == pytest.approx(0.5)
    (row,) = m.query('llm_d_epp_inflight_tokens{producer_name="inflight-load-producer"}', at=60.0)
    assert row["metric"]["endpoint_name"] == "va-0" and row["metric"]["inference_pool"] == "llama"
    assert float(row["value"][1]) == 800.0
    m.end_scrape(60.0)
    m.end_scrape(75.0)  # va-0 not scraped at 75: its series end there (staleness marker)
    assert m.query("llm_d_epp_inflight_tokens", at=80.0) == []


def test_pool_gauges_per_model() -> None:
    m = MemoryMetrics(staleness_s=300)
    m.record_pool("llama", 0.0, queued=3, saturation=1.25, in_flight=7)
    m.record_pool("llama", 15.0, queued=0, saturation=0.4, in_flight=9)
    assert _one(m, 'llm_d_epp_flow_control_queue_size{inference_pool="llama"}', 10.0) == 3.0
    assert _one(m, "llm_d_epp_flow_control_pool_saturation", 15.0) == pytest.approx(0.4)
    # a 20 s window at t=15 holds both samples: max(1.25, 0.4) = 1.25
    assert _one(m, "max_over_time(llm_d_epp_flow_control_pool_saturation[20s])", 15.0) == pytest.approx(1.25)
    assert _one(m, "sum by (model_name) (llm_d_epp_request_running)", 15.0) == 9.0


def test_epp_request_histograms_are_written_at_each_pool_scrape() -> None:
    m = MemoryMetrics(staleness_s=300)
    h = m.epp_latency("llama")
    h.observe(0.3, 2.3, 10)  # TTFT 0.3 s, e2e 2.3 s over 10 tokens: NTPOT 0.23 s
    h.observe(None, 1.5, 0)  # answered without a first token seen: TTFT = the whole 1.5 s, no NTPOT
    m.record_pool("llama", 15.0, queued=0, saturation=0.0, in_flight=0)
    sel = '{inference_pool="llama",service="llama-epp",target_model_name="llama"}'
    assert _one(m, f"llm_d_epp_request_ttft_seconds_count{sel}", 15.0) == 2.0
    assert _one(m, f"llm_d_epp_request_ttft_seconds_sum{sel}", 15.0) == pytest.approx(1.8)  # 0.3 + 1.5
    # the llm-d router's TTFT buckets: 0.3 lands in le=0.4, 1.5 in le=1.5
    assert _one(m, 'llm_d_epp_request_ttft_seconds_bucket{le="0.2"}', 15.0) == 0.0
    assert _one(m, 'llm_d_epp_request_ttft_seconds_bucket{le="0.4"}', 15.0) == 1.0
    assert _one(m, 'llm_d_epp_request_ttft_seconds_bucket{le="1.5"}', 15.0) == 2.0
    assert _one(m, "llm_d_epp_request_ntpot_seconds_count", 15.0) == 1.0
    assert _one(m, 'llm_d_epp_request_ntpot_seconds_bucket{le="0.2"}', 15.0) == 0.0  # 0.23 > 0.2
    assert _one(m, 'llm_d_epp_request_ntpot_seconds_bucket{le="0.5"}', 15.0) == 1.0


def test_engine_histograms_carry_their_sum() -> None:
    m = MemoryMetrics(staleness_s=300)
    ttft = tuple([0.0] * 7 + [3.0] * (len(TTFT_BUCKETS) - 7 + 1))  # le=0.08 holds 0, le=0.1 all 3
    m.record("va", "va-0", Sample(0.0, 0.5, 0, 3, None, 3.0, ttft, *Z[1:], sums=(0.27, 0.0, 0.0)))
    assert _one(m, "vllm:time_to_first_token_seconds_sum", 0.0) == pytest.approx(0.27)
    # mean TTFT as dashboards ask for it: sum / count = 0.27 / 3 = 0.09
    assert _one(m, "vllm:time_to_first_token_seconds_sum / vllm:time_to_first_token_seconds_count", 0.0) \
        == pytest.approx(0.09)
