"""Results written as a run goes, atomically, in memory that does not grow with the run.

Layout (docs/architecture.md, "Results folder"): ``OUT/<scenario>/<autoscaler>[/rate-<r>]/`` holding
requests.parquet, timeseries.parquet, decisions.jsonl, pods.jsonl (each pod's
start-up phases) and summary.json.

Every file is replaced by write-to-temp + ``os.replace`` so a reader (or an
interrupted run) never sees half a file. Request and timeseries rows stream to
their parquet files in row groups as they come (``reports.parquet_stream``);
``checkpoint()`` publishes them with a provisional summary (``complete:
false``) at most every ``checkpoint_wall_s`` seconds of wall time; ``finish()``
writes the final summary with ``complete: true``; ``abort()`` keeps what was
measured, marked incomplete. decisions.jsonl is appended and flushed line by
line. The parquet column types are fixed here (``REQUEST_SCHEMA``,
``TIMESERIES_SCHEMA``: what pandas wrote for the same records before, so
readers see the same dtypes).
"""
from __future__ import annotations

import json
import os
import stat
import tempfile
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from operator import attrgetter
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from scalearena.contracts.errors import UserError
from scalearena.contracts.records import REQUEST_COLUMNS, TIMESERIES_COLUMNS, RequestRecord, TimeseriesRecord
from scalearena.controllers.base import Decision
from scalearena.reports.parquet_stream import ROW_GROUP_ROWS, ParquetStream
from scalearena.reports.request_table import ParquetRequests


def check_writable(path: Path) -> None:
    """``path`` is new or a regular file (or a link, which a rename replaces, not its target); else a
    UserError: a command checks its output paths with this before it does any work."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
        raise UserError("is not a regular file; refusing to replace it", where=str(path),
                        expected="a new path or a regular file to overwrite")


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``path`` whole or not at all (a temporary file renamed over it). Only a regular file or a new
    path is written: renaming over a device or a FIFO would replace it (``compare --html /dev/full`` as root
    replaced the device), so those are a UserError naming the path."""
    check_writable(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; results are meant to be shared
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def atomic_write_json(path: Path, obj: Any) -> None:
    atomic_write_bytes(path, (json.dumps(obj, indent=2, sort_keys=True, default=_json_default) + "\n").encode())


def _json_default(o: Any) -> Any:
    if hasattr(o, "item"):  # numpy scalars
        return o.item()
    if isinstance(o, set | frozenset | tuple):
        return list(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def _columns(records: Iterable[Any], names: tuple[str, ...]) -> dict[str, list[Any]]:
    """Column lists straight from the slots (dataclasses.asdict is ~10x slower on 10^5 rows)."""
    recs = records if isinstance(records, list) else list(records)
    return {n: [getattr(r, n) for r in recs] for n in names}


def requests_frame(records: Iterable[RequestRecord]) -> pd.DataFrame:
    df = pd.DataFrame(_columns(records, REQUEST_COLUMNS), columns=list(REQUEST_COLUMNS))
    for col in ("first_token_s", "ttft_ms", "itl_ms", "scheduled_s"):
        df[col] = df[col].astype("float64")
    return df


def timeseries_frame(records: Iterable[TimeseriesRecord]) -> pd.DataFrame:
    return pd.DataFrame(_columns(records, TIMESERIES_COLUMNS), columns=list(TIMESERIES_COLUMNS))


_ARROW_TYPES = {"int": pa.int64(), "float": pa.float64(), "str": pa.large_string(), "bool": pa.bool_()}


def arrow_schema(record: type) -> pa.Schema:
    """The parquet columns of a record dataclass, from its annotations (``X | None``: nullable X): the
    types pandas wrote for the same rows before (int64, double, large_string), fixed, so a column is
    typed the same whether or not a run fills it."""
    cols = []
    for f in fields(record):
        name = str(f.type).replace(" | None", "").strip()
        if name not in _ARROW_TYPES:
            raise TypeError(f"{record.__name__}.{f.name}: no parquet type for {f.type!r}")
        cols.append((f.name, _ARROW_TYPES[name]))
    return pa.schema(cols)


REQUEST_SCHEMA = arrow_schema(RequestRecord)
TIMESERIES_SCHEMA = arrow_schema(TimeseriesRecord)
_REQUEST_ROW = attrgetter(*REQUEST_COLUMNS)  # a record's values in column order, as one tuple
_TIMESERIES_ROW = attrgetter(*TIMESERIES_COLUMNS)
# A checkpoint re-reads the run's files; the next one waits at least this many times as long as it took.
CHECKPOINT_COST_FACTOR = 20.0
DECISIONS_FLUSH_S = 1.0  # decisions.jsonl is at most this far behind the run, in wall seconds


class RunWriter:
    """Streams one run's records to its folder and keeps the folder's files complete on disk.

    Request and timeseries rows go to ``ParquetStream``s (memory: one row group each, whatever
    the run length); decisions are appended to decisions.jsonl line by line and kept (one per
    controller period: thousands a day, not millions). ``checkpoint()`` publishes both parquet
    files and a provisional summary (``complete: false``) at most every ``checkpoint_wall_s``
    seconds of wall time, and no sooner than ``CHECKPOINT_COST_FACTOR`` times what the last one
    took (a checkpoint re-reads the files it summarizes, so its cost grows with the run: spacing
    them by their cost keeps them under ~5 % of a long run); ``finish()`` writes the final
    summary with ``complete: true``. The summary is a second pass over requests.parquet, a few
    columns at a time (``reports.request_table.ParquetRequests``)."""

    def __init__(self, run_dir: Path, meta: dict[str, Any], checkpoint_wall_s: float = 5.0,
                 row_group_rows: int = ROW_GROUP_ROWS) -> None:
        self.dir = Path(run_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.meta = dict(meta)  # scenario, autoscaler, cluster, seed, duration_s, slo, variants, ...
        self.decisions: list[dict[str, Any]] = []
        self.checkpoint_wall_s = checkpoint_wall_s
        self._checkpoint_gap_s = checkpoint_wall_s
        self._last_checkpoint = time.monotonic()
        self._rows_at_write = 0  # request + timeseries rows when summary.json was last written
        self._pods_f: Any = None
        for stale in ("summary.json", "requests.parquet", "timeseries.parquet", "pods.jsonl"):
            (self.dir / stale).unlink(missing_ok=True)
        self._requests = ParquetStream(self.dir / "requests.parquet", REQUEST_SCHEMA, row_group_rows)
        self._timeseries = ParquetStream(self.dir / "timeseries.parquet", TIMESERIES_SCHEMA, row_group_rows)
        self._tally = RunTally()
        self._requests.on_flush(self._tally.add_requests)
        self._timeseries.on_flush(self._tally.add_timeseries)
        self._decisions_f = open(self.dir / "decisions.jsonl", "w", encoding="utf-8")  # noqa: SIM115
        self._decisions_flushed = time.monotonic()
        self._decisions_pending = False
        # the simulator calls this once per request: straight to the stream, one Python call instead of two
        # (unless a subclass has its own add_request_row)
        if type(self).add_request_row is RunWriter.add_request_row:
            self.add_request_row = self._requests.add  # type: ignore[method-assign]

    @property
    def _dirty(self) -> bool:
        """Rows added since summary.json was last written."""
        return self._requests.rows + self._timeseries.rows != self._rows_at_write

    # -- collection -------------------------------------------------------------------------------
    def add_request(self, rec: RequestRecord) -> None:
        self._requests.add(_REQUEST_ROW(rec))

    def add_request_row(self, row: tuple[Any, ...]) -> None:
        """A request record as a tuple of its values in ``REQUEST_COLUMNS`` order (the simulator's
        hot path: no ``RequestRecord`` object; a row of the wrong length fails when it is written).
        Each writer replaces it with its stream's ``add`` (the same call, one Python frame fewer)."""
        self._requests.add(row)

    def add_requests(self, recs: Iterable[RequestRecord]) -> None:
        for rec in recs:
            self._requests.add(_REQUEST_ROW(rec))

    def add_timeseries(self, rec: TimeseriesRecord) -> None:
        self._timeseries.add(_TIMESERIES_ROW(rec))

    def add_decision(self, t_s: float, autoscaler: str, decision: Decision, loop: str = "main") -> None:
        row = {"t_s": round(t_s, 6), "autoscaler": autoscaler, "loop": loop, **decision.to_dict()}
        self.decisions.append(row)
        self._decisions_f.write(json.dumps(row, sort_keys=True, default=_json_default) + "\n")
        self._decisions_pending = True
        self._flush_decisions_if_due()

    def _flush_decisions_if_due(self) -> None:
        if self._decisions_pending and time.monotonic() - self._decisions_flushed >= DECISIONS_FLUSH_S:
            self._flush_decisions()

    def _flush_decisions(self) -> None:
        """decisions.jsonl on disk as the run goes: flushed at a decision or sample a second or more after
        the last flush, and with every checkpoint's files (each flush is a system call; a simulated run
        decides dozens of times in 0.1 s of wall time)."""
        if self._decisions_pending:
            self._decisions_f.flush()
            self._decisions_pending = False
        self._decisions_flushed = time.monotonic()

    def add_pod(self, row: dict[str, Any]) -> None:
        """One pod's start-up phases and end (pods.jsonl, harness/sim/startup_phases.py), appended as it ends."""
        if self._pods_f is None:
            self._pods_f = open(self.dir / "pods.jsonl", "w", encoding="utf-8")  # noqa: SIM115
        self._pods_f.write(json.dumps(row, sort_keys=True, default=_json_default) + "\n")
        self._pods_f.flush()

    def add_event(self, t_s: float, kind: str, **details: Any) -> None:
        """A non-decision event worth keeping (fault injected, pod crashed, metrics outage)."""
        self.meta.setdefault("events", []).append({"t_s": round(t_s, 6), "kind": kind, **details})

    def tally(self) -> RunTally:
        """Counts of every row added so far (buffered rows are written out first)."""
        self._requests.flush()
        self._timeseries.flush()
        return self._tally

    def requests_written(self) -> list[RequestRecord]:
        """Every request record added so far, read back from requests.parquet (published first).
        Holds the whole table: for tests and small runs, not for what a run keeps in memory."""
        self._requests.publish()
        return [RequestRecord(**row) for row in pq.read_table(self._requests.path).to_pylist()]

    def timeseries_written(self) -> list[TimeseriesRecord]:
        """Every timeseries row added so far, read back from timeseries.parquet (published first)."""
        self._timeseries.publish()
        return [TimeseriesRecord(**row) for row in pq.read_table(self._timeseries.path).to_pylist()]

    # -- persistence ------------------------------------------------------------------------------
    def checkpoint(self, force: bool = False) -> None:
        self._flush_decisions_if_due()
        now = time.monotonic()
        if not self._dirty or (not force and now - self._last_checkpoint < self._checkpoint_gap_s):
            return
        self._flush_decisions()
        self._write(complete=False)
        done = time.monotonic()
        self._checkpoint_gap_s = max(self.checkpoint_wall_s, CHECKPOINT_COST_FACTOR * (done - now))
        self._last_checkpoint = done

    def finish(self, extra_meta: dict[str, Any] | None = None) -> dict[str, Any]:
        if extra_meta:
            self.meta.update(extra_meta)
        summary = self._write(complete=True)
        self._decisions_f.close()
        if self._pods_f is not None:
            self._pods_f.close()
        return summary

    def abort(self, reason: str) -> None:
        """Keep what was measured, marked incomplete (Ctrl-C, backend failure)."""
        self.meta["incomplete_reason"] = reason
        try:
            self._write(complete=False)
        finally:
            if not self._decisions_f.closed:
                self._decisions_f.close()
            if self._pods_f is not None and not self._pods_f.closed:
                self._pods_f.close()
            self._requests.discard()
            self._timeseries.discard()

    def _write(self, complete: bool) -> dict[str, Any]:
        from scalearena.reports.metrics import summarize

        self._requests.publish()
        self._timeseries.publish()
        # the tables just written, from memory when each is one row group (no read-back of the files)
        ts = self._timeseries.published_table()  # read as numpy columns (usage.timeseries_columns), no pandas
        if ts is None:
            ts = pq.read_table(self._timeseries.path)
        statuses = {str(k): n for k, n in self._tally.status.items() if k is not None}  # every row published, counted
        requests = ParquetRequests(self._requests.path, self._requests.published_table(), statuses)
        summary = summarize(requests, ts, self.decisions, self.meta)
        summary["complete"] = complete
        if not complete and "incomplete_reason" in self.meta:
            summary["incomplete_reason"] = self.meta["incomplete_reason"]
        atomic_write_json(self.dir / "summary.json", summary)
        self._rows_at_write = self._requests.rows + self._timeseries.rows
        return summary


@dataclass
class RunTally:
    """Running counts of the rows written (what a backend checks before trusting a run)."""

    requests: int = 0
    http_status: Counter[int] = field(default_factory=Counter)
    status: Counter[str] = field(default_factory=Counter)
    timeseries: int = 0
    timeseries_with_kv: int = 0  # rows with an engine KV reading (kv_usage_mean not null)

    def add_requests(self, table: pa.Table) -> None:
        self.requests += table.num_rows
        for col, counter in (("http_status", self.http_status), ("status", self.status)):
            for v in pc.value_counts(table.column(col)).to_pylist():
                counter[v["values"]] += int(v["counts"])

    def add_timeseries(self, table: pa.Table) -> None:
        self.timeseries += table.num_rows
        self.timeseries_with_kv += table.num_rows - table.column("kv_usage_mean").null_count


def run_dir(out: Path, scenario: str, autoscaler: str, sweep_label: str | None = None) -> Path:
    d = Path(out) / scenario / autoscaler
    return d / sweep_label if sweep_label else d
