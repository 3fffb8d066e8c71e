"""Reading a results directory back: the suite, its runs and their files.

A run folder is any folder holding summary.json; its place under the results
root (``<scenario>/<autoscaler>[/rate-<r>]``) is its key, which is how
``compare`` pairs a baseline run with a current one. Parquet and JSONL files
are read lazily: the suite table needs only the summaries.

A results folder must hold one suite: runs under a suite.json belong to it,
and a folder that mixes runs of several suite.json files, or holds runs its
own suite.json does not list (a later ``run --out`` into an old suite's
folder), is refused with the reason rather than rendered as a garbled
table where one suite's folder names read as another's sweep labels.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import pandas as pd

from scalearena.contracts.errors import UserError
from scalearena.contracts.files import read_regular
from scalearena.contracts.records import REQUEST_COLUMNS, TIMESERIES_COLUMNS


def natural_key(text: str) -> list[Any]:
    """rate-2 < rate-10: digits compare as numbers."""
    return [float(p) if re.fullmatch(r"\d+(\.\d+)?", p) else p for p in re.split(r"(\d+(?:\.\d+)?)", text)]


_SEED_DIR = re.compile(r"seed-(\d+)")
TUNING_DIR = "tuning"  # OUT/tuning/: the studies of `suite --tuned` (harness/tuning/tuned_suite.py)
MAX_JSON_BYTES = 64 * 1024 * 1024  # a summary.json or suite.json (a few KB to a few MB written here)
MAX_JSONL_BYTES = 1024 * 1024 * 1024  # decisions.jsonl / pods.jsonl of a week-long run


@dataclass
class Run:
    dir: Path
    key: str  # scenario/autoscaler[/sweep] relative to the results root
    summary: dict[str, Any]

    @property
    def scenario(self) -> str:
        return str(self.summary.get("scenario") or self.key.split("/")[0])

    @property
    def autoscaler(self) -> str:
        parts = self.key.split("/")
        return str(self.summary.get("autoscaler") or (parts[1] if len(parts) > 1 else parts[0]))

    @property
    def sweep(self) -> str | None:
        """Sweep label (``rate-2``) when the run sits one level below its autoscaler folder."""
        parts = self.key.split("/")
        return "/".join(parts[2:]) if len(parts) > 2 else None

    @property
    def seed(self) -> int | None:
        """The seed of a suite run repeated over seeds (its ``seed-<n>`` folder), else None."""
        m = _SEED_DIR.fullmatch(self.key.rsplit("/", 1)[-1]) if len(self.key.split("/")) > 2 else None
        return int(m.group(1)) if m else None

    @property
    def point(self) -> str | None:
        """The sweep label without the seed folder: the runs of one point differ only in their seed."""
        parts = self.key.split("/")[2:]
        if self.seed is not None:
            parts = parts[:-1]
        return "/".join(parts) or None

    @property
    def label(self) -> str:
        return f"{self.scenario} / {self.autoscaler}" + (f" / {self.sweep}" if self.sweep else "")

    @cached_property
    def requests(self) -> pd.DataFrame:
        return _read_parquet(self.dir / "requests.parquet", REQUEST_COLUMNS)

    def request_columns(self, columns: tuple[str, ...]) -> pd.DataFrame:
        """Only these columns of requests.parquet (the whole frame when it is already loaded)."""
        if "requests" in self.__dict__:
            return self.requests[list(columns)]
        return _read_parquet(self.dir / "requests.parquet", columns, only=columns)

    @cached_property
    def timeseries(self) -> pd.DataFrame:
        return _read_parquet(self.dir / "timeseries.parquet", TIMESERIES_COLUMNS)

    @cached_property
    def decisions(self) -> list[dict[str, Any]]:
        return _read_jsonl(self.dir / "decisions.jsonl")

    @cached_property
    def pods(self) -> list[dict[str, Any]]:
        """pods.jsonl: each pod's start-up phases (absent in older results: no rows)."""
        return [r for r in _read_jsonl(self.dir / "pods.jsonl") if isinstance(r, dict) and "phases" in r]


def _read_jsonl(path: Path) -> list[Any]:
    if not path.is_file():
        return []
    rows = []
    text = read_regular(path, MAX_JSONL_BYTES, "a JSON-lines file written by scalearena").decode("utf-8", "replace")
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            rows.append(json.loads(line))
        except (ValueError, RecursionError):  # a run interrupted mid-line: keep what is whole
            continue
    return rows


@dataclass
class ResultSet:
    root: Path
    runs: list[Run]
    suite: dict[str, Any] | None = None
    single_run: bool = False
    by_key: dict[str, Run] = field(init=False)

    def __post_init__(self) -> None:
        self.runs.sort(key=lambda r: (natural_key(r.scenario), r.autoscaler, natural_key(r.sweep or "")))
        self.by_key = {r.key: r for r in self.runs}

    def scenarios(self) -> list[str]:
        return sorted({r.scenario for r in self.runs}, key=natural_key)


def _read_parquet(path: Path, columns: tuple[str, ...], only: tuple[str, ...] | None = None) -> pd.DataFrame:
    """The file's table with every one of ``columns`` (missing ones null); ``only``: read just those
    (a file written before a column existed gives it as nulls)."""
    if not path.is_file():
        return pd.DataFrame(columns=list(columns))
    try:
        if only is not None:
            import pyarrow.parquet as pq

            names = set(pq.read_schema(path).names)
            df = pd.read_parquet(path, columns=[c for c in only if c in names])
        else:
            df = pd.read_parquet(path)
    except Exception as e:  # noqa: BLE001 - pyarrow raises ArrowInvalid, OSError, ... for a damaged file
        raise UserError(f"cannot read parquet: {type(e).__name__}: {e}", where=str(path),
                        expected="a parquet file written by scalearena") from None
    missing = [c for c in columns if c not in df.columns]
    return df.assign(**{c: None for c in missing}) if missing else df


def read_json(path: Path) -> dict[str, Any]:
    raw = read_regular(path, MAX_JSON_BYTES, "a JSON file written by scalearena")
    try:
        data = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError) as e:  # ValueError: bad JSON, bytes that are not UTF-8
        raise UserError(f"cannot read JSON: {type(e).__name__}: {e}", where=str(path)) from None
    if not isinstance(data, dict):
        raise UserError("expected a JSON object", where=str(path))
    return data


def load_results(out_dir: str | Path) -> ResultSet:
    """Every run under ``out_dir`` (or ``out_dir`` itself when it is a run folder)."""
    root = Path(out_dir)
    if not root.is_dir():
        raise UserError("results directory not found", where=str(out_dir), expected="a folder written by run/suite")
    suite = read_json(root / "suite.json") if (root / "suite.json").is_file() else None
    if (root / "summary.json").is_file():
        summary = read_json(root / "summary.json")
        key = "/".join(str(summary.get(k) or "?") for k in ("scenario", "autoscaler"))
        return ResultSet(root, [Run(root, key, summary)], suite, single_run=True)
    runs = []
    for path in sorted(root.rglob("summary.json")):
        rel = path.parent.relative_to(root).as_posix()
        if suite is not None and rel.startswith(TUNING_DIR + "/"):
            continue  # suite --tuned's studies: their trials are not the suite's runs
        runs.append(Run(path.parent, rel, read_json(path)))
    if not runs:
        raise UserError("no runs found (no summary.json below it)", where=str(out_dir))
    check_one_suite(root, runs, suite)
    return ResultSet(root, runs, suite)


def _owner(run_dir: Path) -> Path | None:
    """The nearest folder at or above ``run_dir`` holding a suite.json (it may lie above ``root``)."""
    for d in (run_dir, *run_dir.resolve().parents):
        if (d / "suite.json").is_file():
            return d.resolve()
    return None


def check_one_suite(root: Path, runs: list[Run], suite: dict[str, Any] | None) -> None:
    """Refuse a folder mixing unrelated suites (see the module docstring); UserError naming them."""
    owners = {_owner(r.dir) for r in runs}
    if len(owners) > 1:
        names = sorted("(no suite.json)" if o is None else os.path.relpath(o / "suite.json", root) for o in owners)
        raise UserError(f"mixes runs of {len(owners)} unrelated suites: {', '.join(names)}", where=str(root),
                        expected="one suite per folder: report each of those folders on its own")
    (owner,) = owners
    if owner is not None and owner != root.resolve():
        raise UserError(f"its runs belong to the suite in {owner}", where=str(root),
                        expected=f"the suite folder itself: scalearena report {owner}")
    listed = (suite or {}).get("runs")
    if isinstance(listed, list):
        known = {str(e.get("dir")) for e in listed if isinstance(e, dict)}
        stray = [r.key for r in runs if r.key not in known]
        if stray:
            more = f" and {len(stray) - 3} more" if len(stray) > 3 else ""
            raise UserError(f"holds runs its suite.json does not list: {', '.join(stray[:3])}{more}",
                            where=str(root), expected="only the runs of the suite that wrote suite.json "
                            "(write new runs to a fresh --out folder)")
