"""Index of a results folder for the paper analysis: one entry per run folder."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import pandas as pd


@dataclass
class Run:
    dir: Path
    scenario: str
    autoscaler: str
    seed: int
    sweep: dict[str, str] = field(default_factory=dict)  # e.g. {"rate": "5"}
    summary: dict[str, Any] = field(default_factory=dict)

    @cached_property
    def timeseries(self) -> pd.DataFrame:
        return pd.read_parquet(self.dir / "timeseries.parquet")

    @cached_property
    def scenario_config(self) -> dict[str, Any]:
        p = self.dir / "scenario.json"
        return json.loads(p.read_text()) if p.exists() else {}

    def total_replicas(self, column: str = "ready_replicas") -> pd.Series:
        """Replicas summed over variants, indexed by sample time."""
        return self.timeseries.groupby("t_s")[column].sum()


def index_results(out: Path) -> list[Run]:
    runs = []
    for sj in sorted(Path(out).rglob("summary.json")):
        d = sj.parent
        rel = d.relative_to(out).parts
        if len(rel) < 2:
            continue
        summary = json.loads(sj.read_text())
        extra = dict(p.split("-", 1) for p in rel[2:] if "-" in p)
        seed = int(extra.pop("seed", summary.get("seed", 0)))
        runs.append(Run(d, rel[0], rel[1], seed, extra, summary))
    return runs


def select(runs: list[Run], scenario: str, autoscaler: str | None = None, **sweep: Any) -> list[Run]:
    out = [r for r in runs if r.scenario == scenario and (autoscaler is None or r.autoscaler == autoscaler)]
    for k, v in sweep.items():
        out = [r for r in out if r.sweep.get(k) == str(v)]
    return sorted(out, key=lambda r: r.seed)
