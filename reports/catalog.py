"""The metrics that tables, bar charts and the regression gate show.

One entry per headline metric: where it lives in summary.json, its unit, and
which direction is better. The suite table marks the best value per column
with ``direction``; ``compare`` gates on the same entries with the default
tolerances below, so "better" means one thing everywhere.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Direction = Literal["higher", "lower", "none"]


@dataclass(frozen=True)
class Metric:
    id: str  # name used on the command line (--tolerance ID=PCT)
    path: tuple[str, ...]  # keys into summary.json
    label: str
    unit: str
    direction: Direction
    fmt: str = "{:.2f}"
    tolerance_pct: float | None = None  # default allowed worsening in percent; None = reported, not gated

    def value(self, summary: dict[str, Any]) -> float | None:
        node: Any = summary
        for key in self.path:
            if not isinstance(node, dict) or key not in node:
                return None
            node = node[key]
        if node is None or isinstance(node, bool):
            return None
        if isinstance(node, dict):  # failures: sum of causes
            return float(sum(v for v in node.values() if isinstance(v, int | float)))
        return float(node)

    def format(self, v: float | None) -> str:
        return "–" if v is None else self.fmt.format(v)

    @property
    def heading(self) -> str:
        return f"{self.label} ({self.unit})" if self.unit else self.label


METRICS: tuple[Metric, ...] = (
    Metric("requests_total", ("requests_total",), "Requests", "", "none", "{:.0f}"),
    Metric("throughput_rps", ("throughput_rps",), "Throughput", "req/s", "higher", "{:.3f}", 5.0),
    Metric("goodput_rps", ("goodput_rps",), "Goodput", "req/s", "higher", "{:.3f}", 5.0),
    Metric("slo_attainment", ("slo_attainment", "both"), "SLO attainment", "share", "higher", "{:.1%}", 5.0),
    Metric("failures", ("failures",), "Failures", "requests", "lower", "{:.0f}", 10.0),
    Metric("rejected", ("failures", "rejected"), "Rejected", "requests", "lower", "{:.0f}"),
    Metric("killed", ("failures", "killed"), "Killed", "requests", "lower", "{:.0f}"),
    Metric("timeout", ("failures", "timeout"), "Timed out", "requests", "lower", "{:.0f}"),
    Metric("too_long", ("failures", "too_long"), "Too long", "requests", "lower", "{:.0f}"),
    Metric("ttft_mean", ("ttft_ms", "mean"), "TTFT mean", "ms", "lower", "{:.0f}", 10.0),
    Metric("ttft_p99", ("ttft_ms", "p99"), "TTFT p99", "ms", "lower", "{:.0f}", 10.0),
    Metric("itl_mean", ("itl_ms", "mean"), "ITL mean", "ms", "lower", "{:.1f}", 10.0),
    Metric("itl_p99", ("itl_ms", "p99"), "ITL p99", "ms", "lower", "{:.1f}", 10.0),
    Metric("e2e_p99", ("e2e_ms", "p99"), "E2E p99", "ms", "lower", "{:.0f}", 10.0),
    Metric("replicas_mean", ("replicas", "mean"), "Replicas mean", "ready", "none", "{:.2f}"),
    Metric("replicas_max", ("replicas", "max"), "Replicas max", "ready", "none", "{:.0f}"),
    Metric("gpu_hours", ("gpu_hours",), "GPU-hours", "h", "lower", "{:.3f}", 10.0),
    Metric("cost", ("cost",), "Cost", "variantCost·h", "lower", "{:.3f}", 10.0),
    Metric("cost_usd", ("cost_usd",), "Cost", "USD", "lower", "{:.2f}", 10.0),  # what the reports show: gated
    Metric("energy_kwh", ("energy_kwh",), "Energy (TDP)", "kWh", "lower", "{:.3f}", 10.0),
    Metric("energy_estimated_kwh", ("energy", "estimated_kwh"), "Energy (est.)", "kWh", "lower", "{:.3f}"),
    Metric("scaling_actions", ("scaling_actions",), "Scaling actions", "", "none", "{:.0f}"),
    # Scaling KPIs (reports/scaling.py): reported by compare, not gated (a baseline may lack them).
    Metric("oscillations", ("scaling", "oscillations"), "Oscillations", "reversals", "lower", "{:.0f}"),
    Metric("ready_lag_p95", ("scaling", "decision_to_ready_lag_s", "p95"), "Scale-up to ready p95", "s", "lower",
           "{:.0f}"),
    Metric("cost_per_1m_output_tokens", ("efficiency", "cost_per_1m_output_tokens"), "Cost per 1M output tokens",
           "variantCost·h", "lower", "{:.3g}"),
    Metric("under_provisioned_gpu_s", ("scaling", "vs_oracle", "under_provisioned_gpu_s"),
           "Under-provisioned vs oracle", "GPU-s", "lower", "{:.0f}"),
    Metric("over_provisioned_gpu_s", ("scaling", "vs_oracle", "over_provisioned_gpu_s"),
           "Over-provisioned vs oracle", "GPU-s", "lower", "{:.0f}"),
    Metric("slo_recovery_max_s", ("scaling", "slo_recovery", "recover_s", "max"), "SLO recovery after a step, max",
           "s", "lower", "{:.0f}"),
)
BY_ID: dict[str, Metric] = {m.id: m for m in METRICS}

# Columns of the suite summary table (in order).
TABLE_METRICS: tuple[str, ...] = (
    "requests_total", "throughput_rps", "goodput_rps", "slo_attainment", "failures", "ttft_mean", "ttft_p99",
    "itl_mean", "itl_p99", "replicas_mean", "replicas_max", "gpu_hours", "cost", "energy_kwh", "scaling_actions",
)


def cost_metric(summaries: list[dict[str, Any]]) -> Metric:
    """The one cost a page shows: USD when every run has prices, else GPU-hours (the other goes in a tooltip)."""
    usd = bool(summaries) and all(BY_ID["cost_usd"].value(s) is not None for s in summaries)
    return BY_ID["cost_usd" if usd else "gpu_hours"]


def cost_tooltip(summary: dict[str, Any]) -> str:
    """The cost units a page does not show, for a hover tooltip."""
    parts = [f"{BY_ID[m].format(BY_ID[m].value(summary))} {BY_ID[m].unit}" for m in ("cost_usd", "gpu_hours", "cost")
             if BY_ID[m].value(summary) is not None]
    return " · ".join(p.replace(" h", " GPU-h") for p in parts)


def table_metrics(summaries: list[dict[str, Any]]) -> list[Metric]:
    """Columns of a suite table: TABLE_METRICS with the page's one cost unit (no cost column for GPU-hours,
    which has its own)."""
    cost = cost_metric(summaries)
    ids = [m for m in TABLE_METRICS if m != "cost" or cost.id == "cost_usd"]
    return [cost if m == "cost" else BY_ID[m] for m in ids]


def best_index(values: list[float | None], direction: Direction) -> set[int]:
    """Indices holding the best value (ties all win); empty when the direction is neutral
    or fewer than two values are known."""
    known = [(i, v) for i, v in enumerate(values) if v is not None]
    if direction == "none" or len(known) < 2:
        return set()
    target = max(v for _, v in known) if direction == "higher" else min(v for _, v in known)
    if all(v == target for _, v in known):
        return set()
    return {i for i, v in known if v == target}
