"""Replay a trace as arrivals: window, speed-up, rate rescaling and token clipping.

The order of operations, all streaming (memory does not grow with the trace):

1. window — rows with ``start_s <= t < start_s + window_s`` (trace time,
   seconds since the file's first row); reading stops at the window's end;
2. time_scale — arrival = (t - t_first) / time_scale, where t_first is the
   first row inside the window, so the replay's first request is sent at 0;
   rows whose arrival reaches the run's ``duration_s`` end the replay;
3. target_rps — the window's own rate is measured by a first, counting pass
   (native = rows replayed / replayed span); a factor f = target / native
   below 1 keeps each row with probability f (seeded Bernoulli thinning), a
   factor above 1 sends each row floor(f) times plus once more with
   probability f - floor(f), extra copies shifted by a uniform jitter in
   [0, 1/native) — one mean gap — and re-sorted through a small heap;
4. max_model_len — a request whose input + output exceeds it gets its input
   cut to max_model_len - 1 and its output to what then fits (vLLM refuses a
   prompt that leaves no room to generate); each such request counts once in
   ``TraceStats.clipped``.
"""
from __future__ import annotations

import heapq
import math
from collections.abc import Iterator
from typing import NamedTuple

import numpy as np

from scalearena.contracts.errors import UserError
from scalearena.workloads.spec import TraceArrivals
from scalearena.workloads.traces.azure import read_azure
from scalearena.workloads.traces.base import TraceReader, TraceRow, TraceStats
from scalearena.workloads.traces.burstgpt import read_burstgpt
from scalearena.workloads.traces.mooncake import read_mooncake

READERS: dict[str, TraceReader] = {"azure": read_azure, "mooncake": read_mooncake, "burstgpt": read_burstgpt}
CHUNK = 4096


class ReplayRow(NamedTuple):
    arrival_s: float
    input_tokens: int
    output_tokens: int
    hash_ids: tuple[int, ...]  # Mooncake: the prompt's prefix identity (workloads.base.prefix_units)


def _rows(spec: TraceArrivals) -> Iterator[TraceRow]:
    if spec.format == "burstgpt" and spec.trace_model is not None:
        return read_burstgpt(spec.path, spec.trace_model)
    return READERS[spec.format](spec.path)


def _windowed(spec: TraceArrivals, duration_s: float, stats: TraceStats) -> Iterator[tuple[float, TraceRow]]:
    """(arrival_s, row) for the rows of the window that fall inside the run."""
    end = spec.start_s + spec.window_s if spec.window_s is not None else math.inf
    first: float | None = None
    for row in _rows(spec):
        stats.rows_read += 1
        if row.t_s < spec.start_s:
            continue
        if row.t_s >= end:
            stats.ended = "window"
            return
        if first is None:
            first = row.t_s
        arrival = (row.t_s - first) / spec.time_scale
        if arrival >= duration_s:
            stats.ended = "duration"
            return
        stats.rows_in_window += 1
        yield arrival, row
    stats.ended = "eof"


def native_rate(spec: TraceArrivals, duration_s: float) -> tuple[int, float]:
    """(rows replayed, span in seconds) of the window, by one counting pass over the file.

    The span is the run's duration, cut to the window length (after time_scale)
    and, when the file ends first, to the last row's arrival.
    """
    probe = TraceStats(path=spec.path)
    n, last = 0, 0.0
    for arrival, _row in _windowed(spec, duration_s, probe):
        n, last = n + 1, arrival
    span = duration_s
    if spec.window_s is not None:
        span = min(span, spec.window_s / spec.time_scale)
    if probe.ended == "eof" and last > 0:
        span = min(span, last)
    return n, span


def _clip(n_in: int, n_out: int, max_len: int | None) -> tuple[int, int, bool]:
    if max_len is None or n_in + n_out <= max_len:
        return n_in, n_out, False
    n_in = min(n_in, max_len - 1)
    return n_in, max(1, min(n_out, max_len - n_in)), True


def _uniforms(rng: np.random.Generator) -> Iterator[float]:
    while True:
        yield from rng.random(CHUNK).tolist()


def replay(
    spec: TraceArrivals, duration_s: float, rng: np.random.Generator, stats: TraceStats
) -> Iterator[ReplayRow]:
    """The trace's requests in arrival order, rescaled and clipped as ``spec`` asks."""
    factor, gap = 1.0, 0.0
    if spec.target_rps is not None:
        n, span = native_rate(spec, duration_s)
        if n > 0 and span > 0:
            stats.native_rps = n / span
            factor, gap = spec.target_rps / stats.native_rps, 1.0 / stats.native_rps
    stats.rate_factor = factor
    u = _uniforms(rng)
    pending: list[tuple[float, int, ReplayRow]] = []  # heap of copies waiting for their turn
    seq = 0
    for arrival, row in _windowed(spec, duration_s, stats):
        while pending and pending[0][0] <= arrival:
            stats.emitted += 1
            yield heapq.heappop(pending)[2]
        copies = 1
        if factor != 1.0:
            copies = math.floor(factor) + (1 if next(u) < factor - math.floor(factor) else 0)
            if copies == 0:
                stats.thinned += 1
                continue
        n_in, n_out, clipped = _clip(row.input_tokens, row.output_tokens, spec.max_model_len)
        zero = n_out == 0
        n_in, n_out = max(n_in, 1), max(n_out, 1)
        for c in range(copies):
            t = arrival if c == 0 else arrival + next(u) * gap
            if t >= duration_s:
                continue
            stats.duplicated += c > 0
            stats.clipped += clipped
            stats.zero_output += zero
            heapq.heappush(pending, (t, seq, ReplayRow(t, n_in, n_out, row.hash_ids)))
            seq += 1
    while pending:
        stats.emitted += 1
        yield heapq.heappop(pending)[2]
    if stats.rows_in_window == 0:
        raise UserError(f"no row of the trace falls in the replay window (start_s {spec.start_s:g}, window_s "
                        f"{spec.window_s}) and the run; {stats.rows_read} rows read", where=spec.path,
                        expected="a trace with rows in the window (a run of 0 requests measures nothing)")


def check_trace(spec: TraceArrivals) -> int:
    """Read the whole trace file (streaming) and return its row count; the first bad row is a UserError."""
    rows = sum(1 for _ in _rows(spec))
    if rows == 0:
        only = f" for trace_model {spec.trace_model!r}" if spec.trace_model is not None else ""
        raise UserError(f"the trace has no rows{only}", where=spec.path, expected="at least one request row")
    return rows
