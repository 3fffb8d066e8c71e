"""An ``autoscaling/v2`` HorizontalPodAutoscaler translated onto ``controllers.hpa.HPAConfig``.

The object's schema is modelled for the fields the HPA controller reads
(k8s.io/api autoscaling/v2 types.go); an unknown field under ``spec`` is an
error, so nothing the user wrote is silently ignored. Each metric becomes the
PromQL prometheus-adapter would send for it (harness/objects/adapter.py):
Pods and Resource metrics a per-pod query (``PodsMetric.query``), Object and
External metrics one value (``ExternalMetric.query``, type Object / External).
Targets are Kubernetes quantities (``500m``, ``2k``, ``1Gi``). API-server
defaults apply: ``minReplicas`` 1; no ``behavior`` stays no behavior, so the
controller's legacy path runs (``normalizeDesiredReplicas``), while a
``behavior`` with fields left out gets the v2 defaults for those fields.
Not modelled: target type Utilization (it needs container requests), the
ContainerResource type, and an empty ``metrics`` list (the API default, CPU
utilisation 80 %).
"""
from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from scalearena.contracts.errors import UserError
from scalearena.contracts.limits import MAX_MAGNITUDE, MAX_REPLICAS
from scalearena.controllers.hpa import HPAConfig
from scalearena.controllers.hpa.behavior import Behavior, ScalingPolicy, ScalingRules
from scalearena.controllers.hpa.engine import TARGET_PODS, ExternalMetric, PodsMetric
from scalearena.harness.config.schema_help import validated
from scalearena.harness.objects import adapter as ad
from scalearena.harness.objects.load import Doc
from scalearena.harness.promql import PromQLEngine, PromQLError

_SUFFIX = {"m": 1e-3, "": 1.0, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
           "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_QUANTITY = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$")


def parse_quantity(value: Any) -> float:
    """A Kubernetes resource.Quantity (``3``, ``500m``, ``1.5k``, ``2Gi``, ``1e3``) as a float."""
    if isinstance(value, bool):
        raise ValueError(f"not a quantity: {value!r}")
    if isinstance(value, int | float):
        return float(value)
    m = _QUANTITY.match(str(value).strip())
    if m is None:
        raise ValueError(f"not a Kubernetes quantity: {value!r} (e.g. 3, 500m, 1.5k, 2Gi)")
    return float(m.group(1)) * _SUFFIX[m.group(2) or ""]


class _M(BaseModel):
    model_config = ConfigDict(extra="forbid")


Quantity = float


class _Q(_M):
    @field_validator("*", mode="before")
    @classmethod
    def _quantities(cls, v: Any, info: Any) -> Any:
        if info.field_name in ("value", "averageValue", "tolerance") and v is not None:
            return parse_quantity(v)
        return v


class CrossRef(_M):
    apiVersion: str = ""
    kind: str
    name: str


class SelectorRequirement(_M):
    key: str
    operator: str  # In, NotIn, Exists, DoesNotExist: the adapter names any other (adapter.selector_matchers)
    values: list[str] | None = None


class LabelSelector(_M):
    """metav1.LabelSelector, typed as the API server types it: ``matchLabels: .nan`` reached the adapter's query
    builder as a float (an AttributeError, issue 31's fuzz); now a UserError naming the field."""

    matchLabels: dict[str, str] | None = None
    matchExpressions: list[SelectorRequirement] | None = None


class MetricId(_M):
    name: str
    selector: LabelSelector | None = None

    @property
    def selector_dict(self) -> dict[str, Any] | None:
        return self.selector.model_dump(exclude_none=True) if self.selector is not None else None


class Target(_Q):
    type: Literal["Value", "AverageValue", "Utilization"]
    # a Quantity is finite and within the project's number range: averageValue .inf or 1e308 reached the HPA's metric model (a ValidationError for ExternalMetric,
    # issue 31's fuzz); now refused here, naming the field
    value: Quantity | None = Field(default=None, gt=0, le=MAX_MAGNITUDE, allow_inf_nan=False)
    averageValue: Quantity | None = Field(default=None, gt=0, le=MAX_MAGNITUDE, allow_inf_nan=False)
    averageUtilization: int | None = None


class PodsSource(_M):
    metric: MetricId
    target: Target


class ObjectSource(_M):
    describedObject: CrossRef
    metric: MetricId
    target: Target


class ExternalSource(_M):
    metric: MetricId
    target: Target


class ResourceSource(_M):
    name: str
    target: Target


class MetricSource(_M):
    type: Literal["Pods", "Object", "External", "Resource"]
    pods: PodsSource | None = None
    object: ObjectSource | None = None
    external: ExternalSource | None = None
    resource: ResourceSource | None = None


class Policy(_M):
    type: Literal["Pods", "Percent"]
    value: int = Field(gt=0)
    periodSeconds: int = Field(gt=0, le=1800)


class Rules(_Q):
    stabilizationWindowSeconds: int | None = Field(default=None, ge=0, le=3600)
    selectPolicy: Literal["Max", "Min", "Disabled"] | None = None
    policies: list[Policy] | None = None
    tolerance: Quantity | None = Field(default=None, ge=0)


class HPABehavior(_M):
    scaleUp: Rules | None = None
    scaleDown: Rules | None = None


class HPASpec(_M):
    # int32 fields the API server refuses as anything but an integer (pydantic's lax mode read `true` as 1)
    scaleTargetRef: CrossRef
    minReplicas: int | None = Field(default=None, ge=0, le=MAX_REPLICAS, strict=True)
    maxReplicas: int = Field(ge=1, le=MAX_REPLICAS, strict=True)
    metrics: list[MetricSource] = Field(default_factory=list)
    behavior: HPABehavior | None = None

    @model_validator(mode="after")
    def _bounds(self) -> HPASpec:
        check_replica_range(self.minReplicas, self.maxReplicas)
        return self


def check_replica_range(lo: int | None, hi: int | None) -> None:
    """``maxReplicas`` below ``minReplicas`` is refused, in the API server's words (k8s.io/kubernetes
    pkg/apis/autoscaling/validation validateHorizontalPodAutoscalerSpec; the VariantAutoscaling CR alike)."""
    if lo is not None and hi is not None and hi < lo:
        raise ValueError(f"maxReplicas {hi}: must be greater than or equal to minReplicas ({lo})")


class HPAObject(BaseModel):
    model_config = ConfigDict(extra="forbid")
    apiVersion: str
    kind: str
    metadata: dict[str, Any] = Field(default_factory=dict)
    spec: HPASpec
    status: dict[str, Any] | None = None


def rules_of(r: Rules | None) -> ScalingRules:
    if r is None:
        return ScalingRules()
    policies = [ScalingPolicy(type=p.type, value=p.value, period_seconds=p.periodSeconds) for p in r.policies or []]
    return ScalingRules(stabilization_window_seconds=r.stabilizationWindowSeconds, select_policy=r.selectPolicy,
                        policies=policies or None, tolerance=r.tolerance)


def check_query(query: str, doc: Doc, path: str) -> str:
    """A generated or written query the engine can evaluate; else a UserError with its position."""
    try:
        PromQLEngine.check(query.replace(TARGET_PODS, "x"))
    except PromQLError as e:
        at = f" at character {e.position}" if e.position is not None else ""
        raise UserError(f"{path}: {e.message}{at} of {query!r}", where=doc.where) from None
    return query


def _average(m: MetricSource, t: Target, doc: Doc, path: str, allowed: tuple[str, ...]) -> None:
    if t.type not in allowed:
        why = " (needs container resource requests, which scalearena does not model)" \
            if t.type == "Utilization" else ""
        raise UserError(f"{path}.target.type: {t.type} is not supported for a {m.type} metric{why}",
                        where=doc.where, expected=" or ".join(allowed))
    field = "value" if t.type == "Value" else "averageValue"
    if getattr(t, field) is None:
        raise UserError(f"{path}.target.{field}: required for target type {t.type}", where=doc.where)


def translate_metric(m: MetricSource, cfg: ad.AdapterConfig, ns: str, doc: Doc, path: str,
                     recorded: list[str]) -> PodsMetric | ExternalMetric:
    src = getattr(m, m.type.lower())
    if src is None:
        raise UserError(f"{path}.{m.type.lower()}: required for type {m.type}", where=doc.where)
    path = f"{path}.{m.type.lower()}"
    t: Target = src.target
    try:
        if m.type == "Resource":
            _average(m, t, doc, path, ("AverageValue",))
            rule = getattr(cfg.resourceRules, src.name, None) if cfg.resourceRules else None
            if rule is None:
                raise UserError(f"{path}.name: no prometheus-adapter resourceRules.{src.name} for this Resource "
                                "metric", where=doc.where, expected="the adapter config among the objects")
            q = check_query(ad.resource_query(rule, ns), doc, path)
            return PodsMetric(type="Pods", query=q, name=src.name, pod_label=ad.pod_label(rule.resources),
                              average_value=t.averageValue)
        rules = cfg.externalRules if m.type == "External" else cfg.rules
        found = ad.find_rule(rules, src.metric.name, recorded)
        if found is None:
            which = "externalRules" if m.type == "External" else "rules"
            raise UserError(f"{path}.metric.name: no prometheus-adapter {which} entry serves {src.metric.name!r}",
                            where=doc.where, expected="the adapter config (rules file or ConfigMap) among the objects")
        rule, series = found
        if m.type == "Pods":
            _average(m, t, doc, path, ("AverageValue",))
            q = check_query(ad.pods_query(rule, series, ns, src.metric.selector_dict), doc, path)
            return PodsMetric(type="Pods", query=q, name=src.metric.name, pod_label=ad.pod_label(rule.resources),
                              average_value=t.averageValue)
        _average(m, t, doc, path, ("Value", "AverageValue"))
        if m.type == "Object":
            obj = src.describedObject
            group = obj.apiVersion.split("/")[0] if "/" in obj.apiVersion else ""
            raw = ad.custom_query(rule, series, ns, obj.kind, obj.name, src.metric.selector_dict, regex=False, group=group)
        else:
            raw = ad.external_query(rule, series, ns, src.metric.selector_dict)
    except ValueError as e:
        raise UserError(f"{path}: {e}", where=doc.where) from None
    target = {"value": t.value} if t.type == "Value" else {"average_value": t.averageValue}
    return ExternalMetric(type=m.type, query=check_query(raw, doc, path), name=src.metric.name, **target)


def translate_hpa(doc: Doc, cfg: ad.AdapterConfig, recorded: list[str]) -> tuple[HPAObject, HPAConfig]:
    """The object, validated, and the HPAConfig it runs as."""
    obj = validated(HPAObject, doc.data, doc.where)
    spec = obj.spec
    if not spec.metrics:
        raise UserError("spec.metrics: empty (the API server would default to CPU utilisation 80 %, which needs "
                        "container requests scalearena does not model)", where=doc.where, expected="at least one metric")
    ns = str(obj.metadata.get("namespace") or "scalearena")
    metrics = [translate_metric(m, cfg, ns, doc, f"spec.metrics.{i}", recorded) for i, m in enumerate(spec.metrics)]
    behavior = None
    if spec.behavior is not None:
        behavior = Behavior(scale_up=rules_of(spec.behavior.scaleUp), scale_down=rules_of(spec.behavior.scaleDown))
    lo = 1 if spec.minReplicas is None else spec.minReplicas
    config = HPAConfig(name=_label(doc.name), metrics=metrics, behavior=behavior, scale_to_zero=lo == 0)
    return obj, config


def _label(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "-", name).lstrip("-_.") or "object"
