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
from collections.abc import Iterator
from datetime import date

from .base import TraceRow, bad, check_order, header_index, open_trace, tokens

COLUMNS = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")
_NS = 1_000_000_000


class _Clock:
    """Parses timestamps to integer ns since 1970, caching the day of the last date seen."""

    def __init__(self) -> None:
        self._day: str = ""
        self._day_ns: int = 0

    def ns(self, raw: str) -> int:
        s = raw.strip()
        if len(s) < 19 or s[10] not in " T" or s[13] != ":" or s[16] != ":":
            raise ValueError(s)
        day = s[:10]
        if day != self._day:
            self._day_ns = (date.fromisoformat(day).toordinal() - 719163) * 86400 * _NS  # 719163: 1970-01-01
            self._day = day
        h, m, sec = int(s[11:13]), int(s[14:16]), int(s[17:19])
        if h > 23 or m > 59 or sec > 60:
            raise ValueError(s)
        rest = s[19:]
        frac_ns = 0
        if rest.startswith("."):
            end = 1
            while end < len(rest) and rest[end].isdigit():
                end += 1
            digits = rest[1:end]
            if not digits or len(digits) > 9:
                raise ValueError(s)
            frac_ns = int(digits.ljust(9, "0"))
            rest = rest[end:]
        offset_s = 0
        if rest in ("", "Z", "z"):
            pass
        elif rest[0] in "+-":
            hhmm = rest[1:].replace(":", "")
            if len(hhmm) != 4 or not hhmm.isdigit():
                raise ValueError(s)
            offset_s = (int(hhmm[:2]) * 3600 + int(hhmm[2:]) * 60) * (1 if rest[0] == "+" else -1)
        else:
            raise ValueError(s)
        return self._day_ns + (h * 3600 + m * 60 + sec - offset_s) * _NS + frac_ns


def parse_timestamp_ns(raw: str) -> int:
    """Nanoseconds since 1970-01-01 UTC for one Azure TIMESTAMP (raises ValueError)."""
    return _Clock().ns(raw)


def read_azure(path: str) -> Iterator[TraceRow]:
    """Stream an Azure trace CSV; times are seconds since its first row."""
    p = open_trace(path)
    clock = _Clock()
    with p.open(newline="") as fh:
        reader = csv.reader(fh)
        idx = header_index(path, next(reader, None), COLUMNS)
        i_ts, i_in, i_out = idx["TIMESTAMP"], idx["ContextTokens"], idx["GeneratedTokens"]
        need = max(i_ts, i_in, i_out)
        first: int | None = None
        previous = 0.0
        for row in reader:
            if not row:
                continue
            line = reader.line_num
            if len(row) <= need:
                missing = next(c for c, i in idx.items() if i >= len(row))
                raise bad(path, line, missing, "value missing (row too short)")
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
