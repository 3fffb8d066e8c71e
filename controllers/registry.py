"""The explicit registry of bundled autoscalers.

One entry per autoscaler: its registry name, its config model (pydantic,
``kind`` literal) and its policy class. The registry refuses duplicate names.
The scenario schema builds its discriminated union of autoscaler configs from
this registry, so adding an autoscaler here is all it takes to make it
selectable from YAML and the CLI.
"""
from __future__ import annotations

from dataclasses import dataclass

from scalearena.contracts.errors import UserError
from scalearena.contracts.suggest import did_you_mean
from scalearena.controllers.base import Autoscaler, AutoscalerConfig, register_policies


@dataclass(frozen=True)
class Entry:
    name: str
    config: type[AutoscalerConfig]
    policy: type
    summary: str  # one line for the README / `scalearena autoscalers`
    runs_on_defaults: bool = True  # False: needs settings of the user's own (kubernetes: the object files)
    legacy: str = ""  # why it is kept though upstream deprecated it (shown by `scalearena autoscalers`)


class Registry:
    def __init__(self) -> None:
        self._entries: dict[str, Entry] = {}

    def register(self, name: str, config: type[AutoscalerConfig], policy: type, summary: str,
                 runs_on_defaults: bool = True, legacy: str = "") -> None:
        if name in self._entries:
            raise ValueError(f"autoscaler {name!r} registered twice")
        self._entries[name] = Entry(name, config, policy, summary, runs_on_defaults, legacy)

    def names(self) -> list[str]:
        """The autoscalers that run with their defaults (what "every autoscaler" means in a suite)."""
        return [n for n, e in self._entries.items() if e.runs_on_defaults]

    def entries(self) -> list[Entry]:
        return list(self._entries.values())

    def get(self, name: str) -> Entry:
        try:
            return self._entries[name]
        except KeyError:
            raise UserError(
                f"unknown autoscaler {name!r}{did_you_mean(name, self._entries)}",
                expected="one of " + ", ".join(sorted(self._entries)),
            ) from None

    def default_config(self, name: str) -> AutoscalerConfig:
        entry = self.get(name)
        if not entry.runs_on_defaults:
            raise UserError(f"autoscaler {name!r} has no defaults to run on",
                            expected=f"an entry under `autoscalers:` with kind: {name} and its settings")
        return entry.config(kind=name)

    def config_of(self, kind: str) -> type[AutoscalerConfig]:
        return self.get(kind).config

    def build(self, config: AutoscalerConfig) -> Autoscaler:
        return self.get(config.kind).policy(config)


WVA_LEGACY = ("deprecated upstream: llm-d-autoscaling (WVA's renamed repository) names v0.9 its last supported "
              "version and moved the code to legacy/, llm-d PR #2497 makes KEDA with the router's (EPP) metrics the "
              "architecture path (the llmd-* recipes here), and KServe is removing spec.scaling.wva; kept as the WVA "
              "paper's baseline and for the paper reproduction")


def _build_registry() -> Registry:
    from scalearena.controllers.apa import APA, APAConfig
    from scalearena.controllers.hpa import HPA, HPAConfig
    from scalearena.controllers.keda import KEDA, KEDAConfig
    from scalearena.controllers.kpa import KPA, KPAConfig
    from scalearena.controllers.kubernetes import Kubernetes, KubernetesConfig
    from scalearena.controllers.llmd import CONFIGS, RECIPES, RecipePolicy
    from scalearena.controllers.multimetric import MultiMetric, MultiMetricConfig
    from scalearena.controllers.oracle import Oracle, OracleConfig
    from scalearena.controllers.planner import Planner, PlannerConfig
    from scalearena.controllers.predictive import Predictive, PredictiveConfig
    from scalearena.controllers.static import Static, StaticConfig, StaticMeanConfig, StaticPeakConfig
    from scalearena.controllers.wva.controller import WVA, WVAConfig

    r = Registry()
    r.register("wva", WVAConfig, WVA, "legacy: llm-d Workload Variant Autoscaler: saturation analyzer, cost-aware "
               "variants", legacy=WVA_LEGACY)
    r.register("hpa", HPAConfig, HPA, "Kubernetes HPA (autoscaling/v2) on queue depth and KV usage")
    r.register("keda", KEDAConfig, KEDA, "KEDA ScaledObject with a prometheus trigger over the generated HPA")
    r.register("multimetric", MultiMetricConfig, MultiMetric, "GPU-util EWMA + queue + KV + p99 rules A-D")
    r.register("kpa", KPAConfig, KPA, "Knative Pod Autoscaler: stable/panic windows on concurrency")
    r.register("apa", APAConfig, APA, "AIBrix Autoscaling Pod Autoscaler: fluctuation-tolerance band, "
               "scale-up/down rates on a per-pod metric target")
    r.register("planner", PlannerConfig, Planner, "Dynamo-style SLA planner: predicted load / per-replica "
               "capacity at the TTFT and ITL targets, GPU budget; optional load-based +/-1")
    r.register("predictive", PredictiveConfig, Predictive, "any reactive autoscaler (default hpa) fed the load "
               "forecast one cold start ahead: its load signals scaled by predicted / observed rate")
    r.register("static", StaticConfig, Static, "fixed replica count (no autoscaling)")
    r.register("static-peak", StaticPeakConfig, Static, "fixed count sized by simulation: the fewest replicas "
               "meeting the SLO at the workload's peak rate")
    r.register("static-mean", StaticMeanConfig, Static, "fixed count sized by simulation: the fewest replicas "
               "meeting the SLO at the workload's mean rate")
    r.register("oracle", OracleConfig, Oracle, "hindsight-optimal provisioning with cold-start lead time")
    for name, recipe in RECIPES.items():  # llm-d's KEDA recipes: shipped objects (controllers/llmd.py)
        r.register(name, CONFIGS[name], RecipePolicy, recipe.summary)
    r.register("kubernetes", KubernetesConfig, Kubernetes, "your own HPA / ScaledObject / VariantAutoscaling YAML "
               "(docs/autoscalers.md: Bring your own objects)", runs_on_defaults=False)
    return r


REGISTRY = _build_registry()
register_policies(REGISTRY)  # for the policies that wrap another (controllers/predictive.py)
