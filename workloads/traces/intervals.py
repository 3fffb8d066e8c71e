"""A trace's history as per-interval load: request count and mean prompt / output lengths.

What a forecasting autoscaler warm-starts from (Dynamo's ``load_predictor_warmup_trace``: requests
grouped into adjustment intervals, their count, mean ISL and mean OSL each). The rows come from the
same streaming readers the replay uses (``READERS``), so a bad file is the same one-line error
naming the file, the line and the column. Time is the replay's: ``(t - t_first) / time_scale``
within the window ``[start_s, start_s + window_s)`` of trace time, t_first the window's first row.

Interval k covers ``[k x interval_s, (k + 1) x interval_s)``; every interval from the first row's to
the last complete one is reported, empty ones with 0 requests and no lengths. The last interval is
dropped when the trace (or the window) ends inside it: a part-filled interval would read as a fall
in load. Memory holds one counter triple per interval, not the rows.
"""
from __future__ import annotations

import math
from typing import NamedTuple

from scalearena.contracts.errors import UserError
from scalearena.workloads.traces.burstgpt import read_burstgpt
from scalearena.workloads.traces.replay import READERS


class IntervalLoad(NamedTuple):
    requests: int  # requests arriving in the interval
    isl: float | None  # their mean prompt tokens (None: no request)
    osl: float | None  # their mean output tokens


def interval_history(path: str, fmt: str, interval_s: float, *, time_scale: float = 1.0, start_s: float = 0.0,
                     window_s: float | None = None, trace_model: str | None = None) -> list[IntervalLoad]:
    """The trace's per-interval load (module docstring); a trace shorter than one interval is an error."""
    if fmt not in READERS:
        raise UserError(f"unknown trace format {fmt!r}", where=path, expected=" | ".join(sorted(READERS)))
    rows = read_burstgpt(path, trace_model) if fmt == "burstgpt" and trace_model else READERS[fmt](path)
    end = start_s + window_s if window_s is not None else math.inf
    counts: list[list[float]] = []  # per interval: requests, prompt tokens, output tokens
    first: float | None = None
    last_t = 0.0
    for row in rows:
        if row.t_s < start_s:
            continue
        if row.t_s >= end:
            break
        first = row.t_s if first is None else first
        last_t = (row.t_s - first) / time_scale
        k = int(last_t // interval_s)
        while len(counts) <= k:
            counts.append([0, 0, 0])
        c = counts[k]
        c[0] += 1
        c[1] += row.input_tokens
        c[2] += row.output_tokens
    if first is None:
        span = 0.0
    else:
        span = (end - first) / time_scale if window_s is not None else last_t
    complete = min(len(counts), int(span // interval_s + 1e-9))
    if first is None or complete == 0:
        raise UserError(f"the trace spans {span:.1f} s (after time_scale {time_scale:g}), less than one interval "
                        f"of {interval_s:g} s", where=path, expected="a trace covering at least one interval")
    return [IntervalLoad(int(n), (i / n) if n else None, (o / n) if n else None) for n, i, o in counts[:complete]]


__all__ = ["IntervalLoad", "interval_history"]
