"""Metric definitions (INITIAL minimal version; the Reports work extends it).

``summarize(requests, timeseries, decisions, meta)`` is the one definition of
every number in summary.json and the report.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from scalearena.harness.records import FAILURE_CAUSES


def _pct(s: pd.Series) -> dict[str, float | None]:
    s = s.dropna()
    if s.empty:
        return {"mean": None, "p50": None, "p90": None, "p99": None}
    a = s.to_numpy(dtype=float)
    return {
        "mean": float(a.mean()),
        "p50": float(np.percentile(a, 50)),
        "p90": float(np.percentile(a, 90)),
        "p99": float(np.percentile(a, 99)),
    }


def summarize(req: pd.DataFrame, ts: pd.DataFrame, decisions: list[dict[str, Any]], meta: dict[str, Any]) -> dict[str, Any]:
    duration = float(meta["duration_s"])
    slo = meta["slo"]
    ok = req[req["status"] == "ok"]
    good = ok[(ok["ttft_ms"] <= slo["ttft_ms"]) & (ok["itl_ms"].fillna(0.0) <= slo["itl_ms"])]
    failures = {c: int((req["status"] == c).sum()) for c in FAILURE_CAUSES}
    by_variant = {}
    total = None
    if not ts.empty:
        per_t = ts.groupby("t_s")["ready_replicas"].sum()
        total = per_t
        for name, g in ts.groupby("variant"):
            by_variant[str(name)] = {"mean": float(g["ready_replicas"].mean()), "max": int(g["ready_replicas"].max())}
    return {
        "scenario": meta["scenario"],
        "autoscaler": meta["autoscaler"],
        "cluster": meta["cluster"],
        "seed": meta["seed"],
        "duration_s": duration,
        "requests_total": int(len(req)),
        "requests_ok": int(len(ok)),
        "failures": failures,
        "throughput_rps": len(ok) / duration,
        "goodput_rps": len(good) / duration,
        "slo": dict(slo),
        "ttft_ms": _pct(ok["ttft_ms"]),
        "itl_ms": _pct(ok["itl_ms"]),
        "e2e_ms": _pct(ok["e2e_ms"]),
        "replicas": {
            "mean": float(total.mean()) if total is not None else 0.0,
            "max": int(total.max()) if total is not None else 0,
            "by_variant": by_variant,
        },
        "gpu_hours": 0.0,
        "cost": 0.0,
        "energy_kwh": 0.0,
        "scaling_actions": sum(1 for d in decisions if d["action"] in ("scale_up", "scale_down")),
    }
