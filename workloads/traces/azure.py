"""Azure LLM inference trace (Azure/AzurePublicDataset), 2023 and 2024 releases.

Columns ``TIMESTAMP, ContextTokens, GeneratedTokens`` in both. The releases
write TIMESTAMP differently:

- 2023 (Splitwise, ISCA 2024): naive, 7 fractional digits —
  ``2023-11-16 18:17:03.9799600``;
- 2024 (DynamoLLM, HPCA 2025): a UTC offset and 6 digits —
  ``2024-05-10 00:00:00.009930+00:00``, with the fraction left out when it is
  zero (``2024-05-10 00:00:01+00:00``).

One parser reads both: date, ``HH:MM:SS``, an optional fraction of 1-9 digits,
an optional ``Z`` / ``+HH:MM`` / ``-HHMM`` offset (a naive time is read as
UTC). Times are kept as integer nanoseconds so that differences are exact:
``04.0319600 - 03.9799600`` is 52,000,000 ns = 0.052 s, not 0.05199999.
``datetime.fromisoformat`` would be slower and stops at microseconds.
"""
from __future__ import annotations

import csv
import re
from collections.abc import Iterator
from datetime import date

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

COLUMNS = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")
_NS = 1_000_000_000


_REST = re.compile(r"(?:\.(\d{1,9}))?(?:([Zz])|([+-])(\d\d):?(\d\d))?")


class _Clock:
    """Parses timestamps to integer ns since 1970, caching the minute of the last row.

    Consecutive rows nearly always share their date, hour and minute, so only
    the seconds, the fraction and the offset are parsed per row.
    """

    def __init__(self) -> None:
        self._minute: str = ""
        self._minute_ns: int = 0

    def ns(self, raw: str) -> int:
        s = raw.strip()
        if len(s) < 19 or s[16] != ":":
            raise ValueError(s)
        minute = s[:16]
        if minute != self._minute:
            if minute[10] not in " T" or minute[13] != ":":
                raise ValueError(s)
            h, m = int(minute[11:13]), int(minute[14:16])
            if h > 23 or m > 59:
                raise ValueError(s)
            day = date.fromisoformat(minute[:10]).toordinal() - 719163  # 719163: 1970-01-01
            self._minute_ns = ((day * 24 + h) * 60 + m) * 60 * _NS
            self._minute = minute
        sec = s[17:19]
        if not sec.isdigit() or int(sec) > 60:
            raise ValueError(s)
        match = _REST.fullmatch(s, 19)
        if match is None:
            raise ValueError(s)
        frac, _z, sign, oh, om = match.groups()
        ns = self._minute_ns + int(sec) * _NS
        if frac:
            ns += int(frac) * 10 ** (9 - len(frac))
        if sign:
            ns -= (int(oh) * 3600 + int(om) * 60) * _NS * (1 if sign == "+" else -1)
        return ns


def parse_timestamp_ns(raw: str) -> int:
    """Nanoseconds since 1970-01-01 UTC for one Azure TIMESTAMP (raises ValueError)."""
    return _Clock().ns(raw)


def read_azure(path: str) -> Iterator[TraceRow]:
    """Stream an Azure trace CSV; times are seconds since its first row."""
    p = open_trace(path)
    clock = _Clock()
    with p.open("rb") as fh:
        reader = csv.reader(utf8_lines(path, fh))
        idx = header_index(path, next_row(path, reader), COLUMNS)
        i_ts, i_in, i_out = idx["TIMESTAMP"], idx["ContextTokens"], idx["GeneratedTokens"]
        first: int | None = None
        previous = 0.0
        for line, row in csv_rows(path, reader, idx):
            try:
                ns = clock.ns(row[i_ts])
            except ValueError:
                raise bad(
                    path, line, "TIMESTAMP", f"cannot parse {row[i_ts]!r}",
                    "YYYY-MM-DD HH:MM:SS[.fraction][+HH:MM]",
                ) from None
            if first is None:
                first = ns
            t = (ns - first) / _NS
            check_order(path, line, "TIMESTAMP", t, previous)
            previous = t
            yield TraceRow(
                t, tokens(path, line, "ContextTokens", row[i_in]), tokens(path, line, "GeneratedTokens", row[i_out]),
                line,
            )
