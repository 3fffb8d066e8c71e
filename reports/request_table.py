"""The request records a summary reads: an in-memory frame, or requests.parquet read column by column.

``reports.metrics.summarize`` needs per-status counts and a few columns, one at a time (TTFT and
ITL of the requests that finished ok, token counts of all of them, ...). A day-long run has 8.6 M
records, far too many to hold as one DataFrame with every column (the old writer held them as
objects, ~2.8 KB each), but one float column of them is 69 MB. So the summary asks a
``RequestTable`` for just the column it is about to use, as a numpy array (a DataFrame per ask cost
~0.15 ms, a fifth of a paper run's summary): ``FrameRequests`` answers from a
DataFrame (tests, the report), ``ParquetRequests`` reads them from the run's requests.parquet
(``RunWriter``'s second pass at a checkpoint and at the end). Both return the same values in
the same (file) order, so the summary's exact percentiles and means are the same numbers as
before, bit for bit (tests/unit/reports/test_results_stream.py checks both paths against each other).
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from scalearena.contracts.records import REQUEST_COLUMNS


class RequestTable(Protocol):
    """What a summary reads of a run's requests."""

    @property
    def rows(self) -> int:
        """Requests in the run."""
        ...

    def status_counts(self) -> dict[str, int]:
        """Requests per ``status`` value."""
        ...

    def column(self, name: str, ok_only: bool = False) -> np.ndarray:
        """A number column, of every request or only of those with status ``ok``, in record order: int64
        while it has no null, else float64 with NaN for null (what ``to_pandas`` gives)."""
        ...

    def ok_mask(self) -> np.ndarray:
        """One bool per request, in record order: status ``ok``."""
        ...

    def mask(self, names: list[str], test: Callable[..., np.ndarray]) -> np.ndarray:
        """One bool per request, in record order: ``test`` (elementwise) of these columns, one array each."""
        ...


def _numbers(values: pd.Series) -> np.ndarray:
    """A frame column as ``RequestTable.column`` gives it (non-numbers: NaN, as ``pd.to_numeric`` coerces)."""
    if not (isinstance(values.dtype, np.dtype) and values.dtype.kind in "iuf"):
        values = pd.to_numeric(values, errors="coerce")
    out = values.to_numpy()
    return out if out.dtype.kind in "iuf" else out.astype(float)  # an empty object column: no numbers


class FrameRequests:
    """A ``RequestTable`` over a DataFrame of request records (missing columns read as nulls)."""

    def __init__(self, df: pd.DataFrame | None) -> None:
        if df is None:
            df = pd.DataFrame(columns=list(REQUEST_COLUMNS))
        missing = [c for c in REQUEST_COLUMNS if c not in df.columns]
        self.df = df.assign(**{c: None for c in missing}) if missing else df
        self._ok: np.ndarray | None = None

    def ok_mask(self) -> np.ndarray:
        if self._ok is None:
            self._ok = (self.df["status"] == "ok").to_numpy(dtype=bool)
        return self._ok

    def mask(self, names: list[str], test: Callable[..., np.ndarray]) -> np.ndarray:
        return np.asarray(test(*(self.column(n) for n in names)), dtype=bool)

    @property
    def rows(self) -> int:
        return len(self.df)

    def status_counts(self) -> dict[str, int]:
        return {str(k): int(v) for k, v in self.df["status"].value_counts().items()}

    def column(self, name: str, ok_only: bool = False) -> np.ndarray:
        values = self.df[name]
        return _numbers(values[self.ok_mask()] if ok_only else values)


class ParquetRequests:
    """A ``RequestTable`` reading requests.parquet one row group at a time.

    Memory: the column asked for (8 B per value, of the selected rows, filled in place) plus one
    row group, and the ok mask (1 B per request); the status column is never held whole (a
    day-long run's is ~100 MB of strings)."""

    def __init__(self, path: Path, table: pa.Table | None = None, status_counts: dict[str, int] | None = None) -> None:
        """``table``: the file's one row group, already in memory (``ParquetStream.published_table``);
        ``status_counts``: the file's requests per status, already counted (``RunTally.status``)."""
        self.path = path
        self._ok: np.ndarray | None = None
        self._ok_arrow: pa.Array | None = None
        self._file: pq.ParquetFile | None = None
        self._status_counts = dict(status_counts) if status_counts is not None else None
        # a file of one row group (up to 32,768 requests: every run of the shipped suites) is read once,
        # whole, and answered from memory: the summary asks for columns ~9 times, and each read of the
        # file cost as much as the rest of the summary (paper suite: 46 x 9 reads, ~0.6 s of CPU)
        self._only: pa.Table | None = table
        if table is None and self.file.num_row_groups == 1:
            self._only = self.file.read_row_group(0)
        self._cache: dict[tuple[str, bool], np.ndarray] = {}  # columns of ``_only`` already converted

    @property
    def file(self) -> pq.ParquetFile:
        if self._file is None:
            self._file = pq.ParquetFile(self.path)
        return self._file

    @property
    def rows(self) -> int:
        return self._only.num_rows if self._only is not None else int(self.file.metadata.num_rows)

    def status_counts(self) -> dict[str, int]:
        if self._status_counts is None:  # counted once: a summary asks twice
            out: dict[str, int] = {}
            for group in self._groups(["status"]):
                for v in pc.value_counts(group.column(0)).to_pylist():
                    if v["values"] is not None:
                        out[str(v["values"])] = out.get(str(v["values"]), 0) + int(v["counts"])
            self._status_counts = out
        return dict(self._status_counts)

    def _groups(self, names: list[str]):  # type: ignore[no-untyped-def]
        if self._only is not None:
            yield self._only.select(names)
            return
        for i in range(self.file.num_row_groups):
            yield self.file.read_row_group(i, columns=names)

    def ok_mask(self) -> np.ndarray:
        if self._ok is None:
            out = np.empty(self.rows, dtype=bool)
            at = 0
            for group in self._groups(["status"]):
                ok = pc.fill_null(pc.equal(group.column(0), "ok"), False).to_numpy(zero_copy_only=False)
                out[at:at + len(ok)] = ok
                at += len(ok)
            self._ok = out
        return self._ok

    def mask(self, names: list[str], test: Callable[..., np.ndarray]) -> np.ndarray:
        if self._only is not None:
            return np.asarray(test(*(self.column(n) for n in names)), dtype=bool)
        out = np.empty(self.rows, dtype=bool)
        at = 0
        for group in self._groups(names):  # one row group's columns at a time: memory, 1 B per request
            values = (group.column(i).to_numpy(zero_copy_only=False) for i in range(len(names)))
            out[at:at + group.num_rows] = np.asarray(test(*values), dtype=bool)
            at += group.num_rows
        return out

    def column(self, name: str, ok_only: bool = False) -> np.ndarray:
        if self._only is not None:  # converted once per (column, rows) and kept: a summary asks some twice
            key = (name, ok_only)
            if key not in self._cache:
                values = self._only.column(name)
                array = (values.filter(self._ok_filter()) if ok_only else values).to_numpy(zero_copy_only=False)
                array.flags.writeable = False  # shared by every caller
                self._cache[key] = array
            return self._cache[key]
        mask = self.ok_mask() if ok_only else None
        out: np.ndarray | None = None
        src = dst = 0  # rows read from the file / rows kept
        for group in self._groups([name]):
            rows = group.num_rows
            if mask is not None:
                group = group.filter(mask[src:src + rows])
            src += rows
            values = group.column(0).to_numpy(zero_copy_only=False)  # ints with nulls -> float, NaN
            if out is None:
                out = np.empty(int(mask.sum()) if mask is not None else self.rows, values.dtype)
            elif out.dtype != values.dtype:  # an int column meets a group with nulls: float, as to_pandas
                out = out.astype(np.result_type(out.dtype, values.dtype))
            out[dst:dst + group.num_rows] = values
            dst += group.num_rows
        return out if out is not None else np.empty(0)

    def _ok_filter(self) -> pa.Array:
        if self._ok_arrow is None:
            self._ok_arrow = pa.array(self.ok_mask())
        return self._ok_arrow


def as_table(req: pd.DataFrame | RequestTable | None) -> RequestTable:
    """A DataFrame (or nothing) wrapped as a ``RequestTable``; a table as it is."""
    if req is None or isinstance(req, pd.DataFrame):
        return FrameRequests(req)
    return req
