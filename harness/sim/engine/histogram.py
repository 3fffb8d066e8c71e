"""Prometheus-style cumulative histograms with vLLM's bucket boundaries.

The engine advances analytically, so one call may record many identical
inter-token latencies at once: ``observe(value, count)`` takes a (possibly
fractional) count. Fractional counts are harmless for what consumers do with
histograms (``rate`` and ``histogram_quantile``) and keep the cost per event
instead of per token.
"""
from __future__ import annotations

import math

from scalearena.contracts.series import (
    EPP_NTPOT_BUCKETS,
    EPP_TTFT_BUCKETS,
    VLLM_E2E_BUCKETS,
    VLLM_ITL_BUCKETS,
    VLLM_TTFT_BUCKETS,
)

# vLLM v1 (vllm/v1/metrics/loggers.py) bucket upper bounds, seconds (listed once, in contracts/series.py).
TTFT_BUCKETS = VLLM_TTFT_BUCKETS
ITL_BUCKETS = VLLM_ITL_BUCKETS
E2E_BUCKETS = VLLM_E2E_BUCKETS


class Histogram:
    """Per-bucket (non-cumulative) counts; ``cumulative()`` gives Prometheus ``le`` buckets."""

    __slots__ = ("bounds", "counts", "sum", "count", "_last_v", "_last_i")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0.0] * (len(bounds) + 1)  # last = +Inf
        self.sum = 0.0
        self.count = 0.0
        self._last_v = math.nan  # value and bucket of the previous observation: ITL repeats at every event
        self._last_i = 0

    def observe(self, value: float, n: float = 1.0) -> None:
        if n <= 0.0:
            return
        if value == self._last_v:
            i = self._last_i
        else:  # bisect.bisect_left, written out: the compiled build (harness/sim/native.py) runs it without a call
            bounds = self.bounds
            i, hi = 0, len(bounds)
            while i < hi:
                mid = (i + hi) // 2
                if bounds[mid] < value:
                    i = mid + 1
                else:
                    hi = mid
            self._last_v, self._last_i = value, i
        counts = self.counts
        counts[i] = counts[i] + n
        self.sum += value * n
        self.count += n

    def cumulative(self) -> tuple[float, ...]:
        """Counts per ``le`` bound, the last entry is ``+Inf`` (== count)."""
        out = []
        acc = 0.0
        for c in self.counts:
            acc += c
            out.append(acc)
        return tuple(out)


class EppLatency:
    """The llm-d EPP's per-request histograms of one model (TTFT from arrival, NTPOT = e2e / output tokens),
    for every request answered in full, with the llm-d router's buckets (contracts/series.py). Here, with
    the histograms, so the compiled simulator (harness/sim/native.py) observes into them without a Python call;
    harness/metrics/native_keys.py writes their series."""

    __slots__ = ("ttft", "ntpot")

    def __init__(self) -> None:
        self.ttft, self.ntpot = Histogram(EPP_TTFT_BUCKETS), Histogram(EPP_NTPOT_BUCKETS)

    def observe(self, ttft_s: float | None, e2e_s: float, tokens: int) -> None:
        self.ttft.observe(e2e_s if ttft_s is None else ttft_s)  # no first token seen: the whole duration
        if tokens > 0:
            self.ntpot.observe(e2e_s / tokens)


def quantile_from_buckets(q: float, bounds: tuple[float, ...], cumulative: tuple[float, ...]) -> float | None:
    """Prometheus ``histogram_quantile``: linear interpolation inside the bucket
    holding rank q x total; the +Inf bucket answers with the highest finite bound."""
    total = cumulative[-1] if cumulative else 0.0
    if total <= 0.0:
        return None
    rank = q * total
    prev_bound, prev_count = 0.0, 0.0
    for bound, cum in zip(bounds, cumulative, strict=False):
        if cum >= rank:
            width = cum - prev_count
            frac = 0.0 if width <= 0 else (rank - prev_count) / width
            return prev_bound + (bound - prev_bound) * frac
        prev_bound, prev_count = bound, cum
    return bounds[-1]
