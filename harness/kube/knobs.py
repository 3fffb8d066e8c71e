"""The same knobs everywhere: what a scenario sets for an autoscaler reaches the Kubernetes objects, or is refused.

A field the simulator honours but the rendered objects would drop makes a kind
run measure a different autoscaler than the sim run it is compared with (the
``wva-headroom`` plan used to run as plain ``wva``). So every config field is
either rendered (``behavior``, ``tolerance``, ``fallback``, the WVA loop
periods, ...) or, when it differs from its default, refused as bad input naming
the field and why the backend cannot honour it.

Upstream facts used:

* ``--horizontal-pod-autoscaler-sync-period`` (15 s) is a kube-controller-manager
  flag, one value per cluster: a per-autoscaler ``period_s`` cannot be set.
* Per-direction HPA ``tolerance`` (``spec.behavior.scaleUp|scaleDown.tolerance``)
  is alpha in Kubernetes v1.33 behind the ``HPAConfigurableTolerance`` feature
  gate (KEP-4951); manifests/kind/cluster.yaml enables it. Without the gate the
  API server drops the field, so CLUSTER=cluster needs it enabled too
  (docs/kubernetes.md).
* KEDA's ScaledObject CRD (v2.17/v2.18) has no ``tolerance`` under
  ``advanced.horizontalPodAutoscalerConfig.behavior``; its structural schema
  would prune it, so a non-default KEDA tolerance is refused.
"""
from __future__ import annotations

from typing import Any

from scalearena.contracts.errors import UserError
from scalearena.controllers.base import AutoscalerConfig

HPA_SYNC_PERIOD_S = 15.0  # kube-controller-manager default, cluster-wide
DEFAULT_TOLERANCE = 0.1  # --horizontal-pod-autoscaler-tolerance default

# per kind: fields that cannot reach the cluster, with why (refused when not at their default)
NOT_RENDERED: dict[str, dict[str, str]] = {
    "hpa": {"period_s": "the HPA sync period is the cluster-wide kube-controller-manager flag "
                        "--horizontal-pod-autoscaler-sync-period (15 s)"},
    "keda": {"period_s": "the generated HPA's sync period is the cluster-wide kube-controller-manager flag "
                         "--horizontal-pod-autoscaler-sync-period (15 s)",
             "tolerance": "KEDA's ScaledObject CRD has no behavior tolerance field (the API server prunes it)"},
    "wva": {"model_overrides": "per-model overrides are not rendered into the WVA ConfigMaps yet",
            "metric_window_s": "the in-cluster controller uses upstream's fixed 1m max_over_time window",
            "staleness_s": "the in-cluster controller uses its fixed staleness limit",
            "mode": "the in-cluster controller runs the unconstrained (per-model) optimiser only",
            "gpu_budget": "the in-cluster controller runs the unconstrained (per-model) optimiser only",
            "headroom": "upstream WVA's ConfigMaps have no headroom rule, so the in-cluster controller "
                        "cannot run it (wva-headroom would silently run as plain wva)"},
}


def refuse_unrendered(cfg: AutoscalerConfig, label: str | None = None) -> None:
    """Raise for every field of ``cfg`` that differs from its default but cannot reach the cluster."""
    rules = NOT_RENDERED.get(cfg.kind, {})
    if not rules:
        return
    default = type(cfg)().model_dump(mode="json")
    mine = cfg.model_dump(mode="json")
    bad = [(f, why) for f, why in rules.items() if mine.get(f) != default.get(f)]
    if bad:
        field, why = bad[0]
        raise UserError(f"{field} = {mine[field]!r} cannot be honoured on Kubernetes: {why}",
                        where=f"autoscalers[{label or getattr(cfg, 'label', cfg.kind)}].{field}",
                        expected=f"the default {default[field]!r} on CLUSTER=kind/cluster, or run it on sim/local"
                                 + (f" (also: {', '.join(f for f, _ in bad[1:])})" if len(bad) > 1 else ""))


def plain(x: float) -> str:
    """A number as plain decimal text, never in exponent form: Go's time.ParseDuration, the
    VariantAutoscaling CRD's ``variantCost`` pattern (``^\\d+(\\.\\d+)?$``) and YAML readers all
    reject ``1e-05`` or ``1e+06``, which is what ``f"{x:g}"`` writes for small and large values."""
    text = f"{x:.9f}".rstrip("0").rstrip(".")
    return text if text not in ("", "-0") else "0"


def prom_duration(seconds: float) -> str:
    """A Prometheus duration: whole units only (``[0-9]+(ms|s|m|h)``), so 7.5 s is written ``7500ms``."""
    ms = round(seconds * 1000)
    if ms < 1:
        raise UserError(f"{seconds!r} s is below Prometheus' 1 ms resolution", where="metrics.scrape_interval_s",
                        expected="at least 0.001")
    return f"{ms // 1000}s" if ms % 1000 == 0 else f"{ms}ms"


def quantity(x: float) -> str:
    """A Kubernetes quantity for a non-negative number: whole numbers plain, fractions in milli-units.

    Sub-milli values cannot be written in milli-units, so they use the exact decimal form ("0.0005").
    """
    if x == int(x):
        return str(int(x))
    milli = x * 1000
    if abs(milli - round(milli)) < 1e-9:
        return f"{int(round(milli))}m"
    return f"{x:.9f}".rstrip("0")


def hpa_behavior(behavior: Any, tolerance: float | None = None) -> dict[str, Any]:
    """controllers.hpa.behavior.Behavior -> autoscaling/v2 ``behavior`` (unset fields left to API defaults).

    ``tolerance`` (the config-wide one) fills each direction that does not set its own, only when it is
    not the cluster default 0.1 (so a default config needs no feature gate).
    """
    out: dict[str, Any] = {}
    for name, rules in (("scaleUp", behavior.scale_up), ("scaleDown", behavior.scale_down)):
        r: dict[str, Any] = {}
        if rules.stabilization_window_seconds is not None:
            r["stabilizationWindowSeconds"] = rules.stabilization_window_seconds
        if rules.select_policy is not None:
            r["selectPolicy"] = rules.select_policy
        if rules.policies:
            r["policies"] = [{"type": p.type, "value": p.value, "periodSeconds": p.period_seconds}
                             for p in rules.policies]
        tol = rules.tolerance if rules.tolerance is not None else tolerance
        if tol is not None and tol != DEFAULT_TOLERANCE:
            r["tolerance"] = quantity(tol)
        if r:
            out[name] = r
    return out


def refuse_lead(sc: Any, cfg: AutoscalerConfig, in_cluster: bool) -> None:
    """``control_lead_s`` sets the phase of the harness's own loops; a cluster's controllers (HPA, KEDA, WVA) begin
    when the run applies their objects, and the run measures that lead instead (kube/sampling.py)."""
    if in_cluster and sc.phases.control_lead_s:
        raise UserError(f"control_lead_s = {sc.phases.control_lead_s:g}: autoscaler {cfg.label!r} runs as the cluster's own "
                        "controllers, whose loops begin when the run applies their objects (the run measures that "
                        "lead and records it in summary.json as the event control_lead)", where="phases.control_lead_s",
                        expected="0 on CLUSTER=kind/kwok/cluster for an in-cluster autoscaler, or run it on sim/local")
