"""RunWriter streams records to parquet in row groups and summarizes them from the file, exactly.

Issue 18 item 1: memory must not grow with the run, and the summary must be the same numbers
as the in-memory summary of the same records (percentiles and means over the same values in
the same order), whatever the row-group size and however many checkpoints came between.
"""
from __future__ import annotations

import json
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings, strategies as st

from scalearena.contracts.records import REQUEST_COLUMNS, RequestRecord, TimeseriesRecord
from scalearena.controllers.base import Decision, Reason
from scalearena.reports import results
from scalearena.reports.metrics import pct_stats, summarize
from scalearena.reports.parquet_stream import rows_table
from scalearena.reports.results import RunWriter, requests_frame, timeseries_frame

META = {
    "scenario": "s", "autoscaler": "static", "cluster": "sim", "seed": 1, "duration_s": 20.0,
    "slo": {"ttft_ms": 150.0, "itl_ms": 30.0}, "sample_interval_s": 5.0, "scrape_interval_s": 15.0,
    "variants": [{"name": "v", "model": "m", "gpu": "A100-80GB", "gpus_per_replica": 1, "cost": 1.0,
                  "tdp_w": 400.0, "price_per_hour": 2.0}],
}
STATUS_HTTP = {"ok": 200, "rejected": 429, "killed": 0, "timeout": 0, "too_long": 400, "error": 500}


def _req(i: int, status: str, ttft: float | None, itl: float | None, e2e: float, tokens: int,
         requested: int | None = None, scheduled: float | None = None) -> RequestRecord:
    return RequestRecord(
        request_id=i, model="m", arrival_s=float(i), first_token_s=None if ttft is None else i + ttft / 1000.0,
        end_s=i + e2e / 1000.0, input_tokens=10 + i % 7, output_tokens=tokens, status=status,
        http_status=STATUS_HTTP[status], variant=None if status == "rejected" else "v",
        pod=None if status == "rejected" else "v-0", ttft_ms=ttft, itl_ms=itl, e2e_ms=e2e,
        scheduled_s=scheduled, requested_output_tokens=requested)


def _ts(t: float, ready: int, kv: float | None) -> TimeseriesRecord:
    return TimeseriesRecord(t_s=t, variant="v", model="m", spec_replicas=ready, ready_replicas=ready,
                            pending_replicas=0, terminating_replicas=0, kv_usage_mean=kv, kv_usage_max=kv,
                            waiting=1, running=2, gpu_util_mean=None, offered_rps=1.0, completed_rps=1.0,
                            router_queue=0)


_finite = st.floats(0.1, 5000.0, allow_nan=False, allow_infinity=False)
_record = st.tuples(st.sampled_from(list(STATUS_HTTP)), st.none() | _finite, st.none() | _finite, _finite,
                    st.integers(0, 300), st.none() | st.integers(1, 300), st.booleans())


@settings(max_examples=25, deadline=None)
@given(rows=st.lists(_record, max_size=40), group=st.integers(1, 7),
       checkpoints=st.sets(st.integers(0, 39), max_size=2))
def test_streamed_summary_is_the_in_memory_summary_of_the_same_records(
        tmp_path_factory: Any, rows: list[tuple], group: int, checkpoints: set[int]) -> None:
    with_schedule = bool(rows) and rows[0][6]
    recs = [_req(i, s, ttft, itl, e2e, tok, req, float(i) - 0.002 if with_schedule else None)
            for i, (s, ttft, itl, e2e, tok, req, _) in enumerate(rows)]
    ts = [_ts(5.0 * k, 1 + k % 3, None if k == 2 else 0.1 * k) for k in range(5)]
    decisions = [{"t_s": 5.0, "variant": "v", "action": "scale_up", "current_replicas": 1, "desired_replicas": 2}]
    out = tmp_path_factory.mktemp("run")
    w = RunWriter(out, META, row_group_rows=group)
    w.decisions.extend(decisions)
    for i, r in enumerate(recs):
        w.add_request(r)
        if i in checkpoints:
            w.checkpoint(force=True)  # publishes: later rows are appended by concatenation
    for r in ts:
        w.add_timeseries(r)
    got = w.finish()
    want = summarize(requests_frame(recs), timeseries_frame(ts), decisions, META)
    assert got.pop("complete") is True
    assert json.dumps(got, sort_keys=True) == json.dumps(want, sort_keys=True)
    back = pd.read_parquet(out / "requests.parquet")
    assert list(back.columns) == list(REQUEST_COLUMNS)
    assert back["request_id"].tolist() == list(range(len(recs)))
    assert back["ttft_ms"].isna().tolist() == [r.ttft_ms is None for r in recs]


def test_rows_land_in_row_groups_as_they_come(tmp_path: Path) -> None:
    w = RunWriter(tmp_path / "run", META, row_group_rows=4)
    for i in range(10):
        w.add_request(_req(i, "ok", 100.0, 20.0, 1000.0, 5))
    spools = [p for p in (tmp_path / "run").iterdir() if ".spool-" in p.name]
    assert len(spools) == 1  # rows 0-7 written as two row groups of 4; rows 8, 9 still buffered
    assert not (tmp_path / "run" / "requests.parquet").exists()  # nothing published before a checkpoint
    w.finish()
    f = pq.ParquetFile(tmp_path / "run" / "requests.parquet")
    assert [f.metadata.row_group(i).num_rows for i in range(f.num_row_groups)] == [4, 4, 2]
    assert not [p.name for p in (tmp_path / "run").iterdir() if p.name.startswith(".")]


def test_an_interrupted_run_keeps_every_row_marked_incomplete(tmp_path: Path) -> None:
    w = RunWriter(tmp_path / "run", META, row_group_rows=3)
    for i in range(5):
        w.add_request(_req(i, "ok", 100.0, 20.0, 1000.0, 5))
    w.checkpoint(force=True)
    for i in range(5, 8):
        w.add_request(_req(i, "timeout", None, None, 120000.0, 0))
    w.add_decision(3.0, "static", Decision("v", 1, 2, (Reason("static", "fixed at 2"),)))
    w.abort("interrupted")
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert (summary["complete"], summary["incomplete_reason"]) == (False, "interrupted")
    # 5 ok before the checkpoint + 3 timeouts after it, all in the file, in order
    assert (summary["requests_total"], summary["requests_ok"], summary["failures"]["timeout"]) == (8, 5, 3)
    assert pd.read_parquet(tmp_path / "run" / "requests.parquet")["request_id"].tolist() == list(range(8))
    assert not [p.name for p in (tmp_path / "run").iterdir() if p.name.startswith(".")]


def test_checkpoints_are_spaced_by_their_own_cost(tmp_path: Path, monkeypatch: Any) -> None:
    clock = {"t": 100.0}
    monkeypatch.setattr(results.time, "monotonic", lambda: clock["t"])
    w = RunWriter(tmp_path / "run", META, checkpoint_wall_s=5.0)
    w.add_request(_req(0, "ok", 100.0, 20.0, 1000.0, 5))
    real_write = w._write

    def slow_write(complete: bool) -> dict:
        clock["t"] += 2.0  # this checkpoint "takes" 2 s of wall time
        return real_write(complete)

    monkeypatch.setattr(w, "_write", slow_write)
    clock["t"] = 106.0
    w.checkpoint()  # 6 s since the writer started >= 5 s: written, from 106 to 108
    assert (tmp_path / "run" / "summary.json").exists()
    w.add_request(_req(1, "ok", 100.0, 20.0, 1000.0, 5))
    clock["t"] = 108.0 + 39.0
    w.checkpoint()  # next gap = max(5, 20 x 2 s) = 40 s: at 39 s, nothing
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["requests_total"] == 1
    clock["t"] = 108.0 + 40.0
    w.checkpoint()
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["requests_total"] == 2


def _streamed_peak(tmp_path: Path, n: int) -> int:
    tracemalloc.start()
    w = RunWriter(tmp_path / f"run-{n}", META, row_group_rows=500)
    for i in range(n):
        w.add_request(_req(i, "ok", 100.0, 20.0, 1000.0, 5))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    w.finish()
    return peak


def test_memory_does_not_grow_with_the_number_of_records(tmp_path: Path) -> None:
    # Holding every record costs ~500 B of Python objects each: 16,000 records would trace ~7 MB more
    # than 2,000 (8x the peak). Streamed, both hold at most one row group of 500 records.
    small, large = _streamed_peak(tmp_path, 2_000), _streamed_peak(tmp_path, 16_000)
    assert large < 1.5 * small, (small, large)


@settings(max_examples=60, deadline=None)
@given(values=st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=300))
def test_percentiles_in_one_call_are_the_percentiles_one_by_one(values: list[float]) -> None:
    # pct_stats asks numpy for p50, p90, p99 at once (one partitioned copy of a day's column instead of
    # three); each must be the number np.percentile gives for that quantile alone
    got = pct_stats(np.asarray(values))
    assert [got["p50"], got["p90"], got["p99"]] == [float(np.percentile(values, q)) for q in (50, 90, 99)]


def test_a_one_row_group_file_is_read_once(tmp_path: Path, monkeypatch: Any) -> None:
    from scalearena.reports.request_table import ParquetRequests

    def table(group: int) -> ParquetRequests:
        w = RunWriter(tmp_path / f"g{group}", META, row_group_rows=group)
        for i, status in enumerate(["ok", "rejected", "ok", "timeout", "ok"]):
            w.add_request(_req(i, status, 100.0 + i if status == "ok" else None, 20.0, 1000.0, 5))
        w.finish()
        return ParquetRequests(tmp_path / f"g{group}" / "requests.parquet")

    one, three = table(8), table(2)  # 5 rows: one row group of 5 / groups of 2, 2, 1
    assert (one.file.num_row_groups, three.file.num_row_groups) == (1, 3)
    reads: list[int] = []
    for t in (one, three):
        monkeypatch.setattr(t.file, "read_row_group", lambda i, columns=None, _r=t.file.read_row_group:
                            reads.append(i) or _r(i, columns=columns))
    for t in (one, three):  # the same answers from memory as from the file: ok rows 0, 2, 4
        assert t.status_counts() == {"ok": 3, "rejected": 1, "timeout": 1}
        assert t.ok_mask().tolist() == [True, False, True, False, True]
        assert t.column("ttft_ms", ok_only=True).tolist() == [100.0, 102.0, 104.0]
        assert t.column("request_id").tolist() == [0, 1, 2, 3, 4]
    # the one-group file was read whole when opened; the other is read group by group, each call:
    # status_counts 3 + ok_mask 3 + column(ok_only) 3 + column 3 = 12 reads of groups 0, 1, 2
    assert reads == [0, 1, 2] * 4


def test_the_published_table_is_kept_only_while_the_file_is_one_row_group(tmp_path: Path) -> None:
    from scalearena.reports.parquet_stream import ParquetStream
    from scalearena.reports.results import REQUEST_SCHEMA

    s = ParquetStream(tmp_path / "requests.parquet", REQUEST_SCHEMA, row_group_rows=2)
    row = tuple(results._REQUEST_ROW(_req(0, "ok", 100.0, 20.0, 1000.0, 5)))
    assert s.published_table() is None  # nothing published
    s.add(row)
    assert s.publish() and s.published_table() is not None
    assert s.published_table().equals(pq.read_table(s.path))  # 1 row, one group: the file's table in memory
    s.add(row)
    assert s.published_table() is None  # a row added since: the kept table is not the file any more
    s.add(row)  # the second and third rows fill the second row group
    s.publish()
    assert pq.ParquetFile(s.path).num_row_groups == 2 and s.published_table() is None


def test_rows_become_columns_by_position_and_a_short_row_is_refused() -> None:
    schema = pa.schema([("t_s", pa.float64()), ("n", pa.int64()), ("pod", pa.large_string())])
    t = rows_table([(0.5, 2, "p-0"), (1.0, None, None)], schema)
    assert t.schema == schema
    assert t.to_pydict() == {"t_s": [0.5, 1.0], "n": [2, None], "pod": ["p-0", None]}
    with pytest.raises(ValueError, match="3 values, one per column"):
        rows_table([(0.5, 2)], schema)


def test_a_spool_left_by_a_killed_run_is_removed_by_the_next_stream_of_that_file(tmp_path: Path) -> None:
    """A run SIGKILLed (or aborted) mid-way leaves `.requests.parquet.spool-XXXX` (it was 297 MB after an
    aborted flash crowd, issue 31); the next stream of requests.parquet in that folder removes it, and leaves
    another table's spool alone."""
    from scalearena.reports.parquet_stream import ParquetStream

    schema = pa.schema([("x", pa.int64())])
    killed = ParquetStream(tmp_path / "requests.parquet", schema, row_group_rows=2)
    for i in range(4):  # two row groups of 2: the spool exists, nothing published, then the process "dies"
        killed.add((i,))
    stale = list(tmp_path.glob(".requests.parquet.spool-*"))
    other = tmp_path / ".timeseries.parquet.spool-abc"
    other.write_bytes(b"x")
    assert len(stale) == 1
    fresh = ParquetStream(tmp_path / "requests.parquet", schema, row_group_rows=2)
    assert not stale[0].exists() and other.exists()
    fresh.add((7,))
    fresh.publish()
    assert pq.read_table(tmp_path / "requests.parquet").column("x").to_pylist() == [7]
