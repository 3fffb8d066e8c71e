"""The API server's semantic rules for the objects scalearena renders, checked before anything is applied.

Schema validation (kubernetes-validate, the CRD schemas) says a field exists and has
the right type; the API server then applies semantic rules that a schema cannot
express, and rejects the whole apply. exp2's ``va-h100`` HPA with ``minReplicas: 0``
and only Pods metrics passed every schema check and would have been refused on
the first real run. These rules are encoded here, each with its upstream source,
so ``render``, the backend's ``plan`` and the unit tests reject such objects offline:

* HorizontalPodAutoscaler: kubernetes/kubernetes
  ``pkg/apis/autoscaling/validation/validation.go`` — ``ValidateHorizontalPodAutoscalerSpec``
  (minReplicas lower bound 0 only with the HPAScaleToZero gate, maxReplicas > 0 and
  >= minReplicas), ``validateMetrics`` (minReplicas 0 needs an Object or External
  metric), ``validateMetricSpec`` (the populated source matches ``type``),
  ``validateMetricTarget`` (value / averageValue positive, averageUtilization >= 1),
  ``validatePodsSource`` (averageValue required), ``validateExternalSource`` (value
  or averageValue, not both), ``validateScalingRules`` (stabilizationWindowSeconds
  in [0, 3600], selectPolicy Max|Min|Disabled, at least one policy when the list is
  given, tolerance >= 0) and ``validateScalingPolicy`` (type Pods|Percent, value > 0,
  periodSeconds in (0, 1800]).
* KEDA ScaledObject: kedacore/keda ``apis/keda/v1alpha1/scaledobject_webhook.go``
  and ``scaledobject_types.go`` — minReplicaCount <= maxReplicaCount, fallback only
  with AverageValue metric types, at least one trigger, unique trigger names; the
  prometheus scaler parses ``threshold`` as a float (> 0 for the HPA target).
* Quantities (resources, metric targets) parse as Kubernetes quantities
  (``kubernetes.utils.parse_quantity``, the client's port of apimachinery's parser).

Only the rules that can fail for objects rendered from a scenario are encoded.
"""
from __future__ import annotations

from decimal import Decimal
from typing import Any

from kubernetes.utils import parse_quantity

from scalearena.contracts.errors import UserError

Obj = dict[str, Any]
MAX_STABILIZATION_WINDOW_S = 3600  # validation.go MaxStabilizationWindowSeconds
MAX_PERIOD_S = 1800  # validation.go MaxPeriodSeconds
METRIC_SOURCES = {"Object": "object", "Pods": "pods", "Resource": "resource", "External": "external",
                  "ContainerResource": "containerResource"}


def _quantity(value: Any) -> Decimal | None:
    try:
        return Decimal(parse_quantity(value))
    except (ValueError, TypeError, ArithmeticError):
        return None


def _target_errors(t: dict[str, Any], path: str) -> list[str]:
    errs = []
    if t.get("type") not in ("Utilization", "Value", "AverageValue"):
        errs.append(f"{path}.type: must be either Utilization, Value, or AverageValue")
    for key in ("value", "averageValue"):
        if key in t:
            q = _quantity(t[key])
            if q is None or q <= 0:
                errs.append(f"{path}.{key}: {t[key]!r} must be positive")
    if "averageUtilization" in t and t["averageUtilization"] < 1:
        errs.append(f"{path}.averageUtilization: must be greater than 0")
    return errs


def _metric_errors(m: dict[str, Any], path: str) -> list[str]:
    kind = m.get("type")
    if kind not in METRIC_SOURCES:
        return [f"{path}.type: {kind!r} not supported"]
    errs = [f"{path}.{src}: must populate the given metric source only"
            for src in METRIC_SOURCES.values() if src in m and src != METRIC_SOURCES[kind]]
    source = m.get(METRIC_SOURCES[kind])
    if source is None:
        return errs + [f"{path}.{METRIC_SOURCES[kind]}: must populate information for the given metric source"]
    target = source.get("target", {})
    errs += _target_errors(target, f"{path}.{METRIC_SOURCES[kind]}.target")
    if kind == "Pods" and "averageValue" not in target:
        errs.append(f"{path}.pods.target.averageValue: must specify a positive target averageValue")
    if kind in ("External", "Object"):
        if "value" not in target and "averageValue" not in target:
            errs.append(f"{path}.{METRIC_SOURCES[kind]}.target.averageValue: must set either a target value "
                        "or averageValue")
        if kind == "External" and "value" in target and "averageValue" in target:
            errs.append(f"{path}.external.target.value: may not set both a target value and a per-pod target")
    return errs


def _rules_errors(rules: dict[str, Any], path: str) -> list[str]:
    errs = []
    w = rules.get("stabilizationWindowSeconds")
    if w is not None and not 0 <= w <= MAX_STABILIZATION_WINDOW_S:
        errs.append(f"{path}.stabilizationWindowSeconds: {w} must be in [0, {MAX_STABILIZATION_WINDOW_S}]")
    if rules.get("selectPolicy", "Max") not in ("Max", "Min", "Disabled"):
        errs.append(f"{path}.selectPolicy: {rules['selectPolicy']!r} not supported (Max, Min, Disabled)")
    if "policies" in rules and not rules["policies"]:
        errs.append(f"{path}.policies: must specify at least one Policy")
    for i, p in enumerate(rules.get("policies") or []):
        pp = f"{path}.policies[{i}]"
        if p.get("type") not in ("Pods", "Percent"):
            errs.append(f"{pp}.type: {p.get('type')!r} not supported (Pods, Percent)")
        if not p.get("value", 0) > 0:
            errs.append(f"{pp}.value: must be greater than zero")
        if not 0 < p.get("periodSeconds", 0) <= MAX_PERIOD_S:
            errs.append(f"{pp}.periodSeconds: must be in (0, {MAX_PERIOD_S}]")
    if "tolerance" in rules:
        q = _quantity(rules["tolerance"])
        if q is None or q < 0:
            errs.append(f"{path}.tolerance: {rules['tolerance']!r} must be greater than or equal to 0")
    return errs


def hpa_errors(spec: dict[str, Any], scale_to_zero_gate: bool = True) -> list[str]:
    errs = []
    lo = 0 if scale_to_zero_gate else 1
    mn, mx = spec.get("minReplicas", 1), spec.get("maxReplicas", 0)
    if mn < lo:
        errs.append(f"spec.minReplicas: {mn} must be greater than or equal to {lo}")
    if mx < 1:
        errs.append(f"spec.maxReplicas: {mx} must be greater than 0")
    elif mx < mn:
        errs.append(f"spec.maxReplicas: {mx} must be greater than or equal to `minReplicas`")
    metrics = spec.get("metrics") or []
    for i, m in enumerate(metrics):
        errs += _metric_errors(m, f"spec.metrics[{i}]")
    if mn == 0 and not any(m.get("type") in ("Object", "External") for m in metrics):
        errs.append("spec.metrics: must specify at least one Object or External metric to support scaling "
                    "to zero replicas")
    for direction in ("scaleUp", "scaleDown"):
        rules = (spec.get("behavior") or {}).get(direction)
        if rules is not None:
            errs += _rules_errors(rules, f"spec.behavior.{direction}")
    return errs


def scaledobject_errors(spec: dict[str, Any]) -> list[str]:
    errs = []
    mn, mx = spec.get("minReplicaCount", 0), spec.get("maxReplicaCount", 100)
    if mn > mx:
        errs.append(f"spec.minReplicaCount: {mn} must be less than or equal to maxReplicaCount {mx}")
    triggers = spec.get("triggers") or []
    if not triggers:
        errs.append("spec.triggers: at least one trigger is required")
    names = [t.get("name") for t in triggers if t.get("name")]
    if len(names) != len(set(names)):
        errs.append("spec.triggers: trigger names must be unique")
    for i, t in enumerate(triggers):
        meta = t.get("metadata", {})
        if any(not isinstance(v, str) for v in meta.values()):
            errs.append(f"spec.triggers[{i}].metadata: every value must be a string")
        try:
            if float(meta.get("threshold", "1")) <= 0:
                errs.append(f"spec.triggers[{i}].metadata.threshold: must be positive")
        except ValueError:
            errs.append(f"spec.triggers[{i}].metadata.threshold: {meta['threshold']!r} is not a number")
        if spec.get("fallback") and t.get("metricType", "AverageValue") != "AverageValue":
            errs.append(f"spec.fallback: only supported when every trigger's metricType is AverageValue "
                        f"(trigger {i} is {t['metricType']})")
    fb = spec.get("fallback")
    if fb and (fb.get("failureThreshold", 0) < 0 or fb.get("replicas", 0) < 0):
        errs.append("spec.fallback: failureThreshold and replicas must be >= 0")
    return errs


def _pod_errors(pod: dict[str, Any], path: str) -> list[str]:
    errs = []
    for c in pod.get("containers", []):
        cp = f"{path}.containers[{c.get('name')}]"
        if any(not isinstance(a, str) for a in c.get("args", []) + c.get("command", [])):
            errs.append(f"{cp}.args: every argument must be a string")
        for part in ("requests", "limits"):
            for res, q in (c.get("resources", {}).get(part) or {}).items():
                if _quantity(q) is None:
                    errs.append(f"{cp}.resources.{part}.{res}: {q!r} is not a quantity")
    return errs


def object_errors(o: Obj, scale_to_zero_gate: bool = True) -> list[str]:
    """API-server semantic errors for one object, each as 'field.path: why'."""
    kind, spec = o.get("kind"), o.get("spec") or {}
    if kind == "HorizontalPodAutoscaler":
        return hpa_errors(spec, scale_to_zero_gate)
    if kind == "ScaledObject":
        return scaledobject_errors(spec)
    if kind in ("Deployment", "Job", "StatefulSet"):
        errs = [] if spec.get("replicas", 1) >= 0 else ["spec.replicas: must be >= 0"]
        return errs + _pod_errors(spec.get("template", {}).get("spec", {}), "spec.template.spec")
    return []


def check_objects(objs: list[Obj], scale_to_zero_gate: bool = True) -> None:
    """Raise one UserError naming every object the API server would reject, and why."""
    bad = [f"{o['kind']}/{o['metadata']['name']} {e}" for o in objs for e in object_errors(o, scale_to_zero_gate)]
    if bad:
        raise UserError("the API server would reject the rendered objects: " + "; ".join(bad),
                        where="rendered manifests", expected="objects valid under Kubernetes' semantic rules")
