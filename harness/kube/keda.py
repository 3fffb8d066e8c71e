"""The ``keda`` preset as the ScaledObject it stands for (keda.sh/v1alpha1).

Every field of ``controllers.keda.KEDAConfig`` that KEDA has is written to the object: the
trigger list (a signal trigger as the PromQL of ``KEDA_QUERIES`` over the scrape labels of
manifests/base, a PromQL trigger as written), ``activationThreshold``, ``ignoreNullValues``,
``metricType``, ``pollingInterval``, ``cooldownPeriod``, ``initialCooldownPeriod``,
``idleReplicaCount``, ``fallback`` with its ``behavior``, ``advanced.scalingModifiers`` and the
generated HPA's ``behavior``. So CLUSTER=kind|cluster applies the object the simulator's preset
models, and harness/objects/keda.py reads it back into the same config
(tests/integration/test_objects_sim.py holds the preset and its object to the same decisions).
The two fields KEDA cannot carry (``period_s``, ``tolerance``) are refused by knobs.py.
"""
from __future__ import annotations

from typing import Any

from scalearena.contracts.errors import UserError
from scalearena.contracts.series import ROUTER_QUEUE
from scalearena.controllers.base import AutoscalerConfig
from scalearena.controllers.keda import KEDAConfig
from scalearena.controllers.keda_scaler import Trigger
from scalearena.harness.config.scenario import Scenario, VariantSpec
from scalearena.harness.kube.knobs import hpa_behavior, plain
from scalearena.harness.kube.scenario import NAMESPACE

Obj = dict[str, Any]
PROMETHEUS = f"http://prometheus.{NAMESPACE}.svc:9090"
_GATEWAY = f"(sum({ROUTER_QUEUE}{{{{model_name=\"{{model}}\"}}}}) or vector(0))"
KEDA_QUERIES = {  # controllers/signals.py signal -> PromQL over the scrape labels of manifests/base
    "waiting_sum": "sum(vllm:num_requests_waiting{{{sel}}})",
    "running_sum": "sum(vllm:num_requests_running{{{sel}}})",
    "kv_sum": "sum(vllm:kv_cache_usage_perc{{{sel}}})",
    "kv_mean": "avg(vllm:kv_cache_usage_perc{{{sel}}})",
    "gateway_queue": f"sum({ROUTER_QUEUE}{{{{model_name=\"{{model}}\"}}}}) or vector(0)",
    "queue": "(sum(vllm:num_requests_waiting{{{sel}}}) or vector(0)) + " + _GATEWAY,
    "inflight_sum": "(sum(vllm:num_requests_waiting{{{sel}}}) or vector(0))"
                    " + (sum(vllm:num_requests_running{{{sel}}}) or vector(0)) + " + _GATEWAY,
}


def signal_query(signal: str, v: VariantSpec) -> str:
    """The PromQL a ``controllers/signals.py`` signal stands for, for variant ``v``."""
    if signal not in KEDA_QUERIES:
        raise UserError(f"keda query {signal!r} has no PromQL here", where="autoscalers[keda].query",
                        expected="one of " + ", ".join(KEDA_QUERIES))
    return KEDA_QUERIES[signal].format(sel=f'namespace="{NAMESPACE}",variant="{v.name}"', model=v.model)


def whole_s(x: float, field: str) -> int:
    """KEDA's intervals are whole seconds (int32 in the CRD): refuse what would be silently rounded."""
    if x != int(x) or x < 1 and field == "polling_interval_s":
        raise UserError(f"{field} = {x:g} s cannot be written to a ScaledObject", where=f"autoscalers[keda].{field}",
                        expected="whole seconds (>= 1 for pollingInterval)")
    return int(x)


def _trigger(t: Trigger, v: VariantSpec, shorthand: bool) -> Obj:
    meta: Obj = {"serverAddress": PROMETHEUS, "query": signal_query(t.query, v) if t.is_signal else t.query,
                 "threshold": plain(t.threshold), "activationThreshold": plain(t.activation_threshold)}
    if not t.ignore_null_values:
        meta["ignoreNullValues"] = "false"
    out: Obj = {"type": "prometheus"}
    name = t.query.replace("_", "-") if shorthand else t.name
    if name:
        out["name"] = name
    return {**out, "metricType": t.metric_type, "metadata": meta}


def scaled_object(cfg: KEDAConfig, v: VariantSpec) -> Obj:
    """The ScaledObject of ``cfg`` for variant ``v`` (its Deployment is named after it)."""
    spec: Obj = {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": v.name},
                 "pollingInterval": whole_s(cfg.polling_interval_s, "polling_interval_s"),
                 "cooldownPeriod": whole_s(cfg.cooldown_period_s, "cooldown_period_s"),
                 "minReplicaCount": v.min_replicas, "maxReplicaCount": v.max_replicas}
    if cfg.initial_cooldown_period_s:
        spec["initialCooldownPeriod"] = whole_s(cfg.initial_cooldown_period_s, "initial_cooldown_period_s")
    if cfg.idle_replica_count is not None:
        spec["idleReplicaCount"] = cfg.idle_replica_count
    shorthand = cfg.triggers is None
    spec["triggers"] = [_trigger(t, v, shorthand) for t in cfg.trigger_list]
    if cfg.fallback is not None:
        fb = cfg.fallback
        spec["fallback"] = {"failureThreshold": fb.failure_threshold, "replicas": fb.replicas}
        if fb.behavior != "static":
            spec["fallback"]["behavior"] = fb.behavior
    advanced: Obj = {}
    if behavior := hpa_behavior(cfg.behavior):
        advanced["horizontalPodAutoscalerConfig"] = {"behavior": behavior}
    if (sm := cfg.scaling_modifiers) is not None:
        advanced["scalingModifiers"] = {"formula": sm.formula, "target": plain(sm.target),
                                        "activationTarget": plain(sm.activation_target), "metricType": sm.metric_type}
    if advanced:
        spec["advanced"] = advanced
    return {"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject",
            "metadata": {"name": v.name, "namespace": NAMESPACE, "labels": {"scalearena.io/variant": v.name}},
            "spec": spec}


def keda_objects(sc: Scenario, cfg: AutoscalerConfig) -> list[Obj]:
    """One ScaledObject per scenario variant."""
    assert isinstance(cfg, KEDAConfig)
    return [scaled_object(cfg, v) for v in sc.cluster.variants]
