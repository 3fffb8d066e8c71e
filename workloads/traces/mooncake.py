"""Mooncake trace (kvcache-ai/Mooncake, FAST'25 release): one JSON object per line.

``{"timestamp": 27482, "input_length": 6955, "output_length": 52,
"hash_ids": [46, 47, ...]}`` — timestamp in milliseconds, one hash id per
512-token block of the prompt; requests that share a leading hash id share
that prompt prefix. The hash ids pass through to ``RequestSpec.hash_ids`` and
the first one becomes the request's prefix group, so the router's prefix
affinity works on a Mooncake replay without further configuration.
"""
from __future__ import annotations

import json
import math
from collections.abc import Iterator

from scalearena.workloads.traces.base import TraceRow, bad, check_order, open_trace, tokens, utf8_lines

FIELDS = ("timestamp", "input_length", "output_length")


def read_mooncake(path: str) -> Iterator[TraceRow]:
    """Stream a Mooncake JSONL trace; times are seconds since its first row."""
    p = open_trace(path)
    first: float | None = None
    previous = 0.0
    with p.open("rb") as fh:
        for line, text in enumerate(utf8_lines(path, fh), start=1):
            if not text.strip():
                continue
            try:
                obj = json.loads(text)
            except json.JSONDecodeError as e:
                raise bad(path, line, "(json)", f"not valid JSON: {e.msg} at char {e.pos}") from None
            except (ValueError, RecursionError) as e:  # a 5000-digit integer, nesting past the stack
                raise bad(path, line, "(json)", f"unreadable JSON value: {type(e).__name__}") from None
            if not isinstance(obj, dict):
                raise bad(path, line, "(json)", "not a JSON object")
            for f in FIELDS:
                if f not in obj:
                    raise bad(path, line, f, "missing", f"fields {list(FIELDS)}")
            ms = obj["timestamp"]
            if isinstance(ms, bool) or not isinstance(ms, int | float) or not math.isfinite(ms):
                raise bad(path, line, "timestamp", f"cannot parse {ms!r}", "milliseconds as a number")
            if first is None:
                first = float(ms)
            t = (ms - first) / 1000.0
            check_order(path, line, "timestamp", t, previous)
            previous = t
            hashes = obj.get("hash_ids", [])
            if not isinstance(hashes, list) or not all(isinstance(h, int) and not isinstance(h, bool) for h in hashes):
                raise bad(path, line, "hash_ids", "not a list of integers")
            yield TraceRow(
                t,
                tokens(path, line, "input_length", str(obj["input_length"])),
                tokens(path, line, "output_length", str(obj["output_length"])),
                line,
                tuple(hashes),
            )
