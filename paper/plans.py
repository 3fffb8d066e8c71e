"""The runs behind docs/paper-reproduction.md.

1. The paper suite (workloads/suites/paper.yaml: Exp. 1, Exp. 2, the physical
   validation at 2/3/5/6 RPS) for the autoscalers that suite lists, over several seeds.
2. Sensitivity sweeps on the physical scenario at 5 and 6 RPS for wva and hpa:
   cold start (30-120 s), scrape interval (5-30 s), WVA gamma_kv (0.1-0.3) and
   the HPA targets (queue depth, KV usage).
3. Beyond the paper: the heterogeneous A100/H100/H200 pool with roofline
   latencies, the paper suite's autoscalers, oracle as the cost reference.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scalearena.harness.config.overrides import apply_overrides
from scalearena.harness.config.scenario import read_yaml, scenario_from_data
from scalearena.harness.config.suite import RunPlan, load_suite, plans_for_scenario

WORKLOADS = Path(__file__).resolve().parents[1] / "workloads"  # paper/ sits beside workloads/
PAPER_SUITE = WORKLOADS / "suites" / "paper.yaml"
PHYSICAL = WORKLOADS / "scenarios" / "physical-validation.yaml"
HETERO = WORKLOADS / "scenarios" / "hetero-roofline.yaml"
SENSITIVITY_RATES = (5, 6)


@dataclass(frozen=True)
class Sweep:
    param: str  # short name used in folder names and the doc
    title: str
    values: tuple[Any, ...]
    overrides: tuple[str, ...]  # format strings with {v}
    autoscalers: tuple[str, ...] = ("wva", "hpa")


BOTH_WVA = ("wva", "wva-headroom")  # upstream's +1 actuation and the paper's headroom actuation


def _hpa_metrics(queue: str, kv: str) -> str:
    """--set override of the paper's two HPA Pods metrics (average queue depth, average KV usage)."""
    return ("autoscalers.1.metrics=[{{type: Pods, metric: 'vllm:num_requests_waiting', average_value: " + queue
            + "}}, {{type: Pods, metric: 'vllm:kv_cache_usage_perc', average_value: " + kv + "}}]")


SWEEPS: tuple[Sweep, ...] = (
    Sweep("coldstart", "cold start (s)", (30, 60, 120), ("cluster.variants.0.startup_s={v}",), BOTH_WVA + ("hpa",)),
    Sweep("scrape", "scrape interval (s)", (5, 15, 30), ("metrics.scrape_interval_s={v}",), BOTH_WVA + ("hpa",)),
    # autoscalers.0 is wva, autoscalers.2 wva-headroom in physical-validation.yaml
    Sweep("gammakv", "WVA gamma_kv", (0.1, 0.2, 0.3), ("autoscalers.0.gamma_kv={v}", "autoscalers.2.gamma_kv={v}"),
          BOTH_WVA),
    Sweep("hpaqueue", "HPA target mean queue depth", (2, 3, 5), (_hpa_metrics("{v}", "0.5"),), ("hpa",)),
    Sweep("hpakv", "HPA target mean KV usage", (0.3, 0.5, 0.7), (_hpa_metrics("3", "{v}"),), ("hpa",)),
)


def _fmt(v: Any) -> str:
    return str(v).replace(".", "p")


def sensitivity_plans(seeds: list[int], overrides: list[str]) -> list[RunPlan]:
    raw = read_yaml(PHYSICAL)
    plans: list[RunPlan] = []
    for sw in SWEEPS:
        for v in sw.values:
            for rate in SENSITIVITY_RATES:
                sets = [o.format(v=v) for o in sw.overrides]
                sets += [f"workload.arrivals.rate_rps={rate}", f"name=sens-{sw.param}-{_fmt(v)}", *overrides]
                sc = scenario_from_data(apply_overrides(raw, sets, where=str(PHYSICAL)), str(PHYSICAL), PHYSICAL.parent)
                plans += plans_for_scenario(sc, list(sw.autoscalers), ("rate", "workload.arrivals.rate_rps", rate),
                                            seeds)
    return plans


def hetero_plans(seeds: list[int], overrides: list[str]) -> list[RunPlan]:
    raw = apply_overrides(read_yaml(HETERO), overrides, where=str(HETERO))
    sc = scenario_from_data(raw, str(HETERO), HETERO.parent)
    spec, _ = load_suite(PAPER_SUITE, overrides)
    return plans_for_scenario(sc, spec.autoscalers, None, seeds)  # the paper suite's autoscalers


def paper_plans(seeds: list[int], sensitivity: bool = True, hetero: bool = True,
                overrides: list[str] | None = None) -> list[RunPlan]:
    ov = list(overrides or [])
    _, plans = load_suite(PAPER_SUITE, ov, seeds=seeds)
    if sensitivity:
        plans += sensitivity_plans(seeds, ov)
    if hetero:
        plans += hetero_plans(seeds, ov)
    return plans
