"""A results table streamed to one parquet file in row groups, in memory bounded by one row group.

A day-long replay at 100 requests per second writes 8.6 M request records; holding them until
the end cost about 2.8 KB each (20+ GiB), so ``RunWriter`` hands every record to a
``ParquetStream`` instead. Rows are buffered up to ``row_group_rows`` and then written as one
row group to a hidden spool file next to the target (``.requests.parquet.spool-XXXX``) with
pyarrow's ``ParquetWriter``; memory holds one row group, whatever the run length.

A run killed before it could clean up (SIGKILL, an abort) leaves its spool behind; the next stream
of the same file in that folder removes it.

A parquet file is readable only once its footer is written, so ``publish()`` is what makes
``path`` a complete file: it closes the spool and renames it onto ``path`` (first publish), or
writes the rows already published followed by the spool's into a temp file and renames that
(``os.replace``: a reader never sees half a file, an interrupted run keeps what was published).
A publish after the first one therefore copies the file (row group by row group, memory still
bounded); ``RunWriter`` spaces its checkpoints by their cost so that copying stays a small share
of a run. A run that publishes only at its end (every simulated run shorter than the checkpoint
interval) writes each row once and never copies.

Written by hand because pyarrow has no appendable single-file parquet writer and the results
layout (docs/architecture.md, "Results folder") is one file per table, which every reader (reports/load.py, pandas) expects.
"""
from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

ROW_GROUP_ROWS = 32_768  # rows per row group: ~1 MB of parquet, ~15 MB of buffered records at most


def _dictionary_columns(schema: pa.Schema) -> list[str]:
    """Columns worth dictionary encoding: the strings (model, status, variant, pod: a few values each).
    Numbers are nearly all distinct; encoding them as dictionaries first cost a third of the write
    (paper run's requests: 3.5 -> 2.3 ms, and a 9 % smaller file); the values read back are the same."""
    return [f.name for f in schema if pa.types.is_large_string(f.type) or pa.types.is_string(f.type)]


def rows_table(rows: Sequence[tuple[Any, ...]], schema: pa.Schema) -> pa.Table:
    """Rows (tuples in the schema's column order) as an Arrow table: converted as one struct array, each
    tuple a struct by position (a quarter less CPU than transposing them and converting column by column:
    2.5 -> 1.9 ms for the paper run's 6,024 requests; the same table)."""
    try:
        return pa.Table.from_struct_array(pa.array(rows, type=pa.struct(list(schema))))
    except pa.ArrowInvalid as e:
        raise ValueError(f"rows must hold {len(schema)} values, one per column {schema.names}: {e}") from None


class ParquetStream:
    """One table of a run (requests.parquet or timeseries.parquet), streamed as rows come."""

    def __init__(self, path: Path, schema: pa.Schema, row_group_rows: int = ROW_GROUP_ROWS) -> None:
        self.path = Path(path)
        self.schema = schema
        self.row_group_rows = row_group_rows
        self._flushed_rows = 0  # rows written to the spool or published so far
        self.published_rows = -1  # rows in ``path`` as last published (-1: never published)
        self._buf: list[tuple[Any, ...]] = []
        self._spool: Path | None = None
        self._writer: pq.ParquetWriter | None = None
        self._on_flush: list[Callable[[pa.Table], None]] = []
        self._groups_published = 0  # row groups in ``path`` as last published
        self._groups_spooled = 0  # row groups in the spool since
        self._first: pa.Table | None = None  # the first row group, kept while it is the only one written
        for stale in self.path.parent.glob(f".{self.path.name}.spool-*"):  # left by a run killed in this folder
            stale.unlink(missing_ok=True)

    def on_flush(self, fn: Callable[[pa.Table], None]) -> None:
        """Call ``fn`` with every row group as it is written (for running tallies of the rows)."""
        self._on_flush.append(fn)

    @property
    def rows(self) -> int:
        """Rows added so far."""
        return self._flushed_rows + len(self._buf)

    def add(self, row: tuple[Any, ...]) -> None:
        """One row: its values in the schema's column order (the simulator's call per request: kept to
        an append and a length test)."""
        buf = self._buf
        buf.append(row)
        if len(buf) >= self.row_group_rows:
            self.flush()

    def flush(self) -> None:
        """Write the buffered rows as one row group of the spool file."""
        if not self._buf:
            return
        table = rows_table(self._buf, self.schema)
        self._flushed_rows += table.num_rows
        self._buf = []
        if self._writer is None:
            fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.spool-", dir=self.path.parent)
            os.close(fd)
            self._spool = Path(tmp)
            self._writer = pq.ParquetWriter(tmp, self.schema, use_dictionary=_dictionary_columns(self.schema))
        self._writer.write_table(table, row_group_size=max(1, table.num_rows))
        self._groups_spooled += 1
        self._first = table if self._groups_published + self._groups_spooled == 1 else None
        for fn in self._on_flush:
            fn(table)

    def publish(self) -> bool:
        """Make ``path`` hold every row added so far (atomically); False when it already did."""
        self.flush()
        if self.published_rows == self.rows:
            return False
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        spool, self._spool = self._spool, None
        if spool is None:  # nothing spooled: an empty table (the first publish of a run without rows)
            _atomic(self.path, lambda tmp: pq.write_table(self.schema.empty_table(), tmp))
        elif self.published_rows <= 0:
            os.chmod(spool, 0o644)  # mkstemp creates 0600; results are meant to be shared
            os.replace(spool, self.path)
            self._groups_published = self._groups_spooled
        else:
            _atomic(self.path, lambda tmp: _concatenate([self.path, spool], tmp, self.schema))
            spool.unlink()
            self._groups_published += self._groups_spooled
        self._groups_spooled = 0
        self.published_rows = self.rows
        return True

    def published_table(self) -> pa.Table | None:
        """The rows of ``path`` as published, in memory, when the file is the one row group this stream
        wrote and kept (every run up to ``row_group_rows`` rows): a reader need not read back the file
        just written. None otherwise (read the file)."""
        if self.rows > 0 and self.published_rows == self.rows and self._groups_published == 1:
            return self._first
        return None

    def discard(self) -> None:
        """Drop the spool file (a writer closed without publishing)."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        if self._spool is not None:
            self._spool.unlink(missing_ok=True)
            self._spool = None


def _concatenate(parts: list[Path], out: str, schema: pa.Schema) -> None:
    """Row groups of ``parts`` in order into one parquet file (one row group in memory at a time)."""
    with pq.ParquetWriter(out, schema, use_dictionary=_dictionary_columns(schema)) as w:
        for part in parts:
            pf = pq.ParquetFile(part)
            for i in range(pf.num_row_groups):
                t = pf.read_row_group(i)
                w.write_table(t, row_group_size=max(1, t.num_rows))


def _atomic(path: Path, write: Callable[[str], None]) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
