"""The label keys of the simulator's native series (contracts/series.py), built once per pod or model.

Kept apart from memory.py (which appends the samples and answers the queries): a pod's vLLM and
EPP series, with vLLM's histogram families, and one model's llm-d EPP request histograms
(``engine.histogram.EppLatency``: TTFT and NTPOT per request answered in full, the llm-d router's
buckets), whose samples memory.py writes at every scrape as serve-router's /metrics would show them.
"""
from __future__ import annotations

from typing import NamedTuple

from scalearena.contracts.series import (
    CACHE_CONFIG,
    E2E_HIST,
    EPP_INFLIGHT_TOKENS,
    EPP_PRODUCER,
    EPP_TPOT_HIST,
    EPP_TTFT_HIST,
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
    epp_labels,
)
from scalearena.harness.promql.values import Labels, make_labels
from scalearena.harness.sim.engine.histogram import (
    E2E_BUCKETS,
    ITL_BUCKETS,
    TTFT_BUCKETS,
    EppLatency,
    Histogram,
)

_HIST_BOUNDS = ((TTFT_HIST, TTFT_BUCKETS), (ITL_HIST, ITL_BUCKETS), (E2E_HIST, E2E_BUCKETS))


class NativeKeys(NamedTuple):
    """One pod's series keys, built once (label sets are sorted tuples)."""

    kv: Labels
    waiting: Labels
    running: Labels
    gpu: Labels
    success: Labels
    cache: Labels | None
    hists: list[tuple[list[Labels], Labels, Labels]]  # per histogram: bucket keys, count key, sum key
    tokens: tuple[Labels, ...] = ()  # prompt, generation, EPP in-flight tokens
    prefix_queries: Labels | None = None
    prefix_hits: Labels | None = None


def native_keys(namespace: str, variant: str, pod: str, model: str,
                cache_config: tuple[int | None, int | None]) -> NativeKeys:
    """One pod's keys: the vLLM series (``variant`` label included), its EPP in-flight tokens."""
    base = {"namespace": namespace, "pod": pod, "model_name": model, "variant": variant}
    epp = {**epp_labels(model, namespace), "endpoint_name": pod, "producer_name": EPP_PRODUCER}
    tokens = (make_labels(PROMPT_TOKENS, base), make_labels(GENERATION_TOKENS, base),
              make_labels(EPP_INFLIGHT_TOKENS, epp))
    blocks, block_size = cache_config
    cache = None if blocks is None else make_labels(
        CACHE_CONFIG, {**base, "num_gpu_blocks": str(blocks), "block_size": str(block_size)})
    hists = []
    for name, bounds in _HIST_BOUNDS:
        les = [repr(float(b)) for b in bounds] + ["+Inf"]
        hists.append(([make_labels(f"{name}_bucket", {**base, "le": le}) for le in les],
                      make_labels(f"{name}_count", base), make_labels(f"{name}_sum", base)))
    return NativeKeys(
        kv=make_labels(KV_USAGE, base), waiting=make_labels(NUM_WAITING, base),
        running=make_labels(NUM_RUNNING, base), gpu=make_labels(GPU_UTIL, base),
        success=make_labels(REQUEST_SUCCESS, {**base, "finished_reason": "length"}), cache=cache, hists=hists,
        prefix_queries=make_labels(PREFIX_CACHE_QUERIES, base), prefix_hits=make_labels(PREFIX_CACHE_HITS, base),
        tokens=tokens)


def epp_latency_keys(namespace: str, model: str,
                     h: EppLatency) -> list[tuple[list[Labels], Labels, Labels, Histogram]]:
    """(bucket keys, sum key, count key, histogram) of the model's two EPP request histograms."""
    lab = {**epp_labels(model, namespace), "target_model_name": model}
    out = []
    for name, hist in ((EPP_TTFT_HIST, h.ttft), (EPP_TPOT_HIST, h.ntpot)):
        les = [repr(float(b)) for b in hist.bounds] + ["+Inf"]
        out.append(([make_labels(f"{name}_bucket", {**lab, "le": le}) for le in les], make_labels(f"{name}_sum", lab),
                    make_labels(f"{name}_count", lab), hist))
    return out
