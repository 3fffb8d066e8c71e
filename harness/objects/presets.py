"""The built-in ``hpa`` preset written out as the objects it stands for.

``hpa_objects`` renders an ``HPAConfig`` as one ``autoscaling/v2``
HorizontalPodAutoscaler per variant plus the prometheus-adapter rules that
serve its Pods metrics (the rules of manifests/autoscalers/prometheus-adapter:
the latest sample per pod, the vLLM name with ``:`` replaced by ``_``).
Loaded back as a ``kind: kubernetes`` autoscaler they decide exactly as the
preset does (tests/integration/test_objects_sim.py): the preset is a
shorthand for these files. Named-signal External metrics have no PromQL of their own (the
gateway queue is not a series), so a preset using one is refused.
"""
from __future__ import annotations

from typing import Any

from scalearena.contracts.errors import UserError
from scalearena.controllers.hpa import HPAConfig
from scalearena.controllers.hpa.behavior import Behavior, ScalingRules, resolve

ADAPTER_QUERY = "max by (<<.GroupBy>>) (<<.Series>>{<<.LabelMatchers>>})"


def _api_name(series: str) -> str:
    return series.replace(":", "_")


def _quantity(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{round(x * 1000)}m"


def _rules(r: ScalingRules, up: bool, downscale_s: int) -> dict[str, Any]:
    """One direction with every default spelled out, as the API server stores it."""
    res = resolve(r, up, downscale_s)
    out: dict[str, Any] = {"stabilizationWindowSeconds": res.window_s, "selectPolicy": res.select,
                           "policies": [{"type": p.type, "value": p.value, "periodSeconds": p.period_seconds}
                                        for p in res.policies]}
    if r.tolerance is not None:
        out["tolerance"] = _quantity(r.tolerance)
    return out


def _behavior(b: Behavior, downscale_s: int) -> dict[str, Any]:
    return {"scaleUp": _rules(b.scale_up, True, downscale_s), "scaleDown": _rules(b.scale_down, False, downscale_s)}


def hpa_objects(cfg: HPAConfig, variants: list[tuple[str, int, int]], namespace: str = "scalearena") -> list[dict[str, Any]]:
    """The HPA objects (one per ``(variant, min, max)``) and the adapter config of an ``hpa`` preset."""
    metrics, series = [], []
    for m in cfg.metrics:
        if m.type != "Pods" or m.metric is None:
            raise UserError(f"hpa metric {m.type} {getattr(m, 'signal', None) or m.query}: only named Pods metrics "
                            "render as objects", expected="Pods metrics with `metric`")
        series.append(m.metric)
        metrics.append({"type": "Pods", "pods": {"metric": {"name": _api_name(m.metric)},
                                                 "target": {"type": "AverageValue",
                                                            "averageValue": _quantity(m.average_value)}}})
    if cfg.tolerance != 0.1:
        raise UserError(f"hpa tolerance {cfg.tolerance:g}: an object cannot set the controller's global "
                        "tolerance (0.1)", expected="behavior.scale_up/scale_down.tolerance instead")
    out: list[dict[str, Any]] = []
    for name, lo, hi in variants:
        spec: dict[str, Any] = {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
                                "minReplicas": lo if (cfg.scale_to_zero or lo > 0) else 1, "maxReplicas": hi,
                                "metrics": metrics}
        if cfg.behavior is not None:
            spec["behavior"] = _behavior(cfg.behavior, cfg.downscale_stabilization_s)
        out.append({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
                    "metadata": {"name": name, "namespace": namespace}, "spec": spec})
    rules = [{"seriesQuery": f'{s}{{namespace!="",pod!=""}}',
              "resources": {"overrides": {"namespace": {"resource": "namespace"}, "pod": {"resource": "pod"}}},
              "name": {"matches": f"^{s}$", "as": _api_name(s)}, "metricsQuery": ADAPTER_QUERY}
             for s in dict.fromkeys(series)]
    out.append({"rules": rules})
    return out
