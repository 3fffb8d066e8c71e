"""Bring your own autoscaler: Kubernetes objects read into the ``kubernetes`` autoscaler's config.

``compile_objects`` reads the files of one ``kind: kubernetes`` autoscaler
(load.py: envsubst, documents, kinds), translates each autoscaling object
onto the built-in policy that implements it (hpa.py: HorizontalPodAutoscaler
with prometheus-adapter's rules, adapter.py; keda.py: ScaledObject;
VariantAutoscaling here) and gathers the Prometheus rule groups, so the
scenario carries everything a run needs (controllers/kubernetes.py runs
it). ``scaleTargetRef.name`` names the Deployment, and the Deployment of a
scenario variant is named after the variant (as the kube backend creates it),
so the reference must be a variant's name; anything else is an error.
"""
from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from scalearena.contracts.errors import UserError
from scalearena.contracts.suggest import did_you_mean
from scalearena.controllers.kubernetes import KubernetesConfig, ObjectTarget
from scalearena.harness.objects.adapter import AdapterConfig
from scalearena.harness.objects.hpa import translate_hpa
from scalearena.harness.objects.keda import translate_scaled_object
from scalearena.harness.objects.load import Doc, check_env_used, load_documents
from scalearena.harness.objects.mapping import map_documents
from scalearena.harness.objects.va import variant_autoscaling
from scalearena.harness.promql.rules import RuleGroup, load_rule_groups

__all__ = ["bound_warnings", "check_mapping", "compile_documents", "compile_objects", "rule_groups"]


def compile_objects(cfg: KubernetesConfig, base_dir: Path | None, variants: dict[str, str]) -> KubernetesConfig:
    """``cfg`` with ``targets`` and ``rule_groups`` filled from its files; ``variants`` maps each scenario
    variant to its model. Every problem is a UserError naming the file, object and field."""
    check_mapping(cfg, variants)
    docs = map_documents(load_documents(cfg.objects, cfg.env, base_dir), cfg.deployments, cfg.model_names,
                         cfg.epp_names)
    compiled = compile_documents(cfg, docs, variants)
    check_env_used(set(cfg.env), cfg.objects, base_dir, f"autoscaler {cfg.label}")
    return compiled


def check_mapping(cfg: KubernetesConfig, variants: dict[str, str]) -> None:
    """Every ``deployments`` value is a variant and every ``model_names`` value a model the scenario serves."""
    where = f"autoscaler {cfg.label}"
    for dep, variant in cfg.deployments.items():
        if variant not in variants:
            raise UserError(f"deployments.{dep}: no variant {variant!r}{did_you_mean(variant, list(variants))}",
                            where=where, expected="a cluster.variants name: " + ", ".join(variants))
    models = list(dict.fromkeys(variants.values()))
    for field, mapping in (("model_names", cfg.model_names), ("epp_names", cfg.epp_names)):
        for name, model in mapping.items():
            if model not in models:
                raise UserError(f"{field}.{name}: no model {model!r}{did_you_mean(model, models)}",
                                where=where, expected="a model the scenario's variants serve: " + ", ".join(models))


def compile_documents(cfg: KubernetesConfig, docs: list[Doc], variants: dict[str, str]) -> KubernetesConfig:
    """``compile_objects`` over documents already read (a recipe reads its files once per variant). Rule groups
    that come twice with the same content (one per variant of a model) are kept once."""
    groups: list[RuleGroup] = []
    adapter = AdapterConfig()
    for d in docs:
        if d.category == "rules":
            groups += load_rule_groups(d.data, d.where)
        elif d.category == "adapter":
            adapter = _merge(adapter, _adapter(d))
    recorded = [r.record for g in groups for r in g.rules if r.record]
    targets: list[ObjectTarget] = []
    claimed: dict[str, str] = {}
    for d in docs:
        target = _translate(d, adapter, recorded, variants)
        if target is None:
            continue
        if target.variant in claimed:
            raise UserError(f"spec.scaleTargetRef.name: variant {target.variant!r} is already scaled by "
                            f"{claimed[target.variant]}; two autoscalers on one target fight", where=d.where)
        claimed[target.variant] = d.where
        targets.append(target)
    if not targets:
        raise UserError("no autoscaling object (HorizontalPodAutoscaler, ScaledObject, VariantAutoscaling) in "
                        f"{', '.join(cfg.objects)}", where=f"autoscaler {cfg.label}")
    dumped: list[dict[str, Any]] = []
    for g in groups:
        group = g.model_dump(mode="json", by_alias=True, exclude_none=True)
        same = [x for x in dumped if x["name"] == group["name"]]
        if same and same[0] != group:
            raise UserError(f"rule group {group['name']!r} comes twice with different rules",
                            where=f"autoscaler {cfg.label}")
        if not same:
            dumped.append(group)
    return cfg.model_copy(update={"targets": targets, "rule_groups": dumped})


def rule_groups(cfg: Any) -> list[RuleGroup]:
    """The rule groups a ``kubernetes`` autoscaler's objects bring (none for any other autoscaler)."""
    raw = getattr(cfg, "rule_groups", None) or []
    return [RuleGroup.model_validate(g) for g in raw]


def bound_warnings(cfg: Any, variants: Iterable[Any]) -> list[str]:
    """A warning per object of a ``kubernetes`` autoscaler whose replica bounds reach past its variant's: the
    variant's ``min_replicas``/``max_replicas`` (the cluster's room for it) clamp what is applied
    (harness/control/plane.py ``bounded``), so the object's ``maxReplicas`` above it is never reached and its
    ``minReplicas`` below it is never held."""
    by_name = {v.name: v for v in variants}
    out = []
    for t in getattr(cfg, "targets", []):
        v = by_name[t.variant]
        where = f"autoscaler {cfg.label!r}: {t.source}"
        field = "maxReplicaCount" if t.autoscaler.kind == "keda" else "maxReplicas"
        if t.max_replicas is not None and t.max_replicas > v.max_replicas:
            out.append(f"{where}: {field} {t.max_replicas} is above the max_replicas {v.max_replicas} of variant "
                       f"{v.name!r}; the variant's max_replicas {v.max_replicas} caps it: the cluster has "
                       f"room for {v.max_replicas} (a decision records the replicas applied, the object's own count "
                       "in audit.requested_replicas)")
        field = field.replace("max", "min")
        if t.min_replicas is not None and t.min_replicas < v.min_replicas:
            out.append(f"{where}: {field} {t.min_replicas} is below the min_replicas {v.min_replicas} of variant "
                       f"{v.name!r}, which holds it at {v.min_replicas} (set the variant's min_replicas "
                       f"to {t.min_replicas} to let the object go lower)")
    return out


def _adapter(d: Doc) -> AdapterConfig:
    from scalearena.harness.config.schema_help import validated

    return validated(AdapterConfig, {k: v for k, v in d.data.items() if k not in ("metadata", "kind")}, d.where)


def _merge(a: AdapterConfig, b: AdapterConfig) -> AdapterConfig:
    return AdapterConfig(rules=a.rules + b.rules, externalRules=a.externalRules + b.externalRules,
                         resourceRules=b.resourceRules or a.resourceRules)


def target_variant(d: Doc, variants: dict[str, str]) -> str:
    """The variant a ``spec.scaleTargetRef`` names (a Deployment named after the variant)."""
    ref = (d.data.get("spec") or {}).get("scaleTargetRef") if isinstance(d.data.get("spec"), dict) else None
    if not isinstance(ref, dict) or "name" not in ref:
        raise UserError("spec.scaleTargetRef.name: required field is missing", where=d.where)
    kind = ref.get("kind", "Deployment")
    if kind != "Deployment":
        raise UserError(f"spec.scaleTargetRef.kind: {kind!r}; scenario variants are Deployments", where=d.where,
                        expected="Deployment")
    name = str(ref["name"])
    if name not in variants:
        hint = did_you_mean(name, list(variants)) or (f"; map your Deployment onto a variant with --target "
                                                      f"{name}={next(iter(variants))} (deployments: in the scenario)")
        raise UserError(f"spec.scaleTargetRef.name: no variant {name!r}{hint}",
                        where=d.where, expected="a cluster.variants name: " + ", ".join(variants))
    return name


def _translate(d: Doc, adapter: AdapterConfig, recorded: list[str], variants: dict[str, str]) -> ObjectTarget | None:
    if d.category == "hpa":
        variant = target_variant(d, variants)
        obj, hpa = translate_hpa(d, adapter, recorded)
        lo = 1 if obj.spec.minReplicas is None else obj.spec.minReplicas
        return ObjectTarget(variant=variant, source=d.where, autoscaler=hpa,
                            min_replicas=lo, max_replicas=obj.spec.maxReplicas)
    if d.category == "scaledobject":
        variant = target_variant(d, variants)
        keda, lo, hi = translate_scaled_object(d)
        return ObjectTarget(variant=variant, source=d.where, autoscaler=keda, min_replicas=lo, max_replicas=hi)
    if d.category == "variantautoscaling":
        variant = target_variant(d, variants)
        return variant_autoscaling(d, variant, variants[variant])
    return None
