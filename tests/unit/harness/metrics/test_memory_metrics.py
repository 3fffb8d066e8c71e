"""In-memory metrics source: windows, staleness, increase, quantiles, outage."""
from __future__ import annotations

import pytest

from scalearena.contracts.errors import MetricsUnavailable
from scalearena.contracts.series import E2E_HIST, KV_USAGE, NUM_WAITING, REQUEST_SUCCESS
from scalearena.harness.metrics.memory import MemoryMetrics, Sample
from scalearena.harness.sim.engine.histogram import E2E_BUCKETS, ITL_BUCKETS, TTFT_BUCKETS, Histogram

Z_TTFT = (0.0,) * (len(TTFT_BUCKETS) + 1)
Z_ITL = (0.0,) * (len(ITL_BUCKETS) + 1)


def s(t: float, kv: float, waiting: int = 0, success: float = 0.0, e2e: tuple | None = None) -> Sample:
    return Sample(t, kv, waiting, 0, None, success, Z_TTFT, Z_ITL, e2e or (0.0,) * (len(E2E_BUCKETS) + 1))


def test_max_and_avg_over_window() -> None:
    m = MemoryMetrics(staleness_s=300)
    for t, kv in [(0, 0.9), (15, 0.2), (30, 0.4), (45, 0.6)]:
        m.record("v", "p0", s(t, kv, waiting=int(kv * 10)))
    m.now = 45.0
    # window (45-30, 45] = samples at 30 and 45 -> max 0.6, mean 0.5
    assert m.pod_max_over_time("v", KV_USAGE, 30.0) == {"p0": pytest.approx(0.6)}
    assert m.pod_avg_over_time("v", KV_USAGE, 30.0) == {"p0": pytest.approx(0.5)}
    assert m.pod_max_over_time("v", NUM_WAITING, 60.0) == {"p0": 9.0}


def test_stale_series_disappear() -> None:
    m = MemoryMetrics(staleness_s=60)
    m.record("v", "old", s(0, 0.5))
    m.record("v", "new", s(50, 0.1))
    m.now = 61.0  # old's newest sample is 61 s old > 60 -> gone
    assert set(m.latest("v")) == {"new"}
    assert m.pod_max_over_time("v", KV_USAGE, 120.0) == {"new": pytest.approx(0.1)}


def test_counter_increase_uses_sample_before_window() -> None:
    m = MemoryMetrics()
    for t, c in [(0, 5), (60, 9), (120, 20)]:
        m.record("v", "p0", s(t, 0.0, success=c))
    m.record("v", "p1", s(120, 0.0, success=3))  # born inside the window: not counted from zero
    m.now = 120.0
    assert m.counter_increase("v", REQUEST_SUCCESS, 60.0) == pytest.approx(11.0)  # 20 - 9, + p1 3 - 3
    assert m.counter_increase("v", REQUEST_SUCCESS, 600.0) == pytest.approx(15.0)  # 20 - 5


def test_histogram_quantile_interpolates() -> None:
    h = Histogram(E2E_BUCKETS)
    m = MemoryMetrics()
    m.record("v", "p0", s(0, 0.0, e2e=h.cumulative()))
    for _ in range(4):
        h.observe(1.2)  # bucket (1.0, 1.5]
    m.record("v", "p0", s(15, 0.0, e2e=h.cumulative()))
    m.now = 15.0
    # 4 observations in (1.0, 1.5]: median rank 2 -> 1.0 + 0.5 x 2/4 = 1.25
    assert m.histogram_quantile("v", E2E_HIST, 0.5, 60.0) == pytest.approx(1.25)
    # the baseline is the last sample at or before the window start (t=0 for a window (5, 15])
    assert m.histogram_quantile("v", E2E_HIST, 0.5, 10.0) == pytest.approx(1.25)
    m.now = 30.0
    assert m.histogram_quantile("v", E2E_HIST, 0.5, 10.0) is None  # no sample in (20, 30]


def test_outage_raises_and_empty_is_not_an_error() -> None:
    m = MemoryMetrics()
    assert m.pod_max_over_time("nobody", KV_USAGE, 60) == {}
    m.available = False
    with pytest.raises(MetricsUnavailable):
        m.pod_max_over_time("v", KV_USAGE, 60)
    with pytest.raises(MetricsUnavailable):
        m.latest("v")


def test_raw_promql_reads_the_native_series_of_each_scrape() -> None:
    from scalearena.contracts.series import NUM_RUNNING, TTFT_HIST

    m = MemoryMetrics()
    m.models["v"] = "m1"
    m.cache_config["v"] = (4096, 16)
    for t, kv, success in [(0, 0.2, 0.0), (15, 0.4, 30.0), (30, 0.6, 60.0)]:
        m.record("v", "p0", Sample(t, kv, 3, 2, 0.5, success, Z_TTFT, Z_ITL, (0.0,) * (len(E2E_BUCKETS) + 1)))
    m.evaluate_at(30.0)
    out = m.query(f'{KV_USAGE}{{namespace="scalearena",model_name="m1",variant="v"}}')
    assert out == [{"metric": {"__name__": KV_USAGE, "namespace": "scalearena", "model_name": "m1", "pod": "p0",
                               "variant": "v"}, "value": [30.0, "0.6"]}]
    # 60 requests over the 30 s the samples span, window [0, 30] fully covered -> rate 2/s
    assert m.query(f"sum(rate({REQUEST_SUCCESS}[30s]))") == [{"metric": {}, "value": [30.0, "2"]}]
    assert m.query(f"sum({NUM_RUNNING}) + 1", at=15.0) == [{"metric": {}, "value": [15.0, "3"]}]
    assert m.query(f"count({TTFT_HIST}_bucket)")[0]["value"][1] == str(len(TTFT_BUCKETS) + 1)
    assert m.query('max by (num_gpu_blocks) (vllm:cache_config_info)')[0]["metric"] == {"num_gpu_blocks": "4096"}
    ranged = m.query_range(f"max({KV_USAGE})", 0, 30, 15)
    assert ranged == [{"metric": {}, "values": [[0.0, "0.2"], [15.0, "0.4"], [30.0, "0.6"]]}]
    m.available = False
    with pytest.raises(MetricsUnavailable):
        m.query("vector(1)")


def test_recording_rules_run_as_time_advances() -> None:
    from scalearena.harness.promql.rules import load_rule_groups

    m = MemoryMetrics()
    m.add_rules(load_rule_groups(
        {"groups": [{"name": "g", "interval": "15s", "rules": [{"record": "v:kv:max", "expr": f"max({KV_USAGE})"}]}]},
        "rules.yaml"))
    for t, kv in [(0, 0.2), (15, 0.4), (30, 0.6)]:
        m.record("v", "p0", s(t, kv))
        m.evaluate_at(float(t))
    # group "g" runs 100 ms into each 15 s (test_promql_rules): recorded at 0.1 and 15.1 so far: 0.2, 0.4
    assert m.query("max_over_time(v:kv:max[1m])")[0]["value"][1] == "0.4"
    m.evaluate_at(30.1)  # and at 30.1 from the sample of 30: 0.6
    assert m.query("max_over_time(v:kv:max[1m])")[0]["value"][1] == "0.6"
    assert m.query("min_over_time(v:kv:max[1m])")[0]["value"][1] == "0.2"


def test_deployment_series_follow_kube_state_metrics() -> None:
    m = MemoryMetrics()
    m.record_deployment("va-a100", 0.0, spec=4, active=4, ready=1)
    m.record_deployment("va-a100", 15.0, spec=4, active=4, ready=3)
    m.evaluate_at(15.0)
    sel = '{namespace="scalearena",deployment="va-a100"}'
    # unavailable = spec - ready: 4 - 3 = 1 now, 4 - 1 = 3 at 0 s
    assert m.query(f"max(kube_deployment_status_replicas_unavailable{sel})")[0]["value"][1] == "1"
    assert m.query(f"max(kube_deployment_status_replicas_unavailable{sel})", at=0.0)[0]["value"][1] == "3"
    assert m.query(f"kube_deployment_status_replicas_ready{sel} / kube_deployment_spec_replicas{sel}"
                   )[0]["value"][1] == "0.75"


def test_a_pod_no_longer_scraped_ends_its_series_at_once() -> None:
    m = MemoryMetrics()
    m.record("v", "p0", s(0, 0.5))
    m.record("v", "p1", s(0, 0.7))
    m.end_scrape(0)
    m.record("v", "p0", s(15, 0.5))  # p1 was deleted: Prometheus writes staleness markers at 15 s
    m.end_scrape(15)
    pods = m.query(f"{KV_USAGE}", at=16.0)
    assert [r["metric"]["pod"] for r in pods] == ["p0"]  # not the 5-minute lookback
    assert sorted(r["metric"]["pod"] for r in m.query(f"{KV_USAGE}", at=14.0)) == ["p0", "p1"]
