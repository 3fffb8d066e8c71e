"""Bring your own objects (harness/objects, controllers/kubernetes.py): loading, envsubst, the
prometheus-adapter templating, HPA translation, errors, and the decisions the objects make.

Expected queries follow prometheus-adapter pkg/naming/metrics_query.go by hand: Build() joins the
selector's matchers (sorted by key), then <namespace label>="<ns>", then the resource label
(``=~`` for several names); GroupBy is the resource label. BuildExternal() adds no GroupBy.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from scalearena.contracts.errors import UserError
from scalearena.controllers.hpa.engine import TARGET_PODS
from scalearena.controllers.kubernetes import Kubernetes, KubernetesConfig
from scalearena.harness.objects import adapter as ad, compile_objects
from scalearena.harness.objects.hpa import parse_quantity
from scalearena.harness.objects.load import classify, substitute
from tests.unit.viewkit import FakeMetrics, pods, variant, view

ADAPTER = """
rules:
  - seriesQuery: 'vllm:num_requests_waiting{namespace!="",pod!=""}'
    resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}}}
    name: {matches: "^vllm:(.*)$", as: "vllm_${1}"}
    metricsQuery: 'max by (<<.GroupBy>>) (<<.Series>>{<<.LabelMatchers>>})'
  - seriesQuery: '{__name__=~"^kube_deployment_.*"}'
    resources: {overrides: {namespace: {resource: namespace}, deployment: {group: apps, resource: deployment}}}
    metricsQuery: 'sum by (<<.GroupBy>>) (<<.Series>>{<<.LabelMatchers>>})'
externalRules:
  - seriesQuery: '{__name__=~"^model:.*"}'
    resources: {overrides: {namespace: {resource: namespace}}}
    metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>})'
"""
RULES = """
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata: {name: r}
spec:
  groups:
    - name: g
      interval: 15s
      rules:
        - {record: "model:waiting:sum", expr: "sum by (namespace, model_name) (vllm:num_requests_waiting)"}
"""


def hpa(metrics: str, name: str = "va", extra: str = "") -> str:
    return f"""apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {{name: my-hpa, namespace: "${{NS}}"}}
spec:
  scaleTargetRef: {{apiVersion: apps/v1, kind: Deployment, name: {name}}}
  maxReplicas: 8
  metrics:
{metrics}{extra}"""


PODS = """    - type: Pods
      pods:
        metric: {name: vllm_num_requests_waiting}
        target: {type: AverageValue, averageValue: "3"}
"""


def build(tmp_path: Path, files: dict[str, str], env: dict[str, str] | None = None) -> KubernetesConfig:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    if env is None:  # NS for the objects that name ${NS} (an env key no file uses is refused)
        env = {"NS": "scalearena"} if any("${NS}" in text for text in files.values()) else {}
    cfg = KubernetesConfig(objects=list(files), env=env)
    return compile_objects(cfg, tmp_path, {"va": "m", "vb": "m"})


def test_envsubst_fills_both_forms_and_refuses_an_unset_name() -> None:
    assert substitute("a: ${X}\nb: $Y-1\nc: $$ $1", {"X": "1", "Y": "two"}, "f.yaml") == "a: 1\nb: two-1\nc: $$ $1"
    with pytest.raises(UserError) as e:
        substitute("a: 1\nb: ${MISSING}\n", {}, "f.yaml")
    assert str(e.value) == "f.yaml: document 1: b: ${MISSING} has no value (line 2) (expected MISSING under this " \
        "autoscaler's env:)"


def test_a_document_of_an_unknown_kind_is_named() -> None:
    with pytest.raises(UserError, match=r"f.yaml: Deployment/document 2: kind: unsupported object apiVersion "
                                        r"'apps/v1' kind 'Deployment'"):
        classify({"apiVersion": "apps/v1", "kind": "Deployment"}, "f.yaml", 1)
    assert classify({"groups": []}, "r.yaml", 0).category == "rules"
    assert classify({"externalRules": []}, "a.yaml", 0).category == "adapter"


def test_quantities() -> None:
    # 500m = 0.5; 1.5k = 1500; 2Gi = 2 x 2^30; 1e3 = 1000
    assert [parse_quantity(q) for q in ("3", "500m", "1.5k", "2Gi", "1e3", 7)] == [3, 0.5, 1500, 2 * 2**30, 1000, 7]
    with pytest.raises(ValueError):
        parse_quantity("3 pods")


def test_adapter_names_and_templates() -> None:
    rule = ad.DiscoveryRule(seriesQuery="x", metricsQuery="q", name=ad.NameRule(matches="^(.*)_total$"))
    assert ad.metric_name(rule, "http_requests_total") == "http_requests"  # one group: as defaults to $1
    rule = ad.DiscoveryRule(seriesQuery="x", metricsQuery="q")
    assert ad.metric_name(rule, "vllm:num_requests_waiting") == "vllm:num_requests_waiting"  # no group: $0
    assert ad.render_template("sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)", "s", 'a="1"', "pod") \
        == 'sum(s{a="1"}) by (pod)'
    with pytest.raises(ValueError, match="<<range .X>> is not supported"):
        ad.render_template("<<range .X>>", "s", "", "")
    sel = {"matchLabels": {"zone": "a"}, "matchExpressions": [{"key": "app", "operator": "In", "values": ["y", "x"]},
                                                              {"key": "tier", "operator": "Exists"}]}
    assert ad.selector_matchers(sel) == ['app=~"x|y"', 'tier!=""', 'zone="a"']  # sorted by key


def test_hpa_metrics_become_the_adapter_queries(tmp_path: Path) -> None:
    metrics = PODS + """    - type: External
      external:
        metric: {name: "model:waiting:sum", selector: {matchLabels: {model_name: m}}}
        target: {type: AverageValue, averageValue: 5}
    - type: Object
      object:
        describedObject: {apiVersion: apps/v1, kind: Deployment, name: va}
        metric: {name: kube_deployment_spec_replicas}
        target: {type: Value, value: 2}
"""
    cfg = build(tmp_path, {"hpa.yaml": hpa(metrics), "adapter.yaml": ADAPTER, "rules.yaml": RULES})
    (t,) = cfg.targets
    assert (t.variant, t.min_replicas, t.max_replicas) == ("va", 1, 8)
    assert t.source == "hpa.yaml: HorizontalPodAutoscaler/my-hpa"
    m = t.autoscaler.metrics
    assert m[0].query == f'max by (pod) (vllm:num_requests_waiting{{namespace="scalearena",pod=~"{TARGET_PODS}"}})'
    assert m[0].name == "vllm_num_requests_waiting" and m[0].average_value == 3
    assert m[1].query == 'sum(model:waiting:sum{model_name="m",namespace="scalearena"})'
    assert (m[1].type, m[1].average_value) == ("External", 5)
    assert m[2].query == 'sum by (deployment) (kube_deployment_spec_replicas{namespace="scalearena",deployment="va"})'
    assert (m[2].type, m[2].value) == ("Object", 2)
    assert t.autoscaler.behavior is None  # no behavior field: the legacy path
    assert cfg.rule_groups[0]["rules"][0]["record"] == "model:waiting:sum"


@pytest.mark.parametrize(("files", "message"), [
    ({"hpa.yaml": hpa(PODS, name="vc")}, "hpa.yaml: HorizontalPodAutoscaler/my-hpa: spec.scaleTargetRef.name: "
     "no variant 'vc'"),
    ({"hpa.yaml": hpa(PODS)}, "hpa.yaml: HorizontalPodAutoscaler/my-hpa: spec.metrics.0.pods.metric.name: no "
     "prometheus-adapter rules entry serves 'vllm_num_requests_waiting'"),
    ({"hpa.yaml": hpa(PODS.replace("AverageValue, averageValue", "Utilization, averageUtilization")),
      "a.yaml": ADAPTER}, "spec.metrics.0.pods.target.type: Utilization is not supported for a Pods metric"),
    ({"hpa.yaml": hpa(PODS, extra="  minReplica: 2\n"), "a.yaml": ADAPTER}, "spec.minReplica: unknown field"),
    ({"hpa.yaml": hpa(PODS), "a.yaml": ADAPTER.replace("max by", "maxx by")},
     "spec.metrics.0.pods: PromQL parse error"),
    # the API server's rules (pkg/apis/autoscaling/validation) and int32 fields, which were accepted (issue 31)
    ({"hpa.yaml": hpa(PODS, extra="  minReplicas: 9\n"), "a.yaml": ADAPTER},
     "spec: maxReplicas 8: must be greater than or equal to minReplicas (9)"),
    ({"hpa.yaml": hpa(PODS).replace("maxReplicas: 8", "maxReplicas: true"), "a.yaml": ADAPTER},
     "spec.maxReplicas: Input should be a valid integer"),
    ({"hpa.yaml": hpa(PODS).replace("maxReplicas: 8", "maxReplicas: 5000"), "a.yaml": ADAPTER},
     "spec.maxReplicas: Input should be less than or equal to 1000"),
])
def test_errors_name_file_object_and_field(tmp_path: Path, files: dict[str, str], message: str) -> None:
    with pytest.raises(UserError) as e:
        build(tmp_path, files)
    assert message in str(e.value)


def test_a_parse_error_in_a_query_gives_its_position(tmp_path: Path) -> None:
    bad = ADAPTER.replace("'sum(<<.Series>>{<<.LabelMatchers>>})'", "'sum(<<.Series>>{<<.LabelMatchers>>}) +'")
    metrics = """    - type: External
      external:
        metric: {name: "model:waiting:sum"}
        target: {type: Value, value: 5}
"""
    with pytest.raises(UserError, match=r"spec.metrics.0.external: PromQL parse error"):
        build(tmp_path, {"hpa.yaml": hpa(metrics), "a.yaml": bad, "rules.yaml": RULES})
    unsupported = ADAPTER.replace("'sum(<<.Series>>{<<.LabelMatchers>>})'", "'1 + predict_linear(<<.Series>>[5m], 60)'")
    with pytest.raises(UserError, match=r"function predict_linear\(\) is outside the supported PromQL subset at "
                                        r"character 4 of '1 \+ predict_linear"):
        build(tmp_path, {"hpa.yaml": hpa(metrics), "a.yaml": unsupported, "rules.yaml": RULES})


def test_two_objects_on_one_variant_are_refused(tmp_path: Path) -> None:
    two = hpa(PODS) + "---\n" + hpa(PODS).replace("my-hpa", "other")
    with pytest.raises(UserError, match="variant 'va' is already scaled by hpa.yaml: HorizontalPodAutoscaler/my-hpa"):
        build(tmp_path, {"hpa.yaml": two, "a.yaml": ADAPTER})


class QueryMetrics(FakeMetrics):
    """Answers PromQL from a fixed table and records what was asked."""

    def __init__(self, answers: dict[str, list[dict[str, Any]]]) -> None:
        super().__init__()
        self.answers, self.asked = answers, []  # type: ignore[var-annotated]

    def query(self, expr: str, at: float | None = None) -> list[dict[str, Any]]:
        self.asked.append(expr)
        return self.answers[expr]


def _row(value: str, **labels: str) -> dict[str, Any]:
    return {"metric": labels, "value": [0.0, value]}


def test_the_object_decides_from_its_queries(tmp_path: Path) -> None:
    metrics = PODS + """    - type: External
      external:
        metric: {name: "model:waiting:sum"}
        target: {type: AverageValue, averageValue: 5}
"""
    cfg = build(tmp_path, {"hpa.yaml": hpa(metrics), "a.yaml": ADAPTER, "rules.yaml": RULES})
    pods_q = 'max by (pod) (vllm:num_requests_waiting{namespace="scalearena",pod=~"va-0|va-1"})'
    ext_q = 'sum(model:waiting:sum{namespace="scalearena"})'
    # Pods: samples 6 and 3 (a third pod's row is not the variant's and is dropped): avg 4.5 / 3 = 1.5
    #   -> ceil(1.5 x 2) = 3. External: 12 + 0.0004 -> milli 12000 + 0 = 12 over 2 pods x 5 = ratio 1.2
    #   -> ceil(12 / 5) = 3. Legacy path: limit max(2 x 2, 4) = 4, so 3.
    fake = QueryMetrics({pods_q: [_row("6", pod="va-0"), _row("3", pod="va-1"), _row("9", pod="vb-0")],
                         ext_q: [_row("12", model_name="m"), _row("0.0004", model_name="n")]})
    ps = tuple(replace(p, pod=f"va-{i}") for i, p in enumerate(pods(0, 0)))
    policy = Kubernetes(cfg)
    (d,) = policy.decide(0.0, view(0.0, variant("va", spec=2, pods=ps), variant("vb", spec=5), metrics=fake))
    assert (d.variant, d.desired_replicas) == ("va", 3)
    assert d.reasons[0].rule == "object"
    usage = {r.values["metric"]: (r.values["usage"], r.values["proposal"]) for r in d.reasons if r.rule == "metric"}
    assert usage == {"pods:vllm_num_requests_waiting": (4.5, 3), "external:model:waiting:sum": (6.0, 3)}
    assert fake.asked == [pods_q, ext_q]


def test_the_shipped_example_scenario_loads_its_objects() -> None:
    from scalearena.harness.config.scenario import load_scenario

    root = Path(__file__).resolve().parents[4]
    sc = load_scenario(root / "workloads" / "scenarios" / "byo-objects.yaml")
    mine = sc.autoscaler("my-hpa")
    (t,) = mine.targets
    assert (t.variant, t.min_replicas, t.max_replicas) == ("va-qwen", 1, 10)
    pods = f'namespace="scalearena",pod=~"{TARGET_PODS}"'
    # seriesQuery's __name__ regex picks the two catalogue series; name.as "vllm_${1}" renames them
    assert [m.query for m in t.autoscaler.metrics] == [
        f"max by (pod) (vllm:num_requests_waiting{{{pods}}})", f"max by (pod) (vllm:kv_cache_usage_perc{{{pods}}})",
        'sum(model:requests_queued:sum{model_name="qwen3-0.6b",namespace="scalearena"})']
    assert t.autoscaler.behavior.scale_down.stabilization_window_seconds == 120
    assert t.autoscaler.behavior.scale_up.policies is None  # left to the v2 defaults
    assert [g["name"] for g in mine.rule_groups] == ["model-queue"]


def test_on_kind_the_files_are_applied_as_written(tmp_path: Path) -> None:
    """CLUSTER=kind|cluster (harness/kube/byo.py): the HPA goes out as written with ${VAR} filled,
    the user's adapter rules become the adapter's ConfigMap, the rule groups a Prometheus rule file."""
    import yaml

    from scalearena.harness.config.scenario import load_scenario
    from scalearena.harness.kube.backend import KubeBackend

    root = Path(__file__).resolve().parents[4]
    sc = load_scenario(root / "workloads" / "scenarios" / "byo-objects.yaml")
    objs = KubeBackend("kind").plan(sc, sc.autoscaler("my-hpa"))
    (hpa_obj,) = [o for o in objs if o["kind"] == "HorizontalPodAutoscaler"]
    written = yaml.safe_load((root / "manifests/autoscalers/examples/hpa.yaml").read_text()
                             .replace("${VARIANT}", "va-qwen").replace("${NAMESPACE}", "scalearena")
                             .replace("${MODEL}", "qwen3-0.6b"))
    assert hpa_obj == written
    (adapter,) = [o for o in objs if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "prometheus-adapter-config"]
    rules = yaml.safe_load(adapter["data"]["config.yaml"])
    assert [r["name"]["as"] for r in rules["rules"] + rules["externalRules"]] == ["vllm_${1}", "model_requests_queued"]
    (prom,) = [o for o in objs if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "prometheus-config"]
    assert yaml.safe_load(prom["data"]["prometheus.yml"])["rule_files"] == ["scalearena-rules.yml"]
    assert yaml.safe_load(prom["data"]["scalearena-rules.yml"])["groups"][0]["name"] == "model-queue"
    assert not [o for o in objs if o["kind"] in ("ScaledObject", "VariantAutoscaling", "PrometheusRule")]


def test_on_local_the_rule_groups_are_a_prometheus_rule_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil
    import subprocess

    import yaml

    from scalearena.harness.config.scenario import load_scenario
    from scalearena.harness.local import prometheus as local_prom
    from scalearena.harness.local.prometheus import PrometheusProcess

    monkeypatch.setenv("PROMETHEUS_BIN", "/bin/true")  # constructing writes the config; nothing is started
    monkeypatch.setattr(local_prom, "free_port", lambda: 9)
    sc = load_scenario(Path(__file__).resolve().parents[4] / "workloads" / "scenarios" / "byo-objects.yaml")
    prom = PrometheusProcess(None, tmp_path, 15.0, rule_groups=sc.autoscaler("my-hpa").rule_groups)  # type: ignore[arg-type]
    config = yaml.safe_load(prom.config_path.read_text())
    (rules,) = config["rule_files"]
    assert yaml.safe_load(Path(rules).read_text())["groups"][0]["rules"][0]["record"] == "model:requests_queued:sum"
    if shutil.which("promtool"):  # the real Prometheus accepts the config and its rule file
        done = subprocess.run(["promtool", "check", "config", str(prom.config_path)], capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr


VA = """apiVersion: llmd.ai/v1alpha1
kind: VariantAutoscaling
metadata: {{name: {name}}}
spec:
  modelID: {model}
  variantCost: "{cost}"
  minReplicas: 0
  maxReplicas: 4
  scaleTargetRef: {{apiVersion: apps/v1, kind: Deployment, name: {name}}}
"""


def test_variant_autoscalings_share_one_wva_with_their_costs_and_bounds(tmp_path: Path) -> None:
    from scalearena.controllers.kubernetes import _restrict
    from scalearena.controllers.wva.controller import WVA

    text = VA.format(name="va", model="m", cost="1.0") + "---\n" + VA.format(name="vb", model="m", cost="2.5")
    cfg = build(tmp_path, {"va.yaml": text}, env={})
    assert [(t.variant, t.cost, t.min_replicas, t.max_replicas, t.autoscaler.kind) for t in cfg.targets] == [
        ("va", 1.0, 0, 4, "wva"), ("vb", 2.5, 0, 4, "wva")]
    policy = Kubernetes(cfg)
    (unit,) = policy._units
    assert isinstance(unit.policy, WVA) and policy.period_s == 30.0 and policy.fast_period_s == 0.1
    seen = _restrict(view(0.0, variant("va", cost=9), variant("vb", cost=9), variant("vc")), unit.targets)
    assert [(v.name, v.cost, v.min_replicas, v.max_replicas) for v in seen.variants] == [("va", 1.0, 0, 4),
                                                                                        ("vb", 2.5, 0, 4)]
    with pytest.raises(UserError, match=r"spec.modelID: 'other', but variant 'va' serves 'm'"):
        build(tmp_path, {"va.yaml": VA.format(name="va", model="other", cost="1")}, env={})


def test_each_object_runs_on_its_own_period(tmp_path: Path) -> None:
    """An HPA (15 s sync) next to a VariantAutoscaling (WVA's 30 s cycle): the HPA decides at 0, 15, 30,
    the WVA at 0 and 30, each only for its own variant."""
    files = {"hpa.yaml": hpa(PODS), "a.yaml": ADAPTER, "vb.yaml": VA.format(name="vb", model="m", cost="1")}
    policy = Kubernetes(build(tmp_path, files))
    assert policy.period_s == 15.0
    fake = QueryMetrics({'max by (pod) (vllm:num_requests_waiting{namespace="scalearena",pod=~"va-0"})':
                         [_row("3", pod="va-0")]})
    ps = (replace(pods(3)[0], pod="va-0"),)
    seen = []
    for t in (0.0, 15.0, 30.0):
        out = policy.decide(t, view(t, variant("va", spec=1, pods=ps), variant("vb", spec=1), metrics=fake))
        seen.append(sorted(d.variant for d in out))
    assert seen == [["va", "vb"], ["va"], ["va", "vb"]]


def test_validate_checks_the_objects_offline(tmp_path: Path) -> None:
    from tests.unit.harness.cli.test_cli import scalearena

    root = Path(__file__).resolve().parents[4]
    ok = scalearena("validate", str(root / "workloads" / "scenarios" / "byo-objects.yaml"))
    assert ok.returncode == 0 and "  my-hpa: HorizontalPodAutoscaler/va-qwen -> variant va-qwen (hpa)" in ok.stdout
    yaml_text = (root / "workloads" / "scenarios" / "byo-objects.yaml").read_text()
    (tmp_path / "hpa.yaml").write_text(hpa(PODS).replace("${NS}", "scalearena"))
    scenario = yaml_text.replace("../../manifests/autoscalers/examples/hpa.yaml", "hpa.yaml") \
        .replace("../../manifests/autoscalers/examples/", str(root / "manifests/autoscalers/examples") + "/")
    (tmp_path / "s.yaml").write_text(scenario)
    bad = scalearena("validate", str(tmp_path / "s.yaml"))
    assert bad.returncode == 2
    assert bad.stderr.strip() == f"error: {tmp_path / 'hpa.yaml'}: HorizontalPodAutoscaler/my-hpa: " \
        "spec.scaleTargetRef.name: no variant 'va'; map your Deployment onto a variant with --target va=va-qwen " \
        "(deployments: in the scenario) (expected a cluster.variants name: va-qwen)"


def test_the_objects_read_the_in_memory_engine_with_their_rules(tmp_path: Path) -> None:
    """End to end over the simulator's MetricsSource: the PrometheusRule records the model's queue, the
    External metric reads it, the Object metric reads kube-state-metrics, the Pods metric the pods."""
    from scalearena.harness.metrics.memory import MemoryMetrics
    from scalearena.harness.objects import rule_groups
    from tests.unit.harness.metrics.test_memory_metrics import s

    metrics = PODS + """    - type: External
      external:
        metric: {name: "model:waiting:sum"}
        target: {type: AverageValue, averageValue: 5}
    - type: Object
      object:
        describedObject: {apiVersion: apps/v1, kind: Deployment, name: va}
        metric: {name: kube_deployment_status_replicas_unavailable}
        target: {type: Value, value: 1}
"""
    cfg = build(tmp_path, {"hpa.yaml": hpa(metrics), "a.yaml": ADAPTER, "rules.yaml": RULES})
    m = MemoryMetrics()
    m.models = {"va": "m", "vb": "m"}
    m.add_rules(rule_groups(cfg))
    for t in (0.0, 15.0):
        for pod, w in (("va-0", 6), ("va-1", 3), ("vb-0", 9)):
            m.record(pod[:2], pod, s(t, 0.1, waiting=w))
        m.record_deployment("va", t, spec=3, active=3, ready=2)
        m.end_scrape(t)
        m.evaluate_at(t)
    ps = tuple(replace(p, pod=f"va-{i}") for i, p in enumerate(pods(6, 3)))
    (d,) = Kubernetes(cfg).decide(15.0, view(15.0, variant("va", spec=2, pods=ps), metrics=m))
    got = {r.values["metric"]: (r.values["usage"], r.values["proposal"]) for r in d.reasons if r.rule == "metric"}
    # Pods: (6 + 3) / 2 = 4.5 per pod / 3 -> ceil(1.5 x 2) = 3.
    # External: the rule sums every pod of model m: 6 + 3 + 9 = 18 over 2 replicas = 9 per pod / 5 = 1.8
    #   -> ceil(18 / 5) = 4.  Object: unavailable = spec 3 - ready 2 = 1 / target 1 = ratio 1.0 -> keep 2.
    assert got == {"pods:vllm_num_requests_waiting": (4.5, 3), "external:model:waiting:sum": (9.0, 4),
                   "object:kube_deployment_status_replicas_unavailable": (1.0, 2)}
    assert d.desired_replicas == 4  # the largest; within the legacy limit max(2 x 2, 4)


def test_a_resource_metric_and_a_renamed_pod_label(tmp_path: Path) -> None:
    """resourceRules.cpu (the adapter's default chart rule shape) with pods labelled `kubernetes_pod_name`:
    the container query grouped by pod and container, summed per pod, rows matched on that label."""
    rules = """resourceRules:
  cpu:
    containerQuery: 'sum by (<<.GroupBy>>) (rate(container_cpu_usage_seconds_total{<<.LabelMatchers>>}[3m]))'
    nodeQuery: 'sum by (<<.GroupBy>>) (rate(node_cpu_seconds_total{<<.LabelMatchers>>}[3m]))'
    resources: {overrides: {namespace: {resource: namespace}, kubernetes_pod_name: {resource: pod}}}
    containerLabel: container
"""
    metrics = """    - type: Resource
      resource:
        name: cpu
        target: {type: AverageValue, averageValue: 500m}
"""
    (m,) = build(tmp_path, {"hpa.yaml": hpa(metrics), "a.yaml": rules}).targets[0].autoscaler.metrics
    assert m.query == ("sum by (kubernetes_pod_name) (sum by (kubernetes_pod_name,container) (rate("
                       f'container_cpu_usage_seconds_total{{namespace="scalearena",kubernetes_pod_name=~"{TARGET_PODS}"}}'
                       "[3m])))")
    assert (m.pod_label, m.average_value) == ("kubernetes_pod_name", 0.5)
    q = m.query.replace(TARGET_PODS, "va-0|va-1")
    fake = QueryMetrics({q: [_row("0.9", kubernetes_pod_name="va-0"), _row("0.3", kubernetes_pod_name="va-1")]})
    ps = tuple(replace(p, pod=f"va-{i}") for i, p in enumerate(pods(0, 0)))
    (d,) = Kubernetes(build(tmp_path, {"hpa.yaml": hpa(metrics), "a.yaml": rules})).decide(
        0.0, view(0.0, variant("va", spec=2, pods=ps), metrics=fake))
    # (900 + 300) milli / 2 = 600 m per pod / 500 m = 1.2 -> ceil(1.2 x 2) = 3
    assert d.desired_replicas == 3


SCALED_OBJECT = """apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata:
  name: my-so
  namespace: ${NAMESPACE}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: va-qwen}
  pollingInterval: 15
  minReplicaCount: 1
  maxReplicaCount: 8
  fallback: {failureThreshold: 3, replicas: 1, behavior: currentReplicasIfHigher}
  advanced:
    horizontalPodAutoscalerConfig:
      behavior:
        scaleUp:
          stabilizationWindowSeconds: 0
          policies: [{type: Percent, value: 100, periodSeconds: 15}]
    scalingModifiers:
      formula: "max(queue, running / 16)"
      target: "1"
  triggers:
    - type: prometheus
      name: queue
      metadata:
        serverAddress: http://prometheus.scalearena.svc:9090
        query: sum(model:requests_queued:sum{namespace="${NAMESPACE}"}) or vector(0)
        threshold: "1"
    - type: prometheus
      name: running
      metadata:
        serverAddress: http://prometheus.scalearena.svc:9090
        query: sum(vllm:num_requests_running{namespace="${NAMESPACE}"}) or vector(0)
        threshold: "16"
"""


def test_scalearena_render_applies_a_scaledobject_as_written(tmp_path: Path) -> None:
    """`scalearena render --cluster kind`: the ScaledObject goes out exactly as written (placeholders filled),
    its recording rules become the in-cluster Prometheus' rule file, no prometheus-adapter is added (KEDA
    serves the external metrics) and the plan asks for the KEDA operator."""
    import yaml
    from click.testing import CliRunner

    from scalearena.harness.config.scenario import load_scenario
    from scalearena.harness.kube.byo import uses_keda
    from scalearena.harness.kube.cli import render

    root = Path(__file__).resolve().parents[4]
    (tmp_path / "so.yaml").write_text(SCALED_OBJECT)
    scenario = (root / "workloads" / "scenarios" / "byo-objects.yaml").read_text()
    objects = f"      - {tmp_path / 'so.yaml'}\n      - {root / 'manifests/autoscalers/examples/rules.yaml'}\n"
    scenario = scenario.replace("name: my-hpa", "name: my-so").split("    objects:\n")[0] + "    objects:\n" + \
        objects + "    env: {NAMESPACE: scalearena}\n" + "slo:" + scenario.split("\nslo:")[1]
    (tmp_path / "s.yaml").write_text(scenario)
    assert uses_keda(load_scenario(tmp_path / "s.yaml").autoscaler("my-so"))
    done = CliRunner().invoke(render, [str(tmp_path / "s.yaml"), "--cluster", "kind", "--autoscaler", "my-so",
                                       "--out", str(tmp_path / "out")])
    assert done.exit_code == 0, done.output
    objs = [yaml.safe_load(f.read_text()) for f in sorted((tmp_path / "out" / "my-so").iterdir())]
    (so,) = [o for o in objs if o["kind"] == "ScaledObject"]
    assert so == yaml.safe_load(SCALED_OBJECT.replace("${NAMESPACE}", "scalearena"))
    assert not [o for o in objs if o["kind"] in ("HorizontalPodAutoscaler", "APIService")]
    (prom,) = [o for o in objs if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "prometheus-config"]
    assert yaml.safe_load(prom["data"]["scalearena-rules.yml"])["groups"][0]["rules"][0]["record"] == \
        "model:requests_queued:sum"
