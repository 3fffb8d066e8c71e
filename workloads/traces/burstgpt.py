"""BurstGPT trace (HPMLL/BurstGPT): GPT-3.5 / GPT-4 requests served on Azure.

Columns ``Timestamp, Model, Request tokens, Response tokens, Total tokens,
Log Type``; Timestamp is seconds since the start of the collection (integers
in the v1 release). Newer files add ``Session ID`` and ``Elapsed time``; only
the columns used here are required. Rows with ``Response tokens == 0`` are
failed requests in the original service: they are replayed (they were
offered load) with one output token and counted as ``zero_output``.

``model`` narrows the replay to one of the trace's models (``ChatGPT`` or
``GPT-4``), e.g. to give each logical model of a scenario its own stream.
"""
from __future__ import annotations

import csv
from collections.abc import Iterator

from scalearena.workloads.traces.base import (
    TraceRow,
    bad,
    check_order,
    csv_rows,
    header_index,
    next_row,
    open_trace,
    tokens,
    utf8_lines,
)

COLUMNS = ("Timestamp", "Request tokens", "Response tokens")


def read_burstgpt(path: str, model: str | None = None) -> Iterator[TraceRow]:
    """Stream a BurstGPT CSV; times are seconds since its first row."""
    p = open_trace(path)
    with p.open("rb") as fh:
        reader = csv.reader(utf8_lines(path, fh))
        header = next_row(path, reader)
        needed = COLUMNS + (("Model",) if model is not None else ())
        idx = header_index(path, header, needed)
        i_ts, i_in, i_out = idx["Timestamp"], idx["Request tokens"], idx["Response tokens"]
        i_model = idx.get("Model")
        first: float | None = None
        previous = 0.0
        for line, row in csv_rows(path, reader, idx):
            try:
                ts = float(row[i_ts])
                if ts != ts or ts in (float("inf"), float("-inf")):
                    raise ValueError
            except ValueError:
                raise bad(path, line, "Timestamp", f"cannot parse {row[i_ts]!r}", "seconds as a number") from None
            if first is None:
                first = ts
            t = ts - first
            check_order(path, line, "Timestamp", t, previous)
            previous = t
            n_in = tokens(path, line, "Request tokens", row[i_in])
            n_out = tokens(path, line, "Response tokens", row[i_out])
            if i_model is not None and row[i_model].strip() != model:
                continue
            yield TraceRow(t, n_in, n_out, line)
