"""A ``kind: kubernetes`` autoscaler on CLUSTER=kind|cluster: the user's files, applied as written.

The objects of the files (HorizontalPodAutoscaler, ScaledObject) go to the cluster unchanged
apart from the envsubst the user's ``env:`` asks for (harness/objects/load.py) and the mapping of
their namespace, Deployment and model names onto the scenario's (harness/objects/mapping.py), so
the cluster runs exactly what the simulator evaluated. Their companions are put where the stack reads them:
the prometheus-adapter configuration (a plain config or its ConfigMap) becomes the data of the
adapter's ConfigMap of manifests/autoscalers/prometheus-adapter, and the rule groups
(PrometheusRule objects and rule files; there is no prometheus-operator here) become a rule
file of the in-cluster Prometheus (``rule_files`` in its ConfigMap). VariantAutoscaling CRs need
WVA's controller and actuation objects, which the ``wva`` autoscaler renders; with user CRs that
is refused rather than half-applied.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from scalearena.contracts.errors import UserError
from scalearena.harness.kube.render import render
from scalearena.harness.kube.scenario import NAMESPACE
from scalearena.harness.objects.load import load_documents
from scalearena.harness.objects.mapping import map_documents

Obj = dict[str, Any]
RULES_KEY = "scalearena-rules.yml"  # the rule file's key in the prometheus-config ConfigMap


def uses_keda(cfg: Any) -> bool:
    """Whether an autoscaler config needs the KEDA operator in the cluster."""
    return cfg.kind == "keda" or any(t.autoscaler.kind == "keda" for t in getattr(cfg, "targets", []))


def refuse_external_behind_keda(cfg: Any, external_metrics: str) -> None:
    """A user's HPA with an External metric needs prometheus-adapter to serve v1beta1.external.metrics.k8s.io; where
    KEDA's metrics server holds that APIService (a cluster with KEDA: only one server per API group), the HPA
    controller gets "scaledObject name is not specified" for it at every sync and scales on its other metrics
    alone, while the run would look fine. Found by the sim-vs-real benchmark (docs/fidelity.md); refused here,
    before anything is applied, as the simulator cannot tell."""
    if external_metrics != "keda":
        return
    for t in getattr(cfg, "targets", []):
        names = [m.name or m.signal or "?" for m in getattr(t.autoscaler, "metrics", []) or []
                 if getattr(m, "type", None) == "External"]
        if t.autoscaler.kind == "hpa" and names:
            raise UserError(f"{t.source}: External metric {names[0]} would never be served: KEDA's metrics server "
                            "holds v1beta1.external.metrics.k8s.io on this cluster, so prometheus-adapter's "
                            "externalRules are unreachable and the HPA would scale on its other metrics alone",
                            where=f"autoscaler {cfg.label}",
                            expected="a cluster without KEDA for this run (`scalearena kwok up` / `kind up` with a "
                                     "suite that needs no KEDA), or the metric as a Pods/Object metric or a ScaledObject")


def user_objects(cfg: Any, cluster_objs: list[Obj], manifests: Path) -> list[Obj]:
    """The objects to apply for ``cfg`` (a compiled ``KubernetesConfig``); adds its rule groups to the
    Prometheus ConfigMap among ``cluster_objs``."""
    out: list[Obj] = []
    adapter: dict[str, list[Any]] = {}
    docs = [d for env in (getattr(cfg, "instances", None) or [cfg.env])  # an llm-d recipe: one set per variant
            for d in map_documents(load_documents(cfg.objects, env, None), getattr(cfg, "deployments", {}),
                                   getattr(cfg, "model_names", {}), getattr(cfg, "epp_names", {}))]
    for d in docs:
        if d.category in ("hpa", "scaledobject"):
            md = d.data.setdefault("metadata", {})
            if md.setdefault("namespace", NAMESPACE) != NAMESPACE:
                raise UserError(f"metadata.namespace: {md['namespace']!r}; the scenario's Deployments live in "
                                f"{NAMESPACE!r}", where=d.where, expected=NAMESPACE)
            out.append(d.data)
        elif d.category == "variantautoscaling":
            raise UserError("VariantAutoscaling objects run on sim and local; on kind/cluster the `wva` "
                            "autoscaler renders them with WVA's controller and actuation", where=d.where)
        elif d.category == "adapter":
            for key in ("rules", "externalRules", "resourceRules"):
                if key in d.data:
                    adapter.setdefault(key, [])
                    value = d.data[key]
                    adapter[key] = value if key == "resourceRules" else adapter[key] + list(value)
    if any(o["kind"] == "HorizontalPodAutoscaler" for o in out):
        stack = render(manifests / "autoscalers" / "prometheus-adapter")
        for o in stack:
            if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "prometheus-adapter-config" and adapter:
                o["data"] = {"config.yaml": yaml.safe_dump(adapter, sort_keys=False)}
        out = stack + out
    if cfg.rule_groups:
        _add_rules(cluster_objs, cfg.rule_groups)
    return out


def _add_rules(objs: list[Obj], groups: list[dict[str, Any]]) -> None:
    for o in objs:
        if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "prometheus-config":
            conf = yaml.safe_load(o["data"]["prometheus.yml"])
            # relative: Prometheus resolves it from its config file's folder, /etc/prometheus in the pod and the
            # run's folder where CLUSTER=kwok writes the ConfigMap (an absolute /etc/prometheus path matched no
            # file there, and a rule glob that matches nothing is no error: the rules were silently absent)
            conf["rule_files"] = [*conf.get("rule_files", []), RULES_KEY]
            o["data"]["prometheus.yml"] = yaml.safe_dump(conf, sort_keys=False)
            o["data"][RULES_KEY] = yaml.safe_dump({"groups": groups}, sort_keys=False)
            return
    raise UserError("no prometheus-config ConfigMap to add the objects' rule groups to",
                    where="manifests/base/prometheus.yaml")
