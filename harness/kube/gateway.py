"""Which gateway fronts the variant pods on Kubernetes: serve-router (default) or llm-d's EPP.

The paper's router is llm-d's endpoint picker (EPP) with queue / KV-cache /
prefix-cache scorers; scalearena's serve-router re-implements it so that sim,
local and kind share one router. ``SCALEARENA_GATEWAY=epp`` (or the backend
option ``gateway="epp"``) swaps in the real EPP (manifests/gateway/epp) so a
result can be checked against upstream's scheduler: the base's serve-router
objects are dropped, the EPP objects take the same Service name
(``gateway:8080``), its EndpointPickerConfig gets the scenario's
``router.scorers`` weights, and its InferencePool selects the scenario's
model. One EPP serves one InferencePool, and one pool must serve one model, so
the EPP gateway takes single-model scenarios only.

What the EPP does not do that serve-router does: the scenario's
``router.admission`` (the EPP sheds only requests of negative priority, and
these have none) and the gateway queue metric ``scalearena_router_queue_size``
that WVA's scale-from-zero loop and the ``gateway_queue`` KEDA query read.
Both are documented in docs/kubernetes.md rather than emulated.
"""
from __future__ import annotations

from pathlib import Path

import yaml

from scalearena.contracts.errors import UserError
from scalearena.harness.config.scenario import Scenario
from scalearena.harness.kube.render import Obj, render

GATEWAYS = ("serve-router", "epp")
GIE_VERSION = "v1.0.1"  # Gateway API Inference Extension: the InferencePool v1 CRD the EPP image expects
GIE_CRDS = ("https://github.com/kubernetes-sigs/gateway-api-inference-extension/releases/download/"
            f"{GIE_VERSION}/manifests.yaml")
INFERENCEPOOL_CRD = "inferencepools.inference.networking.k8s.io"
# scenario router.scorers field -> EPP plugin type (GIE v1.0 names)
SCORER_PLUGINS = {"queue": "queue-scorer", "kv_cache": "kv-cache-utilization-scorer",
                  "prefix_cache": "prefix-cache-scorer"}
# the serve-router objects of manifests/base that the EPP replaces: (kind, name)
SERVE_ROUTER_OBJECTS = {("ServiceAccount", "gateway"), ("Role", "gateway-endpoints"),
                        ("RoleBinding", "gateway-endpoints"), ("ConfigMap", "gateway-config"),
                        ("Deployment", "gateway"), ("Service", "gateway")}


def choose_gateway(option: str | None) -> str:
    """The resolved backend option (harness/run/registry.py applies $SCALEARENA_GATEWAY); the default is
    serve-router."""
    name = option or "serve-router"
    if name not in GATEWAYS:
        raise UserError(f"unknown gateway {name!r}", where="backend option gateway", expected=" or ".join(GATEWAYS))
    return name


def epp_plugins_config(sc: Scenario) -> str:
    """The EndpointPickerConfig YAML with the scenario's scorer weights (a weight of 0 drops the scorer)."""
    weights = sc.router.scorers.model_dump()
    profile: list[dict[str, object]] = []
    plugins: list[dict[str, object]] = []
    for field, plugin in SCORER_PLUGINS.items():
        w = float(weights[field])
        if w != int(w):
            raise UserError(f"router.scorers.{field} = {w:g}: the EPP takes integer weights",
                            where=f"router.scorers.{field}", expected="a whole number with SCALEARENA_GATEWAY=epp")
        if w > 0:
            plugins.append({"type": plugin})
            profile.append({"pluginRef": plugin, "weight": int(w)})
    if not profile:
        raise UserError("every scorer weight is 0: the EPP would pick at random", where="router.scorers",
                        expected="at least one positive weight")
    plugins += [{"type": "max-score-picker"}, {"type": "single-profile-handler"}]
    profile.append({"pluginRef": "max-score-picker"})
    cfg = {"apiVersion": "inference.networking.x-k8s.io/v1alpha1", "kind": "EndpointPickerConfig",
           "plugins": plugins, "schedulingProfiles": [{"name": "default", "plugins": profile}]}
    return yaml.safe_dump(cfg, sort_keys=False)


def epp_objects(sc: Scenario, manifests: Path) -> list[Obj]:
    """manifests/gateway/epp rendered for this scenario: its weights, its model."""
    models = sorted({v.model for v in sc.cluster.variants})
    if len(models) != 1:
        raise UserError(f"the EPP gateway serves one model per InferencePool; this scenario has {models}",
                        where="cluster.variants[].model",
                        expected="a single-model scenario with SCALEARENA_GATEWAY=epp, or the serve-router gateway")
    objs = render(manifests / "gateway" / "epp")
    for o in objs:
        if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "epp-config":
            o["data"]["epp-config.yaml"] = epp_plugins_config(sc)
        elif o["kind"] == "InferencePool":
            o["spec"]["selector"]["matchLabels"]["scalearena.io/model"] = models[0]
    return objs


def with_gateway(gateway: str, sc: Scenario, objs: list[Obj], manifests: Path) -> list[Obj]:
    """The serving objects with the chosen gateway: unchanged for serve-router, EPP swapped in for epp."""
    if gateway == "serve-router":
        return objs
    kept = [o for o in objs if (o["kind"], o["metadata"]["name"]) not in SERVE_ROUTER_OBJECTS]
    return kept + epp_objects(sc, manifests)
