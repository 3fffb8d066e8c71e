"""The oracle frontier's run cache: one small JSON per frontier run, keyed by what decides its result.

A frontier run (harness/sizing/frontier.py) is a simulator run of a hindsight plan on a scenario and seed;
the simulator is deterministic, so its result is a function of the resolved scenario (seed included),
the plan's configuration, the files the workload reads (a trace) and the code. The key is a SHA-256
over exactly those: the scenario and configuration as JSON, the bytes of every file a ``path`` field
names, and a digest of the source of the packages a run executes (contracts, controllers, harness,
workloads; any edit there invalidates every entry). A hit costs a file read instead of a run, so a
second suite or tuning study on the same scenarios (or a rerun of ``make bench``) pays nothing for it.

Where: ``$SCALEARENA_CACHE_DIR/frontier/`` when set, else ``$XDG_CACHE_HOME/scalearena/frontier/``,
else ``~/.cache/scalearena/frontier/``. Entries are written atomically; a damaged or foreign entry
is a miss. Only complete runs are stored. Deleting the folder is always safe.
"""
from __future__ import annotations

import functools
import hashlib
import importlib
import json
import os
from pathlib import Path
from typing import Any

from scalearena.reports.results import atomic_write_json

CACHE_ENV = "SCALEARENA_CACHE_DIR"
CODE_PACKAGES = ("contracts", "controllers", "harness", "workloads")
FORMAT = 1  # bump when an entry's layout changes


def cache_root() -> Path:
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "scalearena"


@functools.lru_cache(maxsize=1)
def code_digest() -> str:
    """SHA-256 over the source files (and engine data) of the packages a simulator run executes."""
    h = hashlib.sha256()
    for name in CODE_PACKAGES:
        root = Path(importlib.import_module(f"scalearena.{name}").__file__ or "").parent
        for f in sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in (".py", ".json", ".csv")
                        and "__pycache__" not in p.parts):
            h.update(f.relative_to(root).as_posix().encode())
            h.update(f.read_bytes())
    return h.hexdigest()


def _files(obj: Any) -> list[str]:
    """Every existing file a ``path`` field of the dumped scenario names (trace, empirical lengths)."""
    out: list[str] = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k == "path" and isinstance(v, str) and Path(v).is_file():
                out.append(v)
            else:
                out += _files(v)
    elif isinstance(obj, list):
        for v in obj:
            out += _files(v)
    return out


def run_key(scenario: dict[str, Any], autoscaler: dict[str, Any], cluster: str) -> str:
    h = hashlib.sha256(json.dumps({"format": FORMAT, "scenario": scenario, "autoscaler": autoscaler,
                                   "cluster": cluster, "code": code_digest()}, sort_keys=True,
                                  default=str).encode())
    for f in sorted(set(_files(scenario))):
        h.update(Path(f).read_bytes())
    return h.hexdigest()


def _entry(key: str, root: Path | None = None) -> Path:
    return (root or cache_root()) / "frontier" / f"{key}.json"


def load(key: str) -> dict[str, Any] | None:
    """The cached summary of a run, or None (no entry, unreadable, or another key's)."""
    path = _entry(key)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("key") != key or not isinstance(data.get("summary"), dict):
        return None
    return data["summary"]


def store(key: str, summary: dict[str, Any], what: str) -> None:
    """Keep a complete run's summary; a cache that cannot be written is skipped, not an error."""
    try:
        atomic_write_json(_entry(key), {"key": key, "what": what, "summary": summary})
    except OSError:
        pass
