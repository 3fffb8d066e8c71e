"""Objects written for the user's cluster, mapped onto the scenario's names (harness/objects/mapping.py,
harness/cli/objects.py): namespace always, Deployments by --target, model names by --model-name.

Expected queries are worked out from prometheus-adapter's Build() as in test_objects.py: the selector's
matchers sorted by key, then namespace="<the HPA's namespace>", then the pod matcher; after the mapping
the HPA's namespace is the scenario's, ``scalearena``.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from scalearena.cli import main
from scalearena.contracts.errors import UserError
from scalearena.controllers.hpa.engine import TARGET_PODS
from scalearena.controllers.kubernetes import KubernetesConfig
from scalearena.harness.objects import compile_objects
from scalearena.harness.objects.load import classify
from scalearena.harness.objects.mapping import map_documents, rename_matchers

ROOT = Path(__file__).resolve().parents[4]
ADAPTER = """
apiVersion: v1
kind: ConfigMap
metadata: {name: adapter, namespace: llm-d}
data:
  config.yaml: |
    rules:
      - seriesQuery: 'vllm:num_requests_waiting{namespace!="",pod!=""}'
        resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}}}
        name: {matches: "^vllm:(.*)$", as: "vllm_${1}"}
        metricsQuery: 'max by (<<.GroupBy>>) (<<.Series>>{<<.LabelMatchers>>})'
    externalRules:
      - seriesQuery: '{__name__="vllm:num_requests_running",namespace="llm-d"}'
        resources: {overrides: {namespace: {resource: namespace}}}
        metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>})'
"""
HPA = """
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: decode, namespace: llm-d}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: ms-qwen-decode}
  maxReplicas: 8
  metrics:
    - type: Pods
      pods:
        metric: {name: vllm_num_requests_waiting}
        target: {type: AverageValue, averageValue: "3"}
    - type: External
      external:
        metric: {name: "vllm:num_requests_running", selector: {matchLabels: {model_name: Qwen/Qwen3-0.6B}}}
        target: {type: AverageValue, averageValue: "4"}
"""
SO = """
apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata: {name: so, namespace: llm-d}
spec:
  scaleTargetRef: {name: ms-qwen-decode}
  triggers:
    - type: prometheus
      name: waiting
      metadata:
        serverAddress: http://prometheus:9090
        query: sum(vllm:num_requests_waiting{namespace="llm-d",model_name="Qwen/Qwen3-0.6B"})
        threshold: "5"
"""


def test_rename_matchers_touches_matchers_of_the_mapped_values_only() -> None:
    renames = {"namespace": {"llm-d": "scalearena"}, "model_name": {"Qwen/Qwen3-0.6B": "qwen3-0.6b"}}
    q = ('sum by (namespace) (x{namespace="llm-d", model_name=~"Qwen/Qwen3-0.6B", pod!="llm-d"}) '
         '+ y{namespace!="other",model_name = "Qwen/Qwen3-0.6B"}')
    assert rename_matchers(q, renames) == (
        'sum by (namespace) (x{namespace="scalearena", model_name=~"qwen3-0.6b", pod!="llm-d"}) '
        '+ y{namespace!="other",model_name = "qwen3-0.6b"}')
    # a query that does not parse keeps the user's text (its error then quotes their file)
    assert rename_matchers('sum(x{namespace="llm-d"}) +', renames) == 'sum(x{namespace="llm-d"}) +'
    # a regex that is not exactly the old value is left as written (docstring: no regex rewriting)
    assert rename_matchers('x{model_name=~"Qwen/.*"}', renames) == 'x{model_name=~"Qwen/.*"}'


def test_documents_are_mapped_as_if_applied_to_the_scenarios_cluster() -> None:
    import yaml

    docs = [classify(yaml.safe_load(t), "f.yaml", i) for i, t in enumerate((HPA, SO))]
    hpa, so = map_documents(docs, {"ms-qwen-decode": "va"}, {"Qwen/Qwen3-0.6B": "m"})
    assert hpa.data["metadata"]["namespace"] == so.data["metadata"]["namespace"] == "scalearena"
    assert hpa.data["spec"]["scaleTargetRef"]["name"] == so.data["spec"]["scaleTargetRef"]["name"] == "va"
    assert hpa.data["spec"]["metrics"][1]["external"]["metric"]["selector"]["matchLabels"] == {"model_name": "m"}
    assert so.data["spec"]["triggers"][0]["metadata"]["query"] == \
        'sum(vllm:num_requests_waiting{namespace="scalearena",model_name="m"})'
    assert docs[0].data["metadata"]["namespace"] == "llm-d"  # the originals are not changed in place


def test_compiled_objects_read_the_scenarios_series(tmp_path: Path) -> None:
    for name, text in (("adapter.yaml", ADAPTER), ("hpa.yaml", HPA)):
        (tmp_path / name).write_text(text)
    cfg = KubernetesConfig(objects=["adapter.yaml", "hpa.yaml"], deployments={"ms-qwen-decode": "va"},
                           model_names={"Qwen/Qwen3-0.6B": "m"})
    (t,) = compile_objects(cfg, tmp_path, {"va": "m"}).targets
    pods, external = t.autoscaler.metrics
    assert t.variant == "va"
    # Build(): namespace matcher from the (mapped) HPA namespace, then the pods of the target
    assert pods.query == f'max by (pod) (vllm:num_requests_waiting{{namespace="scalearena",pod=~"{TARGET_PODS}"}})'
    # BuildExternal(): the selector's matchers, then the namespace; the seriesQuery's llm-d was mapped too
    assert external.query == 'sum(vllm:num_requests_running{model_name="m",namespace="scalearena"})'


def test_mapping_onto_a_variant_or_model_the_scenario_lacks_is_refused(tmp_path: Path) -> None:
    (tmp_path / "hpa.yaml").write_text(HPA)
    with pytest.raises(UserError, match=r"deployments.ms-qwen-decode: no variant 'vx'.*expected a cluster.variants"):
        compile_objects(KubernetesConfig(objects=["hpa.yaml"], deployments={"ms-qwen-decode": "vx"}), tmp_path,
                        {"va": "m"})
    with pytest.raises(UserError, match=r"model_names.Q: no model 'qwen'; did you mean 'qwen3'"):
        compile_objects(KubernetesConfig(objects=["hpa.yaml"], model_names={"Q": "qwen"}), tmp_path,
                        {"va": "qwen3"})
    with pytest.raises(UserError, match=r"no variant 'ms-qwen-decode'; map your Deployment onto a variant with "
                                        r"--target ms-qwen-decode=va"):
        compile_objects(KubernetesConfig(objects=["hpa.yaml"]), tmp_path, {"va": "m"})


def _my_objects(tmp_path: Path) -> Path:
    """The shipped example objects as a user of llm-d's guides would have them: namespace llm-d, their own
    Deployment and served model name written in."""
    folder = tmp_path / "mine"
    folder.mkdir()
    for f in (ROOT / "manifests/autoscalers/examples").glob("*.yaml"):
        text = f.read_text().replace("${NAMESPACE}", "llm-d").replace("${VARIANT}", "ms-qwen-decode")
        (folder / f.name).write_text(text.replace("${MODEL}", "Qwen/Qwen3-0.6B"))
    return folder


def test_validate_lists_each_query_of_the_mapped_objects(tmp_path: Path) -> None:
    scenario = str(ROOT / "workloads/scenarios/byo-objects.yaml")
    args = ["validate", scenario, "--objects", str(_my_objects(tmp_path)), "--target", "ms-qwen-decode=va-qwen"]
    r = CliRunner().invoke(main, [*args, "--model-name", "Qwen/Qwen3-0.6B=qwen3-0.6b"])
    assert r.exit_code == 0, r.output
    assert "autoscalers: hpa, my-hpa, objects" in r.output
    assert "objects: HorizontalPodAutoscaler/ms-qwen-decode -> variant va-qwen (hpa)" in r.output
    mine = r.output.split("objects: HorizontalPodAutoscaler/ms-qwen-decode", 1)[1]
    # three queries (two Pods metrics, one External), each found series in the probe; no warning
    assert mine.count("[ok: read 9 times") == 3 and "warning" not in r.output, r.output
    assert 'model_name="qwen3-0.6b",namespace="scalearena"' in mine
    r = CliRunner().invoke(main, args)  # the model name not mapped: its External metric reads nothing
    assert r.exit_code == 0 and "[NO SERIES: read 9 times, never a value]" in r.output, r.output
    assert "warning:" in r.output and "--model-name SERVED=MODEL" in r.output


@pytest.mark.parametrize(("args", "message"), [
    (["--target", "a=b"], "--target without --objects"),
    (["--objects", "nowhere.yaml"], "no such file or folder: 'nowhere.yaml'"),
    (["--objects", "EMPTY"], "holds no .yaml or .yml file"),
    (["--objects", "HPA", "--target", "ms-qwen-decode"], "expected DEPLOYMENT=VARIANT"),
])
def test_objects_flags_refuse_bad_input_with_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    (tmp_path / "EMPTY").mkdir()
    (tmp_path / "HPA").write_text(HPA)
    args = [str(tmp_path / a) if a in ("EMPTY", "HPA") else a for a in args]
    r = CliRunner().invoke(main, ["validate", str(ROOT / "workloads/scenarios/byo-objects.yaml"), *args])
    assert r.exit_code == 2 and message in r.output, r.output
    assert "Traceback" not in r.output


def _mapped_scenario(tmp_path: Path, duration_s: int = 600) -> object:
    from scalearena.harness.cli.objects import objects_autoscaler
    from scalearena.harness.config.scenario import load_scenario

    added = objects_autoscaler((str(_my_objects(tmp_path)),), ("ms-qwen-decode=va-qwen",),
                               ("Qwen/Qwen3-0.6B=qwen3-0.6b",), ())
    return load_scenario(ROOT / "workloads/scenarios/byo-objects.yaml", [f"duration_s={duration_s}"],
                         add_autoscalers=added)


def test_mapped_objects_decide_exactly_as_the_shipped_ones(tmp_path: Path) -> None:
    """The mapping is a renaming: the user's llm-d-named copy and the shipped example (filled with the
    scenario's names) make the same decisions, so their runs are identical figure for figure."""
    import json

    out = tmp_path / "out"
    args = ["run", str(ROOT / "workloads/scenarios/byo-objects.yaml"), "--out", str(out), "--set", "duration_s=180",
            "--objects", str(_my_objects(tmp_path)), "--target", "ms-qwen-decode=va-qwen",
            "--model-name", "Qwen/Qwen3-0.6B=qwen3-0.6b", "--autoscaler", "objects", "--autoscaler", "my-hpa"]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    mine, shipped = (json.loads((out / "byo-objects" / a / "summary.json").read_text()) for a in ("objects", "my-hpa"))
    numbers = {k for k, v in shipped.items() if isinstance(v, int | float) and not isinstance(v, bool)}
    assert {k: mine[k] for k in numbers} == {k: shipped[k] for k in numbers}
    assert shipped["scaling_actions"] > 0  # not two runs that both sat at one replica


def test_the_cluster_gets_the_mapped_objects(tmp_path: Path) -> None:
    """On kind/cluster the objects applied are the mapped ones (the namespace the kube backend deploys into, the
    variant's Deployment), so the real controllers run what the simulator evaluated."""
    import yaml

    from scalearena.harness.kube.backend import KubeBackend

    sc = _mapped_scenario(tmp_path)
    objs = KubeBackend("kind").plan(sc, sc.autoscaler("objects"))  # type: ignore[attr-defined]
    (hpa,) = [o for o in objs if o["kind"] == "HorizontalPodAutoscaler"]
    assert hpa["metadata"]["namespace"] == "scalearena" and hpa["spec"]["scaleTargetRef"]["name"] == "va-qwen"
    assert hpa["spec"]["metrics"][2]["external"]["metric"]["selector"]["matchLabels"] == {"model_name": "qwen3-0.6b"}
    (adapter,) = [o for o in objs if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "prometheus-adapter-config"]
    assert yaml.safe_load(adapter["data"]["config.yaml"])["rules"][0]["resources"]["overrides"]["namespace"] == \
        {"resource": "namespace"}


def test_a_guide_scaledobject_under_cluster_names_decides_as_the_llmd_queue_recipe(tmp_path: Path) -> None:
    """manifests/autoscalers/examples/llm-d-names/keda is llm-d's queue guide ScaledObject with a cluster's names
    (namespace llm-d, EPP service gaie-qwen-epp, model Qwen/Qwen3-0.6B); mapped with --target/--model-name/--epp
    it is the `llmd-queue` recipe (same triggers, thresholds 1 and 16, windows 300 s) on a variant whose
    max_replicas equals its maxReplicaCount 8, so the two runs are identical figure for figure."""
    import json

    out = tmp_path / "out"
    r = CliRunner().invoke(main, [
        "run", str(ROOT / "workloads/scenarios/exp1-staircase.yaml"), "--out", str(out),
        "--set", "duration_s=400", "--set", "router.admission.kind=flow_control",
        "--set", "cluster.variants.0.max_replicas=8",
        "--objects", str(ROOT / "manifests/autoscalers/examples/llm-d-names/keda"), "--target", "ms-qwen-decode=va-qwen",
        "--model-name", "Qwen/Qwen3-0.6B=qwen3-0.6b", "--epp", "gaie-qwen-epp=qwen3-0.6b",
        "--autoscaler", "objects", "--autoscaler", "llmd-queue"])
    assert r.exit_code == 0, r.output
    mine, recipe = (json.loads((out / "exp1-staircase" / a / "summary.json").read_text())
                    for a in ("objects", "llmd-queue"))
    numbers = {k for k, v in recipe.items() if isinstance(v, int | float) and not isinstance(v, bool)}
    assert {k: mine[k] for k in numbers} == {k: recipe[k] for k in numbers}
    assert recipe["scaling_actions"] > 0
