"""The engine's /metrics page: vLLM metric names rendered with prometheus-client.

The engine keeps its own counters and histograms (it is clock-free and
advances analytically, observing many identical inter-token gaps at once), so
instead of prometheus-client's live Counter/Histogram objects the page is
built from a snapshot by a custom collector, in the text exposition format
Prometheus and llm-d's EPP both parse. Names and labels follow vLLM
(``model_name``; ``vllm:cache_config_info`` carries ``num_gpu_blocks`` and
``block_size`` as labels; prompt / generation token and prefix-cache counters; the
TTFT / ITL / E2E histograms with vLLM's buckets) plus the GPU busy-fraction gauge the multi-metric
autoscaler reads (``gpu_utilization``, DCGM_FI_DEV_GPU_UTIL / 100 on real GPUs).
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

from scalearena.contracts.series import (
    CACHE_CONFIG,
    E2E_HIST,
    GENERATION_TOKENS,
    GPU_UTIL,
    ITL_HIST,
    KV_USAGE,
    NUM_RUNNING,
    NUM_WAITING,
    PREFIX_CACHE_HITS,
    PREFIX_CACHE_QUERIES,
    PROMPT_TOKENS,
    REQUEST_SUCCESS,
    TTFT_HIST,
)

BUSY_SECONDS = "scalearena:gpu_busy_seconds"  # counter: seconds with a non-empty batch (rate() = busy fraction)


def _hist(name: str, doc: str, model: str, h: Any) -> HistogramMetricFamily:
    fam = HistogramMetricFamily(name, doc, labels=["model_name"])
    cum = h.cumulative()
    buckets = [(repr(float(b)), c) for b, c in zip(h.bounds, cum[:-1], strict=True)] + [("+Inf", cum[-1])]
    fam.add_metric([model], buckets, h.sum)
    return fam


class _Snapshot:
    def __init__(self, families: list[Metric]) -> None:
        self.families = families

    def collect(self) -> Iterator[Metric]:
        yield from self.families


def engine_families(m: Any, model: str, gpu_busy: float, spec: Any, num_gpu_blocks: int) -> list[Metric]:
    """Every family of one scrape from an ``EngineMetrics`` snapshot."""
    lab = ["model_name"]
    out: list[Metric] = []
    g = GaugeMetricFamily(NUM_RUNNING, "Number of requests in model execution batches.", labels=lab)
    g.add_metric([model], m.running)
    out.append(g)
    g = GaugeMetricFamily(NUM_WAITING, "Number of requests waiting to be processed.", labels=lab)
    g.add_metric([model], m.waiting)
    out.append(g)
    g = GaugeMetricFamily(KV_USAGE, "KV-cache usage. 1 means 100 percent usage.", labels=lab)
    g.add_metric([model], m.kv_usage)
    out.append(g)
    info = GaugeMetricFamily(
        CACHE_CONFIG,
        "Information of the LLMEngine CacheConfig.",
        labels=["model_name", "block_size", "num_gpu_blocks", "gpu_memory_utilization", "enable_prefix_caching"],
    )
    info.add_metric(
        [model, str(spec.block_size), str(num_gpu_blocks), str(spec.gpu_memory_utilization),
         str(spec.enable_prefix_caching)],
        1.0,
    )
    out.append(info)
    c = CounterMetricFamily(REQUEST_SUCCESS.removesuffix("_total"), "Count of successfully processed requests.",
                            labels=["model_name", "finished_reason"])
    c.add_metric([model, "length"], m.request_success_total)
    out.append(c)
    for name, doc, value in ((PREFIX_CACHE_QUERIES, "Prefix cache queries, in terms of prompt tokens.",
                              m.prefix_cache_queries),
                             (PREFIX_CACHE_HITS, "Prefix cache hits, in terms of prompt tokens.", m.prefix_cache_hits),
                             (PROMPT_TOKENS, "Number of prefill tokens processed.", m.prompt_tokens_total),
                             (GENERATION_TOKENS, "Number of generation tokens processed.", m.generation_tokens_total)):
        pc = CounterMetricFamily(name.removesuffix("_total"), doc, labels=["model_name"])
        pc.add_metric([model], value)
        out.append(pc)
    out.append(_hist(TTFT_HIST, "Histogram of time to first token in seconds.", model, m.ttft))
    out.append(_hist(ITL_HIST, "Histogram of inter-token latency in seconds.", model, m.itl))
    out.append(_hist(E2E_HIST, "Histogram of end to end request latency in seconds.", model, m.e2e))
    g = GaugeMetricFamily(GPU_UTIL, "Busy fraction of the GPU over the last window (0..1).", labels=lab)
    g.add_metric([model], gpu_busy)
    out.append(g)
    c = CounterMetricFamily(BUSY_SECONDS, "Seconds the engine had a non-empty batch.", labels=lab)
    c.add_metric([model], m.busy_s)
    out.append(c)
    return out


def with_pod_label(families: list[Metric], pod: str) -> list[Metric]:
    """Add ``pod`` to every sample. The local backend scrapes fixed port slots with
    ``honor_labels``, so the engine itself says which pod a series belongs to."""
    for fam in families:
        fam.samples = [s._replace(labels={**s.labels, "pod": pod}) for s in fam.samples]
    return families


def engine_metrics_text(m: Any, model: str, gpu_busy: float, spec: Any, num_gpu_blocks: int, pod: str = "") -> bytes:
    families = engine_families(m, model, gpu_busy, spec, num_gpu_blocks)
    if pod:
        families = with_pod_label(families, pod)
    reg = CollectorRegistry(auto_describe=False)
    reg.register(_Snapshot(families))
    return generate_latest(reg)


def parse_engine_metrics(text: str) -> dict[str, float]:
    """The few gauges the router scores on, from a /metrics page (vLLM or scalearena)."""
    wanted = {NUM_RUNNING: "running", NUM_WAITING: "waiting", KV_USAGE: "kv_usage", GPU_UTIL: "gpu_util"}
    out: dict[str, float] = {}
    for line in text.splitlines():
        if not line or line[0] == "#":
            continue
        name_end = line.find("{")
        sp = line.find(" ")
        name = line[: name_end if 0 <= name_end < sp else sp]
        key = wanted.get(name)
        if key is not None:
            try:
                out[key] = float(line.rsplit(" ", 1)[1])
            except (ValueError, IndexError):
                pass
    return out
