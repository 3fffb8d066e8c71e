"""What a run and a suite record about themselves: the scenario's variants, the plan, versions and commit.

Below the runner and the backends (the simulator writes ``variant_meta`` into its own results), so both
import it without importing each other.
"""
from __future__ import annotations

import platform
import subprocess
from pathlib import Path
from typing import Any

from scalearena import __version__
from scalearena.harness.config.scenario import Scenario
from scalearena.harness.config.suite import RunPlan


def variant_meta(sc: Scenario) -> list[dict[str, Any]]:
    out = []
    for v in sc.cluster.variants:
        g = sc.cluster.gpu(v.gpu)
        out.append(
            {
                "name": v.name,
                "model": v.model,
                "gpu": v.gpu,
                "gpus_per_replica": v.gpus_per_replica,
                "cost": v.cost,
                "tdp_w": g.tdp_w,
                "price_per_hour": g.price_per_hour,
                **({"role": v.role} if v.role != "both" else {}),  # P/D only: aggregated metadata unchanged
            }
        )
    return out


def run_meta(plan: RunPlan, cluster: str) -> dict[str, Any]:
    sc = plan.scenario
    return {
        "scenario": sc.name,
        "autoscaler": plan.label,
        "autoscaler_kind": plan.autoscaler.kind,
        "autoscaler_config": plan.autoscaler.model_dump(mode="json"),
        "cluster": cluster,
        "seed": sc.seed,
        "duration_s": sc.duration_s,
        "window_s": sc.window_s,  # what reports/usage.py integrates over, on every backend
        "slo": sc.slo.model_dump(mode="json"),
        "attainment_target": sc.attainment_target,
        "sample_interval_s": sc.metrics.sample_interval_s,
        "scrape_interval_s": sc.metrics.scrape_interval_s,
        "variants": variant_meta(sc),
        "sweep": dict(plan.sweep),
    }


def git_sha() -> str | None:
    try:
        r = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5,
                           cwd=Path(__file__).resolve().parent)
        return r.stdout.strip() or None if r.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        return None


def versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {"scalearena": __version__, "python": platform.python_version()}
    for pkg in ("pandas", "pyarrow", "pydantic", "numpy", "locust", "kubernetes", "jinja2"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            pass
    return out
