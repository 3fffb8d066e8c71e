"""llm-d's autoscaling recipes as registered autoscalers: ``llmd-queue``, ``llmd-saturation``, ``llmd-queue-guard``,
``llmd-token``, ``llmd-token-pd``, ``llmd-slo``.

Each recipe is a set of Kubernetes objects shipped under manifests/autoscalers/llm-d/ (KEDA ScaledObjects, for
``llmd-slo`` also a PrometheusRule), written from the upstream guides (each file names its source and version).
A recipe config is a ``kubernetes`` config whose ``objects`` default to the recipe's files and whose ``env``
defaults to the recipe's tunable placeholders (thresholds, theta_up / theta_dn, windows), each with a documented
default and a ``tune`` range for ``scalearena tune``. The placeholders that describe the cluster (namespace,
model, target Deployment, replica bounds, SLOs, the peak prefill throughput) are filled from the scenario when it
loads (harness/objects/recipes.py), one instance of the objects per variant it scales; the policy that runs the
objects is the ``kubernetes`` one, so a recipe decides exactly as the same YAML would as a user's object.

Pure data and config models: no file is read here (controllers do no I/O).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import Field, create_model, model_validator

from scalearena.controllers.kubernetes import EnvTune, Kubernetes, KubernetesConfig


@dataclass(frozen=True)
class Tunable:
    """One ``${VAR}`` of a recipe that a user may set: its default and the range ``scalearena tune`` searches."""

    default: str
    low: float
    high: float
    meaning: str
    type: Literal["float", "int"] = "float"
    log: bool = False


@dataclass(frozen=True)
class Recipe:
    name: str
    files: tuple[str, ...]  # under manifests/autoscalers/llm-d/
    summary: str
    source: str  # upstream path and version, for `scalearena autoscalers` and the docs
    tunables: dict[str, Tunable] = field(default_factory=dict)
    needs: tuple[str, ...] = ()  # series the queries read (contracts/series.py names)
    optional: tuple[str, ...] = ()  # series read when present (an `or` falls back)
    roles: bool = False  # P/D: one instance per model over its prefill and decode variants
    prefill_peak: bool = False  # reads ${PEAK_PREFILL_TPS}, computed from the engine model


_QUEUE = Tunable("1", 0.25, 8, "queue depth per replica (threshold of the epp-queue-size trigger)", log=True)
_RUNNING = Tunable("16", 2, 64, "running requests per replica (threshold of epp-running-requests)", log=True)
_UP_W = Tunable("300", 0, 600, "scale-up stabilisation window, seconds", type="int")
_DOWN_W = Tunable("300", 0, 900, "scale-down stabilisation window, seconds", type="int")
_BACKLOG = Tunable("1.5", 0.25, 10, "seconds of prefill backlog tolerated per replica", log=True)
_KV = Tunable("0.8", 0.3, 1.0, "pods' worth of full KV cache per replica")
_EPP = "llm-d/llm-d guides/workload-autoscaling/keda-epp/optimized-baseline/overlays/k8s"
_TOKEN = "llm-d/llm-d guides/workload-autoscaling/keda-epp-token-aware"

RECIPES: dict[str, Recipe] = {r.name: r for r in (
    Recipe("llmd-queue", ("queue.yaml",), "llm-d KEDA+EPP recipe: EPP flow-control queue depth raced with running "
           "requests (targets 1 and 16 per replica)", f"{_EPP}/queue/scaledobject.yaml (main @ 057abb4)",
           {"QUEUE_PER_REPLICA": _QUEUE, "RUNNING_PER_REPLICA": _RUNNING, "SCALE_UP_WINDOW_S": _UP_W,
            "SCALE_DOWN_WINDOW_S": _DOWN_W},
           needs=("llm_d_epp_flow_control_queue_size", "llm_d_epp_request_running")),
    Recipe("llmd-saturation", ("saturation.yaml",), "llm-d KEDA+EPP recipe: EPP pool saturation (target 0.7) raced "
           "with running requests (16 per replica)", f"{_EPP}/saturation/scaledobject.yaml (main @ 321a7e8)",
           {"SATURATION_TARGET": Tunable("0.7", 0.3, 1.2, "pool saturation per replica (pool-saturation threshold)"),
            "RUNNING_PER_REPLICA": _RUNNING, "SCALE_UP_WINDOW_S": _UP_W, "SCALE_DOWN_WINDOW_S": _DOWN_W},
           needs=("llm_d_epp_flow_control_pool_saturation", "llm_d_epp_request_running")),
    Recipe("llmd-queue-guard", ("queue-guard.yaml",), "llm-d KEDA+EPP recipe: queue demand with the pending-replica "
           "discount formula (scalingModifiers) and a static fallback", f"{_EPP}/queue-guard/scaledobject.yaml "
           "(main @ b06ec63)",
           {"QUEUE_PER_REPLICA": _QUEUE, "RUNNING_PER_REPLICA": _RUNNING, "SCALE_DOWN_WINDOW_S": _DOWN_W,
            "FALLBACK_REPLICAS": Tunable("1", 0, 16, "replicas held once a trigger fails > 3 times", type="int")},
           needs=("llm_d_epp_flow_control_queue_size", "llm_d_epp_request_running",
                  "kube_deployment_status_replicas_unavailable", "kube_deployment_status_replicas")),
    Recipe("llmd-token", ("token.yaml",), "llm-d token-aware recipe (aggregated): prefill backlog seconds (EPP "
           "in-flight tokens / peak prefill throughput) raced with decode KV usage", f"{_TOKEN}/optimized-baseline/"
           "base/scaledobject.yaml (main @ 04c0115)",
           {"PREFILL_BACKLOG_S": _BACKLOG, "DECODE_KV_TARGET": _KV},
           needs=("llm_d_epp_inflight_tokens", "vllm:kv_cache_usage_perc"), prefill_peak=True),
    Recipe("llmd-token-pd", ("token-pd.yaml",), "llm-d token-aware recipe (P/D): prefill pool on backlog seconds, "
           "decode pool on KV usage, one ScaledObject each", f"{_TOKEN}/pd-disaggregation/base/"
           "{prefill,decode}-scaledobject.yaml (main @ 04c0115 / 56cb121)",
           {"PREFILL_BACKLOG_S": _BACKLOG, "DECODE_KV_TARGET": _KV},
           needs=("llm_d_epp_inflight_tokens", "vllm:kv_cache_usage_perc"), roles=True, prefill_peak=True),
    Recipe("llmd-slo", ("slo-rules.yaml", "slo.yaml"), "llm-d SLO-aware recipe: P90 TTFT/TPOT over the SLOs "
           "(recording rules), theta_up/theta_dn hysteresis with the r/n in-flight credit (formula)",
           "llm-d/llm-d guides/workload-autoscaling/README.slo-aware.md (@ d38c9f0), "
           "docs/architecture/advanced/autoscaling/slo-aware-keda.md",
           {"THETA_UP": Tunable("0.55", 0.3, 1.2, "saturation above which it scales up (credited)"),
            "THETA_DN": Tunable("0.40", 0.1, 0.8, "saturation below which it scales down"),
            "CLAMP": Tunable("2.0", 1.0, 5.0, "cap on the raw saturation per sample (must exceed THETA_UP)"),
            "QUANTILE": Tunable("0.9", 0.5, 0.99, "latency quantile compared with the SLOs")},
           needs=("llm_d_epp_request_ttft_seconds", "llm_d_epp_request_ntpot_seconds",
                  "kube_deployment_status_replicas", "kube_deployment_status_replicas_ready"),
           optional=("llm_d_epp_request_predicted_ttft_seconds", "llm_d_epp_request_predicted_tpot_seconds")),
)}
# SMOOTHING (45s) is a Prometheus duration, not a number: set it through env, it is not searched.
FIXED_DEFAULTS: dict[str, dict[str, str]] = {"llmd-slo": {"SMOOTHING": "45s"}}


class RecipeConfig(KubernetesConfig):
    """A ``kubernetes`` config whose objects are an llm-d recipe (``objects`` relative to manifests/autoscalers/llm-d)."""

    per_variant: bool = Field(default=True, description="Instantiate the objects once per variant they scale "
                              "(filled in from the scenario); false when the targets are already compiled.")
    derived: dict[str, str] = Field(default_factory=dict, description="Values computed for the scenario (the peak "
                                    "prefill throughput) and how; filled in when the scenario loads.")
    instances: list[dict[str, str]] = Field(default_factory=list, description="The placeholder values of each "
                                            "instance of the objects (one per variant); filled in when the scenario "
                                            "loads, and what kind/cluster render the objects with.")

    @property
    def recipe(self) -> Recipe:
        return RECIPES[self.kind]

    @model_validator(mode="before")
    @classmethod
    def _user_env_over_defaults(cls, data: Any) -> Any:
        """A user's ``env`` / ``tune`` entries are merged onto the recipe's defaults, not in place of them."""
        if not isinstance(data, dict):
            return data
        kind = data.get("kind", cls.model_fields["kind"].default)
        if kind not in RECIPES:
            return data
        env, tune = _defaults(RECIPES[kind])
        user_env, user_tune = data.get("env") or {}, data.get("tune") or {}
        if not isinstance(user_env, dict) or not isinstance(user_tune, dict):
            return data  # not a mapping: the field's own validation names it
        return {**data, "env": {**env, **user_env}, "tune": {**tune, **user_tune}}


def default_env(r: Recipe) -> dict[str, str]:
    """The placeholder values a recipe config starts from: its tunables' defaults and its fixed ones."""
    return _defaults(r)[0]


def _defaults(r: Recipe) -> tuple[dict[str, str], dict[str, EnvTune]]:
    env = {var: t.default for var, t in r.tunables.items()} | FIXED_DEFAULTS.get(r.name, {})
    tune = {var: EnvTune(low=t.low, high=t.high, log=t.log, type=t.type) for var, t in r.tunables.items()}
    return env, tune


def _config_class(r: Recipe) -> type[RecipeConfig]:
    env, tune = _defaults(r)
    fields: dict[str, Any] = {
        "kind": (Literal[r.name], Field(default=r.name, description=r.summary)),  # type: ignore[valid-type]
        "objects": (list[str], Field(default_factory=lambda: list(r.files), min_length=1,
                                     description="The recipe's files (under manifests/autoscalers/llm-d/, or paths "
                                     "to your own copies).")),
        "env": (dict[str, str], Field(default_factory=lambda: dict(env), description="Placeholder values: the "
                                      "recipe's tunables (defaults from the upstream guide); the cluster's own "
                                      "(namespace, model, target, bounds, SLOs) come from the scenario.")),
        "tune": (dict[str, EnvTune], Field(default_factory=lambda: dict(tune), description="Ranges `scalearena "
                                           "tune` searches for the tunables.")),
    }
    name = "".join(p.capitalize() for p in r.name.replace("-", "_").split("_")) + "Config"
    return create_model(name, __base__=RecipeConfig, __module__=__name__, __doc__=f"{r.summary} ({r.source}).",
                        **fields)


CONFIGS: dict[str, type[RecipeConfig]] = {name: _config_class(r) for name, r in RECIPES.items()}
globals().update({cls.__name__: cls for cls in CONFIGS.values()})  # module attributes: picklable for workers


class RecipePolicy(Kubernetes):
    """The ``kubernetes`` policy, under the recipe's kind."""

    def __init__(self, config: KubernetesConfig) -> None:
        super().__init__(config)
        self.kind = config.kind  # type: ignore[misc]
