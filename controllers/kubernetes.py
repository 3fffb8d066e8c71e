"""``kubernetes``: the user's own Kubernetes objects as the autoscaler.

A scenario lists YAML files (an ``autoscaling/v2`` HorizontalPodAutoscaler
with its prometheus-adapter rules, a KEDA ScaledObject, a PrometheusRule, the
project's VariantAutoscaling CR); the harness (harness/objects/) reads them
when the scenario loads and fills ``targets`` with one translated config per
object: an ``HPAConfig`` whose metrics carry the PromQL the adapter would
send, a ``KEDAConfig`` whose triggers are the object's queries, or one shared
``WVAConfig`` for the VariantAutoscalings. This module runs them: every
object is its own policy instance (its own stabilisation history, cooldown,
fallback counter), deciding on a view that holds only its target variant
with the object's replica bounds (``minReplicas`` / ``maxReplicas`` of the
object, which is what the real controller enforces). The policies are the
built-in ones, so a user object and the equivalent preset decide alike; the
only difference is that the metric is read by evaluating the object's PromQL
through ``view.metrics.query``.

A variant no object targets is never scaled, as on a cluster. Each object
policy keeps its own period (15 s HPA sync, WVA's 30 s cycle); this policy
runs at the shortest and calls each one when it is due.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, model_validator

from scalearena.contracts.limits import StrictSpec
from scalearena.contracts.tunable import Tunable
from scalearena.controllers.base import (
    AutoscalerBase,
    AutoscalerConfig,
    ClusterView,
    Decision,
    Reason,
    VariantView,
)
from scalearena.controllers.hpa import HPA, HPAConfig
from scalearena.controllers.keda import KEDA, KEDAConfig
from scalearena.controllers.wva.controller import WVA, WVAConfig

TargetConfig = Annotated[HPAConfig | KEDAConfig | WVAConfig, Field(discriminator="kind")]


class ObjectTarget(StrictSpec):
    """One object translated: which variant it scales, with what, within which bounds."""

    variant: str = Field(description="The scenario variant its scaleTargetRef names.")
    source: str = Field(description="Where it came from: file and Kind/name.")
    autoscaler: TargetConfig = Field(description="The built-in policy config the object translates to.")
    min_replicas: int | None = Field(default=None, ge=0, description="The object's minimum replicas.")
    max_replicas: int | None = Field(default=None, ge=1, description="The object's maximum replicas.")
    cost: float | None = Field(default=None, gt=0, description="VariantAutoscaling variantCost.")


class EnvTune(StrictSpec):
    """The range ``scalearena tune`` searches for one ``${VAR}`` placeholder of the objects."""

    low: float | None = Field(default=None, description="Lowest value (with high).")
    high: float | None = Field(default=None, description="Highest value (with low).")
    log: bool = Field(default=False, description="Search on a log scale (low > 0).")
    type: Literal["float", "int"] = Field(default="float", description="Number kind written into the placeholder.")
    choices: list[str] | None = Field(default=None, min_length=2, description="Values to pick from, instead of a range.")

    @model_validator(mode="after")
    def _one_form(self) -> EnvTune:
        if (self.choices is None) == (self.low is None or self.high is None):
            raise ValueError("set low and high, or choices")
        if self.low is not None and self.high is not None and not self.low < self.high:
            raise ValueError(f"low {self.low:g} must be below high {self.high:g}")
        if self.log and (self.low is None or self.low <= 0):
            raise ValueError("a log scale needs low > 0")
        return self

    def tunable(self, var: str, current: str) -> Tunable:
        if self.choices is not None:
            return Tunable(f"env.{var}", "categorical", current, choices=tuple(self.choices),
                           description=f"${{{var}}} in the objects")
        value: float = int(current) if self.type == "int" else float(current)
        low, high = self.low, self.high
        if self.type == "int" and low is not None and high is not None:  # ends written as "0", not "0.0"
            low, high = int(low), int(high)
        return Tunable(f"env.{var}", self.type, value, low=low, high=high, log=self.log,
                       description=f"${{{var}}} in the objects")


class KubernetesConfig(AutoscalerConfig):
    kind: Literal["kubernetes"] = Field(
        default="kubernetes", description="Your own Kubernetes objects (HPA, ScaledObject, VariantAutoscaling).")
    objects: list[str] = Field(
        min_length=1, description="YAML files of Kubernetes objects and Prometheus rules, relative to the scenario.")
    env: dict[str, str] = Field(
        default_factory=dict, description="Values for ${VAR} / $VAR placeholders in the files (envsubst).")
    deployments: dict[str, str] = Field(
        default_factory=dict, description="Your Deployment names onto the scenario's variants (DEPLOYMENT: VARIANT; "
        "`--target`): scaleTargetRef.name and deployment=\"...\" matchers naming one are rewritten to the variant.")
    model_names: dict[str, str] = Field(
        default_factory=dict, description="The model names your queries select onto the scenario's models (SERVED: "
        "MODEL; `--model-name`): model_name matchers, matchLabels and modelID naming one are rewritten. The "
        "objects' own namespace always maps onto the scenario's (harness/objects/mapping.py).")
    epp_names: dict[str, str] = Field(
        default_factory=dict, description="Your EPP service / InferencePool names onto the scenario's models (NAME: "
        "MODEL; `--epp`): service and inference_pool matchers naming one select that model's EPP.")
    tune: dict[str, EnvTune] = Field(
        default_factory=dict, description="Placeholders `scalearena tune` may search, by env key, with their range "
        "(e.g. THETA_UP: {low: 0.4, high: 0.8}); the env value is the default.")
    targets: list[ObjectTarget] = Field(
        default_factory=list, description="Filled in from `objects` when the scenario loads; not written by hand.")
    rule_groups: list[dict[str, Any]] = Field(
        default_factory=list, description="Prometheus rule groups from the objects; filled in when the scenario "
        "loads and evaluated by the metrics source.")


    @model_validator(mode="after")
    def _tune_names_env(self) -> KubernetesConfig:
        for var, spec in self.tune.items():
            if var not in self.env:
                raise ValueError(f"tune: {var} is not a key of env (its value is the default)")
            if spec.choices is None:
                try:
                    value = int(self.env[var]) if spec.type == "int" else float(self.env[var])
                except ValueError:
                    raise ValueError(f"tune: env {var} = {self.env[var]!r} is not a {spec.type}") from None
                if not (spec.low or 0) <= value <= (spec.high or 0):
                    raise ValueError(f"tune: env {var} = {value:g} lies outside {spec.low:g} .. {spec.high:g}")
        return self

    def tunables(self) -> list[Tunable]:
        """The ``${VAR}`` placeholders listed under ``tune``, set through ``env``."""
        return [spec.tunable(var, self.env[var]) for var, spec in self.tune.items()]


@dataclass
class _Unit:
    policy: AutoscalerBase
    targets: dict[str, ObjectTarget]  # variant -> its object
    next_due: float | None = None


def _restrict(view: ClusterView, targets: dict[str, ObjectTarget]) -> ClusterView:
    def bounded(v: VariantView) -> VariantView:
        t = targets[v.name]
        return replace(v, min_replicas=v.min_replicas if t.min_replicas is None else t.min_replicas,
                       max_replicas=v.max_replicas if t.max_replicas is None else t.max_replicas,
                       cost=v.cost if t.cost is None else t.cost)
    return replace(view, variants=tuple(bounded(v) for v in view.variants if v.name in targets))


class Kubernetes(AutoscalerBase):
    kind: ClassVar[str] = "kubernetes"
    config: KubernetesConfig

    def __init__(self, config: KubernetesConfig) -> None:
        super().__init__(config)
        self._units: list[_Unit] = []
        wva: dict[str, ObjectTarget] = {}
        for t in config.targets:
            a = t.autoscaler
            if isinstance(a, WVAConfig):
                wva[t.variant] = t
            else:
                self._units.append(_Unit(HPA(a) if isinstance(a, HPAConfig) else KEDA(a), {t.variant: t}))
        if wva:
            first = next(iter(wva.values())).autoscaler
            assert isinstance(first, WVAConfig)
            self._units.append(_Unit(WVA(first), wva))
        fast = [u.policy.fast_period_s for u in self._units if u.policy.fast_period_s is not None]
        self.fast_period_s = min(fast) if fast else None
        self.hpa_sync = bool(self._units) and all(u.policy.hpa_sync for u in self._units)

    @property
    def period_s(self) -> float:
        return min((u.policy.period_s for u in self._units), default=15.0)

    def decide(self, now: float, view: ClusterView) -> list[Decision]:
        out: list[Decision] = []
        for u in self._units:
            if u.next_due is not None and now < u.next_due - 1e-9:
                continue
            u.next_due = now + u.policy.period_s
            out += self._tag(u, u.policy.decide(now, _restrict(view, u.targets)))
        return out

    def decide_fast(self, now: float, view: ClusterView) -> list[Decision]:
        out: list[Decision] = []
        for u in self._units:
            if u.policy.fast_period_s is not None:
                out += self._tag(u, u.policy.decide_fast(now, _restrict(view, u.targets)))
        return out

    @staticmethod
    def _tag(u: _Unit, decisions: list[Decision]) -> list[Decision]:
        """Each decision names the object that made it, first in its audit trail."""
        out = []
        for d in decisions:
            src = u.targets[d.variant].source
            why = Reason("object", f"decided by {src}", {"object": src})
            out.append(replace(d, reasons=(why, *d.reasons)))
        return out
