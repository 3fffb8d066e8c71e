"""A KEDA ``ScaledObject`` (keda.sh/v1alpha1) translated onto ``controllers.keda.KEDAConfig``.

The schema follows KEDA's ``ScaledObjectSpec`` (apis/keda/v1alpha1/scaledobject_types.go) for the
fields the operator reads, with its defaults: ``pollingInterval`` 30 s, ``cooldownPeriod`` 300 s,
``initialCooldownPeriod`` 0, ``minReplicaCount`` 0, ``maxReplicaCount`` 100. Only ``prometheus``
triggers are supported (``metadata.query``, ``threshold``, ``activationThreshold``,
``ignoreNullValues``; the connection fields are accepted and not used: the query goes to the
run's metrics source). Trigger metadata values are strings in KEDA and parsed here as KEDA does
(``strconv.ParseFloat``, ``strconv.ParseBool``). Unknown fields are errors.
"""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from scalearena.contracts.errors import UserError
from scalearena.contracts.limits import MAX_REPLICAS
from scalearena.controllers.keda import KEDAConfig
from scalearena.harness.config.schema_help import validated
from scalearena.harness.objects.hpa import HPABehavior, check_query, rules_of
from scalearena.harness.objects.load import Doc


class _M(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TargetRef(_M):
    apiVersion: str = ""
    kind: str = "Deployment"
    name: str
    envSourceContainerName: str | None = None


class PromMetadata(_M):
    serverAddress: str = ""
    query: str
    threshold: str | float
    activationThreshold: str | float = "0"
    ignoreNullValues: str | bool = "true"
    namespace: str | None = None
    customHeaders: str | None = None
    queryParameters: str | None = None
    unsafeSsl: str | bool | None = None
    authModes: str | None = None
    timeout: str | None = None


class TriggerSpec(_M):
    type: str
    name: str | None = None
    metadata: PromMetadata
    metricType: Literal["AverageValue", "Value"] = "AverageValue"
    useCachedMetrics: bool = False
    authenticationRef: dict[str, Any] | None = None


class FallbackSpec(_M):
    failureThreshold: int = Field(ge=0)
    replicas: int = Field(ge=0)
    behavior: Literal["static", "currentReplicas", "currentReplicasIfHigher", "currentReplicasIfLower"] = "static"


class HPAConfigSpec(_M):
    name: str | None = None
    behavior: HPABehavior | None = None


class ScalingModifiersSpec(_M):
    formula: str
    target: str | float
    activationTarget: str | float = "0"
    metricType: Literal["AverageValue", "Value"] = "AverageValue"


class Advanced(_M):
    restoreToOriginalReplicaCount: bool = False
    horizontalPodAutoscalerConfig: HPAConfigSpec | None = None
    scalingModifiers: ScalingModifiersSpec | None = None


class ScaledObjectSpec(_M):
    scaleTargetRef: TargetRef
    pollingInterval: int = Field(default=30, gt=0)
    cooldownPeriod: int = Field(default=300, ge=0)
    initialCooldownPeriod: int = Field(default=0, ge=0)
    idleReplicaCount: int | None = Field(default=None, ge=0, le=MAX_REPLICAS, strict=True)  # int32: no `true`
    minReplicaCount: int = Field(default=0, ge=0, le=MAX_REPLICAS, strict=True)
    maxReplicaCount: int = Field(default=100, ge=1, le=MAX_REPLICAS, strict=True)
    fallback: FallbackSpec | None = None
    advanced: Advanced | None = None
    triggers: list[TriggerSpec] = Field(min_length=1)


class ScaledObject(_M):
    apiVersion: str
    kind: str
    metadata: dict[str, Any] = Field(default_factory=dict)
    spec: ScaledObjectSpec
    status: dict[str, Any] | None = None


def _number(v: str | float, doc: Doc, path: str) -> float:
    try:
        return float(v)
    except ValueError:
        raise UserError(f"{path}: {v!r} is not a number", where=doc.where) from None


def _bool(v: str | bool, doc: Doc, path: str) -> bool:
    if isinstance(v, bool):
        return v
    if v.lower() in ("1", "t", "true"):
        return True
    if v.lower() in ("0", "f", "false"):
        return False
    raise UserError(f"{path}: {v!r} is not a boolean", where=doc.where)


def _trigger(t: TriggerSpec, doc: Doc, path: str) -> dict[str, Any]:
    if t.type != "prometheus":
        raise UserError(f"{path}.type: trigger type {t.type!r} is not supported", where=doc.where,
                        expected="prometheus")
    md = t.metadata
    out: dict[str, Any] = {
        "query": check_query(md.query, doc, f"{path}.metadata.query"),
        "threshold": _number(md.threshold, doc, f"{path}.metadata.threshold"),
        "activation_threshold": _number(md.activationThreshold, doc, f"{path}.metadata.activationThreshold"),
        "metric_type": t.metricType,
        "ignore_null_values": _bool(md.ignoreNullValues, doc, f"{path}.metadata.ignoreNullValues"),
    }
    if t.name is not None:
        out["name"] = t.name
    return out


def translate_scaled_object(doc: Doc) -> tuple[KEDAConfig, int, int]:
    """The KEDAConfig a ScaledObject runs as, with its minReplicaCount and maxReplicaCount."""
    spec = validated(ScaledObject, doc.data, doc.where).spec
    # KEDA's admission webhook (apis/keda/v1alpha1 CheckReplicaCountBoundsAreValid)
    if spec.minReplicaCount > spec.maxReplicaCount:
        raise UserError(f"spec.minReplicaCount: {spec.minReplicaCount} must be at most maxReplicaCount "
                        f"{spec.maxReplicaCount}", where=doc.where)
    if spec.idleReplicaCount is not None and spec.idleReplicaCount >= spec.minReplicaCount:
        raise UserError(f"spec.idleReplicaCount: {spec.idleReplicaCount} must be less than minReplicaCount "
                        f"{spec.minReplicaCount}", where=doc.where)
    data: dict[str, Any] = {
        "kind": "keda", "name": "keda", "polling_interval_s": float(spec.pollingInterval),
        "cooldown_period_s": float(spec.cooldownPeriod),
        "initial_cooldown_period_s": float(spec.initialCooldownPeriod),
        "idle_replica_count": spec.idleReplicaCount,
        "triggers": [_trigger(t, doc, f"spec.triggers.{i}") for i, t in enumerate(spec.triggers)],
    }
    if spec.fallback is not None:
        f = spec.fallback
        data["fallback"] = {"failure_threshold": f.failureThreshold, "replicas": f.replicas, "behavior": f.behavior}
    adv = spec.advanced
    if adv is not None and adv.horizontalPodAutoscalerConfig is not None and \
            adv.horizontalPodAutoscalerConfig.behavior is not None:
        b = adv.horizontalPodAutoscalerConfig.behavior
        data["behavior"] = {"scale_up": rules_of(b.scaleUp).model_dump(),
                            "scale_down": rules_of(b.scaleDown).model_dump()}
    if adv is not None and adv.scalingModifiers is not None:
        sm = adv.scalingModifiers
        data["scaling_modifiers"] = {
            "formula": sm.formula, "target": _number(sm.target, doc, "spec.advanced.scalingModifiers.target"),
            "activation_target": _number(sm.activationTarget, doc, "spec.advanced.scalingModifiers.activationTarget"),
            "metric_type": sm.metricType}
    try:
        config = KEDAConfig.model_validate(data)
    except ValidationError as e:
        raise _as_object_error(e, doc) from None
    return config, spec.minReplicaCount, spec.maxReplicaCount


_SPEC_PATHS = {"triggers": "spec.triggers", "fallback": "spec.fallback", "scaling_modifiers":
               "spec.advanced.scalingModifiers", "behavior": "spec.advanced.horizontalPodAutoscalerConfig.behavior",
               "idle_replica_count": "spec.idleReplicaCount", "polling_interval_s": "spec.pollingInterval",
               "cooldown_period_s": "spec.cooldownPeriod", "initial_cooldown_period_s": "spec.initialCooldownPeriod"}


def _as_object_error(e: ValidationError, doc: Doc) -> UserError:
    """A KEDAConfig validation error told in the ScaledObject's own field path (a formula that does not
    parse, a trigger name the formula lacks, ...)."""
    first = e.errors(include_url=False)[0]
    loc = [str(p) for p in first["loc"] if "[" not in str(p)]
    msg = str(first["msg"]).removeprefix("Value error, ")
    if loc and loc[0] in _SPEC_PATHS:
        path = ".".join([_SPEC_PATHS[loc[0]], *loc[1:]])
    elif "formula" in msg:
        path = "spec.advanced.scalingModifiers.formula"
    else:
        path = "spec"
    return UserError(f"{path}: {msg}", where=doc.where)
