"""Issue 19: every object a kind run would apply passes the schema AND the API server's semantic rules.

The semantic rules (harness/kube/validate.py) are upstream's
validation.go for HPAs and KEDA's ScaledObject webhook; the tests here check
both that the validator catches what the API server refuses and that nothing
rendered from the repository's scenarios trips it.
"""
from __future__ import annotations

import json
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from scalearena.contracts.errors import UserError
from scalearena.controllers.registry import REGISTRY
from scalearena.harness.config.scenario import load_scenario
from scalearena.harness.config.startup_spec import sim_only
from scalearena.harness.config.suite import load_suite
from scalearena.harness.kube.backend import KubeBackend
from scalearena.harness.kube.keda import keda_objects
from scalearena.harness.kube.knobs import quantity
from scalearena.harness.kube.scenario import hpa_objects, wva_objects
from scalearena.harness.kube.validate import object_errors
from scalearena.workloads.generate import build_requests

ROOT = Path(__file__).resolve().parents[4]
SCENARIOS = sorted((ROOT / "workloads/scenarios").glob("*.yaml"))
EXP2 = ROOT / "workloads/scenarios/exp2-cost-aware.yaml"


def cfg_of(data: dict):  # noqa: ANN201 - an AutoscalerConfig of the kind's own class
    return REGISTRY.get(data["kind"]).config(**data)


def hpa(min_replicas: int, metric_type: str = "Pods", **extra: object) -> dict:
    metric = ({"type": "Pods", "pods": {"metric": {"name": "q"}, "target": {"type": "AverageValue",
                                                                               "averageValue": "3"}}}
              if metric_type == "Pods" else
              {"type": "External", "external": {"metric": {"name": "wva_desired_replicas"},
                                                "target": {"type": "AverageValue", "averageValue": "1"}}})
    spec = {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"},
            "minReplicas": min_replicas, "maxReplicas": 4, "metrics": [metric], **extra}
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "h", "namespace": "scalearena"}, "spec": spec}


# ---- the validator catches what upstream's validation.go refuses -------------------------------------
def test_min_replicas_zero_needs_an_object_or_external_metric() -> None:
    # the exp2 va-h100 shape that passed kubernetes-validate and would have been refused by the API server
    o = hpa(0, "Pods")
    kubernetes_validate.validate(o, "1.33.0", strict=True)  # the schema alone accepts it
    assert any("Object or External metric" in e for e in object_errors(o))
    assert object_errors(hpa(0, "External")) == []
    assert any("greater than or equal to 1" in e for e in object_errors(hpa(0, "External"), scale_to_zero_gate=False))


@pytest.mark.parametrize(("behavior", "needle"), [
    ({"scaleUp": {"stabilizationWindowSeconds": 3601}}, "stabilizationWindowSeconds"),
    ({"scaleUp": {"policies": []}}, "at least one Policy"),
    ({"scaleDown": {"policies": [{"type": "Pods", "value": 1, "periodSeconds": 1801}]}}, "periodSeconds"),
    ({"scaleDown": {"policies": [{"type": "Pods", "value": 0, "periodSeconds": 15}]}}, "value"),
    ({"scaleDown": {"tolerance": "-1"}}, "tolerance"),
    ({"scaleDown": {"selectPolicy": "Sometimes"}}, "selectPolicy"),
])
def test_behavior_rules(behavior: dict, needle: str) -> None:
    assert any(needle in e for e in object_errors(hpa(1, behavior=behavior)))


def test_targets_and_scaledobject_rules() -> None:
    o = hpa(1)
    o["spec"]["metrics"][0]["pods"]["target"]["averageValue"] = "0"
    assert any("must be positive" in e for e in object_errors(o))
    o = hpa(5)  # min 5 > max 4
    assert any("minReplicas" in e for e in object_errors(o))
    so = {"kind": "ScaledObject", "metadata": {"name": "s"}, "spec": {
        "minReplicaCount": 3, "maxReplicaCount": 2, "fallback": {"failureThreshold": 3, "replicas": 1},
        "triggers": [{"type": "prometheus", "metricType": "Value", "metadata": {"threshold": "2"}}]}}
    errs = object_errors(so)
    assert any("minReplicaCount" in e for e in errs) and any("fallback" in e for e in errs)


def test_quantities() -> None:
    assert [quantity(x) for x in (3, 0.5, 0.25, 1.5, 0.0005)] == ["3", "500m", "250m", "1500m", "0.0005"]


# ---- everything rendered from the repository's scenarios is valid -------------------------------------
def kind_plans() -> list:
    _, plans = load_suite(ROOT / "workloads/suites/kind.yaml")
    _, paper = load_suite(ROOT / "workloads/suites/paper.yaml")
    return plans + [p for p in paper if p.autoscaler.label != "wva-headroom"]


def test_every_object_of_every_kind_plan_is_valid() -> None:
    backend = KubeBackend("kind")
    seen, checked = set(), set()
    for plan in kind_plans():
        key = (plan.scenario.name, plan.autoscaler.label)  # sweeps and seeds change no object's shape
        if key in seen:
            continue
        seen.add(key)
        for o in backend.plan(plan.scenario, plan.autoscaler):  # plan() itself runs the semantic check
            assert object_errors(o) == [], (key, o["kind"], o["metadata"]["name"])
            text = json.dumps(o, sort_keys=True)
            if o["kind"] in ("VariantAutoscaling", "ScaledObject", "CustomResourceDefinition") or text in checked:
                continue
            checked.add(text)
            kubernetes_validate.validate(o, "1.33.0", strict=True)


def test_engines_carry_the_dummy_tokenizer_and_a_fitting_max_model_len() -> None:
    backend = KubeBackend("kind")
    for path in SCENARIOS:
        sc = load_scenario(path)
        if sim_only(sc):  # node pools / sleep mode / warm buffer: refused on kind (test_startup_spec)
            with pytest.raises(UserError, match="only --cluster sim"):
                backend.plan(sc, sc.autoscaler("hpa"))
            continue
        if any(v.role != "both" for v in sc.cluster.variants):
            continue  # P/D is refused on Kubernetes, not rendered (test_pd_spec)
        longest = max(r.input_tokens + r.output_tokens for r in build_requests(sc))
        engines = [o["spec"]["template"]["spec"]["containers"][0] for o in backend.plan(sc, sc.autoscaler("wva"))
                   if o["kind"] == "Deployment" and o["metadata"]["labels"].get("scalearena.io/component") == "variant"]
        assert engines, path
        for c in engines:
            if "llm-d-inference-sim" in c["image"]:
                assert "--force-dummy-tokenizer" in c["args"]
                n = int(next(a for a in c["args"] if a.startswith("--max-model-len=")).split("=")[1])
            else:  # roofline: the scalearena engine, max_model_len inside its engine spec
                assert c["image"].endswith("serve-engine:dev")
                n = yaml.safe_load(next(a for a in c["args"] if a.startswith("--engine-spec=")).split("=", 1)[1])[
                    "max_model_len"]
            assert n >= longest, (path.name, n, longest)


def test_exp2_hpa_floors_min_zero_at_one_like_the_simulated_hpa() -> None:
    sc = load_scenario(EXP2)
    assert {v.name: v.min_replicas for v in sc.cluster.variants} == {"va-a100": 1, "va-h100": 0}
    mins = {o["metadata"]["name"]: o["spec"]["minReplicas"] for o in hpa_objects(sc, sc.autoscaler("hpa"))}
    assert mins == {"va-a100": 1, "va-h100": 1}  # controllers/hpa/policy.py: min 0 -> 1 without scale_to_zero
    stz = sc.autoscaler("hpa").model_copy(update={"scale_to_zero": True})
    with pytest.raises(UserError, match="Object or External"):
        hpa_objects(sc, stz)
    # the WVA actuation HPA reads an External metric, so va-h100 keeps minReplicas 0 there
    wva_hpas = {o["metadata"]["name"]: o for o in wva_objects(sc, sc.autoscaler("wva"))
                if o["kind"] == "HorizontalPodAutoscaler"}
    assert wva_hpas["va-h100-wva"]["spec"]["minReplicas"] == 0
    assert object_errors(wva_hpas["va-h100-wva"]) == []


def test_wva_actuation_hpa_has_zero_tolerance() -> None:
    # default tolerance 0.1: at 11 replicas WVA's +1 (12/11 = 1.09) is within tolerance and never applied
    sc = load_scenario(EXP2)
    for o in wva_objects(sc, sc.autoscaler("wva")):
        if o["kind"] == "HorizontalPodAutoscaler":
            assert {d: r["tolerance"] for d, r in o["spec"]["behavior"].items()} == {"scaleUp": "0", "scaleDown": "0"}
    cluster = yaml.safe_load((ROOT / "manifests/kind/cluster.yaml").read_text())
    assert cluster["featureGates"] == {"HPAScaleToZero": True, "HPAConfigurableTolerance": True}


# ---- the same knobs everywhere -------------------------------------------------------------------------
def test_hpa_behavior_tolerance_and_stabilisation_reach_the_object() -> None:
    sc = load_scenario(EXP2)
    cfg = cfg_of({"kind": "hpa", "tolerance": 0.05, "downscale_stabilization_s": 120,
                          "behavior": {"scale_up": {"policies": [{"type": "Percent", "value": 50,
                                                                  "period_seconds": 30}]}}})
    (o, *_) = hpa_objects(sc, cfg)
    assert o["spec"]["behavior"] == {
        "scaleUp": {"policies": [{"type": "Percent", "value": 50, "periodSeconds": 30}], "tolerance": "50m"},
        "scaleDown": {"tolerance": "50m", "stabilizationWindowSeconds": 120}}


def test_keda_fallback_and_behavior_reach_the_scaledobject() -> None:
    sc = load_scenario(EXP2)
    cfg = cfg_of({"kind": "keda", "fallback": {"failure_threshold": 3, "replicas": 2},
                          "behavior": {"scale_down": {"stabilization_window_seconds": 60}}})
    (so, *_) = keda_objects(sc, cfg)
    assert so["spec"]["fallback"] == {"failureThreshold": 3, "replicas": 2}
    assert so["spec"]["advanced"] == {"horizontalPodAutoscalerConfig": {
        "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}}}


@pytest.mark.parametrize(("config", "field"), [
    ({"kind": "wva", "name": "wva-headroom", "headroom": {"enabled": True}}, "autoscalers[wva-headroom].headroom"),
    ({"kind": "hpa", "period_s": 30}, "autoscalers[hpa].period_s"),
    ({"kind": "keda", "tolerance": 0.2}, "autoscalers[keda].tolerance"),
    ({"kind": "wva", "mode": "constrained"}, "autoscalers[wva].mode"),
])
def test_knobs_the_cluster_cannot_carry_are_refused_by_field(config: dict, field: str) -> None:
    sc = load_scenario(EXP2)
    with pytest.raises(UserError) as e:
        KubeBackend("kind").plan(sc, cfg_of(config))
    assert e.value.where == field


def test_wva_periods_and_scrape_interval_reach_the_cluster() -> None:
    sc = load_scenario(EXP2)
    sc = sc.model_copy(update={"metrics": sc.metrics.model_copy(update={"scrape_interval_s": 7.0})})
    cfg = cfg_of({"kind": "wva", "period_s": 20, "fast_period_s": 0.5})
    objs = {(o["kind"], o["metadata"]["name"]): o for o in KubeBackend("kind").plan(sc, cfg)}
    data = objs[("ConfigMap", "wva-controller-config")]["data"]
    assert (data["WVA_INTERVAL_S"], data["WVA_FAST_INTERVAL_S"]) == ("20", "0.5")
    prom = yaml.safe_load(objs[("ConfigMap", "prometheus-config")]["data"]["prometheus.yml"])
    assert prom["global"]["scrape_interval"] == "7s"


def test_adapter_serves_the_latest_sample_like_the_simulated_hpa() -> None:
    docs = list(yaml.safe_load_all((ROOT / "manifests/autoscalers/prometheus-adapter/config.yaml").read_text()))
    rules = yaml.safe_load(docs[0]["data"]["config.yaml"])
    assert all("max_over_time" not in r["metricsQuery"] for r in rules["rules"] + rules["externalRules"])


def test_every_image_copies_every_top_level_package() -> None:
    import re

    top = re.search(r"TOP = \[(.*?)\]", (ROOT / "setup.py").read_text()).group(1)
    folders = re.findall(r'"(\w+)"', top)
    for dockerfile in sorted(ROOT.glob("Dockerfile.*")):
        text = dockerfile.read_text()
        missing = [f for f in folders if f"COPY {f} {f}" not in text]
        assert not missing, (dockerfile.name, missing)



def test_numbers_are_written_without_exponents_and_prometheus_durations_in_whole_units() -> None:
    from scalearena.harness.kube.knobs import plain, prom_duration

    assert [plain(x) for x in (1e-05, 1e6, 0.1 + 0.2, 2.5, 3.0, 0.0)] == ["0.00001", "1000000", "0.3", "2.5", "3", "0"]
    assert [prom_duration(x) for x in (15, 7.5, 0.25, 60)] == ["15s", "7500ms", "250ms", "60s"]
    with pytest.raises(UserError, match="metrics.scrape_interval_s"):
        prom_duration(0.0001)
    # a tiny variant cost rendered into the VariantAutoscaling still matches the CRD's ^\d+(\.\d+)?$
    import jsonschema

    sc = load_scenario(EXP2)
    v0 = sc.cluster.variants[0].model_copy(update={"cost": 1e-05})
    sc = sc.model_copy(update={"cluster": sc.cluster.model_copy(update={"variants": [v0, *sc.cluster.variants[1:]]})})
    crd = yaml.safe_load((ROOT / "manifests/autoscalers/wva/crd.yaml").read_text())
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    (va, *_) = [o for o in wva_objects(sc, sc.autoscaler("wva")) if o["kind"] == "VariantAutoscaling"]
    assert va["spec"]["variantCost"] == "0.00001"
    jsonschema.validate(va, schema)


def test_the_image_build_context_leaves_out_results_and_virtualenvs() -> None:
    ignored = set((ROOT / ".dockerignore").read_text().split())
    assert {".git", ".venv", "results", "tests"} <= ignored
    for dockerfile in ROOT.glob("Dockerfile.*"):  # nothing a COPY needs is ignored
        copied = {line.split()[1] for line in dockerfile.read_text().splitlines() if line.startswith("COPY ")
                  and "--from" not in line}
        assert not copied & ignored, dockerfile.name
