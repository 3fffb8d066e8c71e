"""Results written as a run goes, atomically.

Layout (DESIGN.md): ``OUT/<scenario>/<autoscaler>[/rate-<r>]/`` holding
requests.parquet, timeseries.parquet, decisions.jsonl, pods.jsonl (each pod's
start-up phases) and summary.json.

Every file is replaced by write-to-temp + ``os.replace`` so a reader (or an
interrupted run) never sees half a file. ``checkpoint()`` rewrites the parquet
files and a provisional summary (``complete: false``) at most every
``checkpoint_wall_s`` seconds of wall time; ``finish()`` writes the final
summary with ``complete: true``. decisions.jsonl is appended and flushed line
by line.
"""
from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from scalearena.contracts.records import REQUEST_COLUMNS, TIMESERIES_COLUMNS, RequestRecord, TimeseriesRecord
from scalearena.controllers.base import Decision


def atomic_write_bytes(path: Path, data: bytes) -> None:
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


def atomic_write_parquet(path: Path, df: pd.DataFrame) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.close(fd)
    try:
        df.to_parquet(tmp, index=False)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


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


# Signature of the summary function (reports.metrics.summarize): it is the one
# definition of every metric, shared by summary.json and the report.
Summarizer = Callable[[pd.DataFrame, pd.DataFrame, list[dict[str, Any]], dict[str, Any]], dict[str, Any]]


class RunWriter:
    """Collects one run's records and keeps its folder up to date on disk."""

    def __init__(self, run_dir: Path, meta: dict[str, Any], checkpoint_wall_s: float = 5.0) -> None:
        self.dir = Path(run_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.meta = dict(meta)  # scenario, autoscaler, cluster, seed, duration_s, slo, variants, ...
        self.requests: list[RequestRecord] = []
        self.timeseries: list[TimeseriesRecord] = []
        self.decisions: list[dict[str, Any]] = []
        self.checkpoint_wall_s = checkpoint_wall_s
        self._last_checkpoint = time.monotonic()
        self._dirty = False
        self._decisions_f = open(self.dir / "decisions.jsonl", "w", encoding="utf-8")  # noqa: SIM115
        self._pods_f: Any = None
        for stale in ("summary.json", "requests.parquet", "timeseries.parquet", "pods.jsonl"):
            (self.dir / stale).unlink(missing_ok=True)

    # -- collection -------------------------------------------------------------------------------
    def add_request(self, rec: RequestRecord) -> None:
        self.requests.append(rec)
        self._dirty = True

    def add_requests(self, recs: Iterable[RequestRecord]) -> None:
        self.requests.extend(recs)
        self._dirty = True

    def add_timeseries(self, rec: TimeseriesRecord) -> None:
        self.timeseries.append(rec)
        self._dirty = True

    def add_decision(self, t_s: float, autoscaler: str, decision: Decision, loop: str = "main") -> None:
        row = {"t_s": round(t_s, 6), "autoscaler": autoscaler, "loop": loop, **decision.to_dict()}
        self.decisions.append(row)
        self._decisions_f.write(json.dumps(row, sort_keys=True, default=_json_default) + "\n")
        self._decisions_f.flush()

    def add_pod(self, row: dict[str, Any]) -> None:
        """One pod's start-up phases and end (pods.jsonl, harness/startup.py), appended as it ends."""
        if self._pods_f is None:
            self._pods_f = open(self.dir / "pods.jsonl", "w", encoding="utf-8")  # noqa: SIM115
        self._pods_f.write(json.dumps(row, sort_keys=True, default=_json_default) + "\n")
        self._pods_f.flush()

    def add_event(self, t_s: float, kind: str, **details: Any) -> None:
        """A non-decision event worth keeping (fault injected, pod crashed, metrics outage)."""
        self.meta.setdefault("events", []).append({"t_s": round(t_s, 6), "kind": kind, **details})

    # -- persistence ------------------------------------------------------------------------------
    def checkpoint(self, force: bool = False) -> None:
        now = time.monotonic()
        if not self._dirty or (not force and now - self._last_checkpoint < self.checkpoint_wall_s):
            return
        self._write(complete=False)
        self._last_checkpoint = now

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

    def _write(self, complete: bool) -> dict[str, Any]:
        from scalearena.reports.metrics import summarize

        req = requests_frame(self.requests)
        ts = timeseries_frame(self.timeseries)
        atomic_write_parquet(self.dir / "requests.parquet", req)
        atomic_write_parquet(self.dir / "timeseries.parquet", ts)
        summary = summarize(req, ts, self.decisions, self.meta)
        summary["complete"] = complete
        if not complete and "incomplete_reason" in self.meta:
            summary["incomplete_reason"] = self.meta["incomplete_reason"]
        atomic_write_json(self.dir / "summary.json", summary)
        self._dirty = False
        return summary


def run_dir(out: Path, scenario: str, autoscaler: str, sweep_label: str | None = None) -> Path:
    d = Path(out) / scenario / autoscaler
    return d / sweep_label if sweep_label else d
