"""What every trace reader yields, what replay reports, and the shared parsing checks.

A reader streams a trace file row by row (never the whole file) and yields
``TraceRow``s whose time is seconds since the file's first row. Anything
wrong with the file — a missing column, an unparsable timestamp, a negative
token count, time running backwards — is a ``UserError`` naming the file, the
line number and the column, so the user can open the file at that spot.
Files are read as bytes and decoded line by line (``utf8_lines``), so bytes
that are not UTF-8 and a line longer than any trace row (a binary file, a
file with no newlines) are such errors too, not a crash or a memory blow-up;
token counts above ``MAX_TOKENS`` are refused like negative ones.
"""
from __future__ import annotations

import csv
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, NamedTuple, Protocol

from scalearena.contracts.errors import UserError
from scalearena.contracts.limits import MAX_TOKENS

MAX_LINE_BYTES = 1024 * 1024  # no trace row comes near this; a longer "line" is not a trace


class TraceRow(NamedTuple):
    t_s: float  # seconds since the first row of the file
    input_tokens: int
    output_tokens: int
    line: int  # 1-based line number in the file (for error messages)
    hash_ids: tuple[int, ...] = ()  # Mooncake prompt block hashes


class TraceReader(Protocol):
    def __call__(self, path: str) -> Iterator[TraceRow]: ...


@dataclass
class TraceStats:
    """Counts from replaying one trace; filled in while the request stream is read.

    ``clipped`` is what the run reports as requests clipped to max_model_len.
    """

    path: str
    rows_read: int = 0  # rows parsed (reading stops at the end of the window / run)
    rows_in_window: int = 0  # rows whose time falls in the window and the run
    thinned: int = 0  # rows dropped to reach target_rps
    duplicated: int = 0  # extra copies added to reach target_rps
    clipped: int = 0  # requests sent with input+output cut to max_model_len
    zero_output: int = 0  # requests whose row had 0 output tokens (failed in BurstGPT), sent with 1
    emitted: int = 0  # requests produced
    native_rps: float | None = None  # the window's own mean rate (after time_scale), when target_rps is set
    rate_factor: float = 1.0  # target_rps / native_rps (1: no rescaling)
    ended: str = ""  # why reading stopped: "window", "duration" (the run's end) or "eof"


def open_trace(path: str) -> Path:
    p = Path(path)
    if not p.is_file():
        raise UserError("trace file not found", where=path, expected="a readable trace file")
    return p


def bad(path: str, line: int, column: str, problem: str, expected: str | None = None) -> UserError:
    return UserError(f"column {column!r}: {problem}", where=f"{path}:{line}", expected=expected)


def utf8_lines(path: str, fh: IO[bytes]) -> Iterator[str]:
    """The lines of a binary file handle as text; bad bytes or an overlong line name line and byte column."""
    number = 0
    while True:
        raw = fh.readline(MAX_LINE_BYTES + 1)
        if not raw:
            return
        number += 1
        if len(raw) > MAX_LINE_BYTES:
            raise UserError(f"line longer than {MAX_LINE_BYTES:,} bytes", where=f"{path}:{number}",
                            expected="a text trace, one row per line")
        try:
            yield raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise UserError(f"not UTF-8: byte 0x{raw[e.start]:02x} at column {e.start + 1}",
                            where=f"{path}:{number}:{e.start + 1}", expected="UTF-8 text") from None


def tokens(path: str, line: int, column: str, raw: str) -> int:
    """A non-negative integer token count (``"12"`` or ``"12.0"``)."""
    try:
        whole = int(raw)  # the common case, without the float round trip
        if whole >= 0:
            return _bounded(path, line, column, whole)
    except (TypeError, ValueError):
        pass
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise bad(path, line, column, f"{raw!r} is not a token count", "a non-negative integer") from None
    if value != value or value in (float("inf"), float("-inf")) or value != int(value):
        raise bad(path, line, column, f"{raw!r} is not a token count", "a non-negative integer")
    if value < 0:
        raise bad(path, line, column, f"negative token count {raw}", "a non-negative integer")
    return _bounded(path, line, column, int(value))


def _bounded(path: str, line: int, column: str, n: int) -> int:
    if n > MAX_TOKENS:
        raise bad(path, line, column, f"{n} tokens exceeds the limit of {MAX_TOKENS}", f"at most {MAX_TOKENS}")
    return n


def check_order(path: str, line: int, column: str, t: float, previous: float) -> None:
    if t < previous:
        raise bad(
            path, line, column, f"time goes backwards ({t:.6f} s after {previous:.6f} s since the first row)",
            "rows sorted by time",
        )


def header_index(path: str, header: list[str] | None, needed: tuple[str, ...]) -> dict[str, int]:
    """Column positions for ``needed``; a missing one names line 1 and the column."""
    names = [h.strip().lstrip("\ufeff") for h in header or []]
    for col in needed:
        if col not in names:
            raise bad(path, 1, col, f"missing from the header (have {names})", f"columns {list(needed)}")
    return {col: names.index(col) for col in needed}


def next_row(path: str, reader: Any) -> list[str] | None:
    """The next row of a CSV reader (None at the end); what the csv module refuses (a carriage return, NUL or
    quote out of place) is a UserError naming the line, not csv.Error (an internal error, issue 31's fuzz)."""
    try:
        return next(reader, None)  # type: ignore[no-any-return]
    except csv.Error as e:
        raise UserError(f"not a CSV row: {e}", where=f"{path}:{reader.line_num}",
                        expected="comma-separated values, one row per line") from None


def csv_rows(path: str, reader: Any, idx: dict[str, int]) -> Iterator[tuple[int, list[str]]]:
    """(line number, row) of a CSV trace body: blank lines skipped, short rows an error naming the column."""
    need = max(idx.values())
    while (row := next_row(path, reader)) is not None:
        if not row:
            continue
        line = reader.line_num
        if len(row) <= need:
            missing = next(c for c, i in idx.items() if i >= len(row))
            raise bad(path, line, missing, "value missing (row too short)")
        yield line, row
