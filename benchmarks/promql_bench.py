"""PromQL engine speed on a 600 s run's series (printed, never asserted: timings depend on the machine).

The series are what the simulator's scrapes append (harness/metrics/memory.py): two variants of
10 pods each, scraped every 15 s for 600 s (41 scrapes; vLLM gauges, the success counter and
three latency histograms per pod), plus the llm-d EPP and kube-state-metrics series. The queries
are the ones autoscalers send (WVA's per-pod max_over_time, KEDA triggers, the llm-d recipes,
an SLO-aware histogram_quantile, a subquery), each evaluated at every 15 s step of the run, as a
controller polling every 15 s would.

Usage: ``python benchmarks/promql_bench.py``.
"""
from __future__ import annotations

import math
import time

from scalearena.contracts import series as S
from scalearena.harness.metrics.memory import MemoryMetrics, Sample
from scalearena.harness.metrics.prometheus import PromQL
from scalearena.harness.sim.engine.histogram import E2E_BUCKETS, ITL_BUCKETS, TTFT_BUCKETS

DURATION_S, SCRAPE_S, PODS = 600, 15, 10
VARIANTS = ("va-a100", "va-h100")


def _cumulative(n: int, k: int, total: float) -> tuple[float, ...]:
    return tuple(total * min(1.0, (i + 1) / (n - 1)) for i in range(k - 1)) + (total,)


def _scrapes() -> list[tuple[str, str, Sample]]:
    out = []
    for step in range(DURATION_S // SCRAPE_S + 1):
        t = float(step * SCRAPE_S)
        for v in VARIANTS:
            for p in range(PODS):
                done = float(step * (3 + p))
                out.append((v, f"{v}-{p}", Sample(
                    t, 0.4 + 0.3 * math.sin(step / 5 + p), p % 4, 8 + p, 0.7, done,
                    _cumulative(6, len(TTFT_BUCKETS) + 1, done), _cumulative(9, len(ITL_BUCKETS) + 1, done * 50),
                    _cumulative(7, len(E2E_BUCKETS) + 1, done))))
    return out


def build() -> tuple[MemoryMetrics, float, float]:
    """The filled source, the seconds `record` took (what every sim run pays) and the flush time
    (what the first PromQL query pays: the native series written into the TSDB)."""
    m = MemoryMetrics()
    for v in VARIANTS:
        m.models[v] = "m1"
        m.cache_config[v] = (4096, 16)
    scrapes = _scrapes()
    t0 = time.perf_counter()
    for v, pod, sample in scrapes:
        m.record(v, pod, sample)
    t1 = time.perf_counter()
    m.flush_native()
    t2 = time.perf_counter()
    for step in range(DURATION_S // SCRAPE_S + 1):
        t = float(step * SCRAPE_S)
        epp = {"namespace": "scalearena", "service": "epp", "model_name": "m1", "inference_pool": "pool"}
        m.tsdb.append(S.EPP_QUEUE_SIZE, epp, t, float(step % 7))
        m.tsdb.append(S.EPP_REQUEST_RUNNING, epp, t, 40.0 + step % 11)
        m.tsdb.append(S.EPP_POOL_SATURATION, epp, t, 0.5 + 0.01 * step)
        for vi, v in enumerate(VARIANTS):
            m.tsdb.append(S.KSM_REPLICAS_UNAVAILABLE, {"namespace": "scalearena", "deployment": v}, t, float(vi))
    return m, t1 - t0, t2 - t1


def queries() -> list[str]:
    q = PromQL(extra_labels={"namespace": "scalearena"})
    sel = '{namespace="scalearena",model_name="m1"}'
    epp = '{namespace="scalearena",service="epp",model_name="m1"}'
    return [
        q.pod_max_over_time("m1", "va-a100", S.KV_USAGE, 60),
        q.counter_increase("m1", "va-a100", S.REQUEST_SUCCESS, 60),
        q.histogram_quantile("m1", "va-a100", S.TTFT_HIST, 0.9, 60),
        'sum(vllm:num_requests_waiting{namespace="scalearena",variant="va-a100"})',
        f"sum({S.EPP_QUEUE_SIZE}{epp})",
        f'max({S.KSM_REPLICAS_UNAVAILABLE}{{namespace="scalearena",deployment="va-a100"}})',
        f"histogram_quantile(0.9, sum by (le) (rate({S.TTFT_HIST}_bucket{sel}[1m])))",
        f"sum by (variant) (rate({S.REQUEST_SUCCESS}{sel}[2m]))",
        f"avg_over_time(max({S.KV_USAGE}{sel})[45s:15s])",
    ]


def main() -> None:
    m, record_s, flush_s = build()
    scrapes = (DURATION_S // SCRAPE_S + 1) * PODS * len(VARIANTS)
    print(f"{scrapes} pod scrapes: record {record_s / scrapes * 1e6:.1f} us each (paid by every sim run); "
          f"native series written on the first query: {len(m.tsdb)} series in {flush_s * 1000:.0f} ms "
          f"({flush_s / scrapes * 1e6:.0f} us per pod scrape)")
    steps = [float(t) for t in range(SCRAPE_S, DURATION_S + 1, SCRAPE_S)]
    total = 0.0
    for expr in queries():
        m.promql.parse(expr)  # parse once, as a controller's fixed query is
        t0 = time.perf_counter()
        for t in steps:
            m.query(expr, at=t)
        dt = time.perf_counter() - t0
        total += dt
        print(f"  {dt / len(steps) * 1000:7.3f} ms/query  {expr}")
    n = len(steps) * len(queries())
    print(f"{n} evaluations in {total:.3f} s: {total / n * 1000:.3f} ms per query on average")


if __name__ == "__main__":
    main()
