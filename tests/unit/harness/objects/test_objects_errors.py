"""Every bad-input case of issue 12 for a ScaledObject (and the HPA's query path): one UserError naming the
file, the object (Kind/name), the field path and, for a query, the character position.

Expected positions of syntax errors are the real Prometheus parser's (``promtool check rules`` on the same
expressions, Prometheus 2.42: "1:22: parse error: unexpected end of input" is 0-based character 21).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from scalearena.contracts.errors import UserError
from scalearena.controllers.kubernetes import KubernetesConfig, ObjectTarget
from scalearena.harness.objects import compile_objects
from scalearena.harness.promql.position import error_position

SO = """apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata:
  name: my-so
  namespace: ${NAMESPACE}
spec:
  scaleTargetRef: {name: va}
  triggers:
    - type: prometheus
      name: queue
      metadata:
        query: QUERY
        threshold: "3"
"""
Q = 'sum(llm_d_epp_flow_control_queue_size{namespace="${NAMESPACE}"}) or vector(0)'


def compile_so(tmp_path: Path, text: str) -> KubernetesConfig:
    (tmp_path / "so.yaml").write_text(text)
    cfg = KubernetesConfig(objects=["so.yaml"], env={"NAMESPACE": "ns"})
    return compile_objects(cfg, tmp_path, {"va": "m"})


def so(query: str = Q, extra: str = "") -> str:
    return SO.replace("QUERY", f"'{query}'") + extra


CASES = [
    ("unknown apiVersion", so().replace("keda.sh/v1alpha1", "keda.sh/v1beta1"),
     "so.yaml: ScaledObject/my-so: apiVersion: unsupported object apiVersion 'keda.sh/v1beta1' kind 'ScaledObject'"),
    ("unknown kind", so().replace("kind: ScaledObject", "kind: ScaledJob"),
     "so.yaml: ScaledJob/my-so: kind: unsupported object apiVersion 'keda.sh/v1alpha1' kind 'ScaledJob'"),
    ("missing field", so().replace('        threshold: "3"\n', ""),
     "so.yaml: ScaledObject/my-so: spec.triggers.0.metadata.threshold: required field is missing"),
    ("unknown field", so(extra="  pollingInterva: 5\n"),
     "so.yaml: ScaledObject/my-so: spec.pollingInterva: unknown field"),
    # 'sum(' 4 + llm_d_epp_flow_control_queue_size 33 + '{namespace="ns"}' 16 + ')' 1 + ' or vector(0)' 13
    # + ' +' 2 = 69 characters: cut short, the error is at the end (69)
    ("query the parser rejects", so(Q + " +"),
     "so.yaml: ScaledObject/my-so: spec.triggers.0.metadata.query: PromQL parse error: unexpected end of input "
     "at character 69 of"),
    ("query with a bad token", so("sum by (a b) (x)"),
     "spec.triggers.0.metadata.query: PromQL parse error: unexpected 'b' at character 10 of 'sum by (a b) (x)'"),
    ("function outside the subset", so("predict_linear(x[5m], 60)"),
     "so.yaml: ScaledObject/my-so: spec.triggers.0.metadata.query: function predict_linear() is outside the "
     "supported PromQL subset at character 0 of"),
    ("query returning a range vector", so("vllm:num_requests_waiting[5m]"),
     "so.yaml: ScaledObject/my-so: spec.triggers.0.metadata.query: the query returns a range vector; an autoscaler "
     "or a rule reads an instant vector or a scalar"),
    ("query nested past 64 levels", so("(" * 65 + "x" + ")" * 65),
     "so.yaml: ScaledObject/my-so: spec.triggers.0.metadata.query: nested more than 64 levels deep at character 64"),
    ("unresolved ${VAR} (block style)", so().replace("scaleTargetRef: {name: va}",
                                                     "scaleTargetRef:\n    name: ${TARGET}"),
     "so.yaml: ScaledObject/my-so: spec.scaleTargetRef.name: ${TARGET} has no value (line 8)"),
    ("formula that does not parse", so(extra="  advanced:\n    scalingModifiers:\n      formula: 'queue * (2'\n"
                                             "      target: '1'\n"),
     "so.yaml: ScaledObject/my-so: spec.advanced.scalingModifiers.formula: formula 'queue * (2' does not parse: "
     "unexpected end of formula (column 11)"),
    ("formula naming no trigger", so(extra="  advanced:\n    scalingModifiers:\n      formula: 'queu / 2'\n"
                                           "      target: '1'\n"),
     "so.yaml: ScaledObject/my-so: spec.advanced.scalingModifiers.formula:"),
    ("trigger type", so().replace("type: prometheus", "type: cpu"),
     "so.yaml: ScaledObject/my-so: spec.triggers.0.type: trigger type 'cpu' is not supported"),
    ("threshold not a number", so().replace('threshold: "3"', 'threshold: "three"'),
     "so.yaml: ScaledObject/my-so: spec.triggers.0.metadata.threshold: 'three' is not a number"),
]


@pytest.mark.parametrize(("case", "text", "message"), CASES, ids=[c[0] for c in CASES])
def test_each_bad_scaledobject_is_one_error_with_file_object_and_field(tmp_path: Path, case: str, text: str,
                                                                        message: str) -> None:
    with pytest.raises(UserError) as e:
        compile_so(tmp_path, text)
    assert message in str(e.value), str(e.value)


def test_an_unresolved_placeholder_in_flow_style_still_names_file_line_and_object(tmp_path: Path) -> None:
    text = so().replace("{name: va}", "{name: '${TARGET}'}")
    with pytest.raises(UserError) as e:
        compile_so(tmp_path, text)
    assert str(e.value).startswith("so.yaml: ScaledObject/my-so: spec.scaleTargetRef.name: ${TARGET} has no value "
                                   "(line 7)")


def test_an_env_key_no_placeholder_names_is_refused_with_the_closest_one(tmp_path: Path) -> None:
    # so.yaml names ${NAMESPACE} only (in its query); NAMESPAC is a typo envsubst would silently ignore
    (tmp_path / "so.yaml").write_text(so())
    cfg = KubernetesConfig(objects=["so.yaml"], env={"NAMESPACE": "ns", "NAMESPAC": "ns"})
    with pytest.raises(UserError) as e:
        compile_objects(cfg, tmp_path, {"va": "m"})
    assert str(e.value) == ("autoscaler kubernetes: env.NAMESPAC: no ${NAMESPAC} in so.yaml; did you mean "
                            "'NAMESPACE'? (expected a placeholder the objects use: NAMESPACE)")


def test_the_exit_code_is_2_with_one_line(tmp_path: Path) -> None:
    from tests.unit.harness.cli.test_cli import scalearena

    (tmp_path / "so.yaml").write_text(so(Q + " +"))
    scenario = Path(__file__).resolve().parents[4] / "workloads" / "scenarios" / "byo-objects.yaml"
    text = scenario.read_text().split("autoscalers:")[0] + (
        "autoscalers:\n  - {kind: kubernetes, name: mine, objects: [so.yaml], env: {NAMESPACE: ns}}\n"
        "slo: {ttft_ms: 1000, itl_ms: 50}\n")
    (tmp_path / "s.yaml").write_text(text.replace("name: va-qwen", "name: va"))
    done = scalearena("validate", str(tmp_path / "s.yaml"))
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"error: {tmp_path / 'so.yaml'}: ScaledObject/my-so: spec.triggers.0.metadata.query: "
                           "PromQL parse error: unexpected end of input at character 69 of"), line


# (query, 0-based position Prometheus 2.42 reports for it, via promtool check rules)
PROMETHEUS_POSITIONS = [
    ("sum(x) or vector(0) +", 21),  # 1:22: unexpected end of input
    ("sum by (a b) (x)", 10),  # 1:11: unexpected identifier "b" in grouping opts
    ("x +* y", 3),  # 1:4: unexpected <op:*>
    ('sum(x{a="b"', 11),  # 1:12: unexpected end of input inside braces
]


@pytest.mark.parametrize(("query", "expected"), PROMETHEUS_POSITIONS)
def test_syntax_error_positions_match_prometheus(query: str, expected: int) -> None:
    assert error_position(query) == expected


@pytest.mark.parametrize(("query", "expected"), [
    ("histogram_quantile(0.9, sum by (le) (rate(x_bucket[1m]))) / 0.5 )", 64),  # the stray ")" at the end
    ('label_replace(x, "a", "b", "c", "d") + * 2', 39),  # "*" after "+"
    ("clamp_max(x, 2)[45s:15s] + 1", 25),  # a range vector in arithmetic: "+" is where it cannot go on
    ("topk(3, x", 9),  # cut short
])
def test_syntax_error_positions_in_calls_and_subqueries(query: str, expected: int) -> None:
    assert error_position(query) == expected


@pytest.mark.parametrize(("query", "message", "expected"), [
    # promql-parser lexes the whole text first, so it answers "unclosed left parenthesis" (an end-of-input lexer
    # error); Prometheus' parser reads tokens as it goes and stops at "by", where no completion of "sum(x by"
    # parses. promtool check rules (2.42): "1:7: parse error: unexpected <by> in aggregation" -> 0-based 6
    ("sum(x by (a)", "unexpected 'by'", 6),
    ("sum(rate(x[5m]) by", "unexpected 'by'", 16),  # "1:17: ... unexpected <by> in aggregation"
    # cut short: the lexer's end-of-input error is what Prometheus says too: "1:6: ... unclosed left parenthesis"
    ("sum(x", "unclosed left parenthesis", 5),
])
def test_a_lexer_end_of_input_error_is_told_where_the_parser_stops(query: str, message: str, expected: int) -> None:
    from scalearena.harness.promql.errors import PromQLParseError
    from scalearena.harness.promql.validate import parse_supported

    with pytest.raises(PromQLParseError) as info:
        parse_supported(query)
    assert info.value.message == f"PromQL parse error: {message}" and info.value.position == expected


def _va(spec: str) -> object:
    import yaml

    from scalearena.harness.objects.load import classify
    from scalearena.harness.objects.va import variant_autoscaling

    doc = classify(yaml.safe_load("apiVersion: llmd.ai/v1alpha1\nkind: VariantAutoscaling\nmetadata: {name: v}\n"
                                  f"spec: {{scaleTargetRef: {{name: va}}, {spec}}}"), "va.yaml", 0)
    return variant_autoscaling(doc, "va", "m")


@pytest.mark.parametrize(("spec", "message"), [
    ("minReplicas: .inf", "spec.minReplicas"),  # was OverflowError: an internal error
    ("minReplicas: true", "spec.minReplicas"),  # the CRD's integer type: not a boolean
    ("maxReplicas: 1.5", "spec.maxReplicas"),
    ("minReplicas: -1", "spec.minReplicas"),
    ("maxReplicas: 1001", "spec.maxReplicas"),  # MAX_REPLICAS 1000
    ("minReplicas: 5, maxReplicas: 2", "maxReplicas 2: must be greater than or equal to minReplicas (5)"),
    ("variantCost: 10.0", "spec.variantCost"),  # the CRD types it a decimal string
    ('variantCost: "1e3"', "spec.variantCost"),  # ^\d+(\.\d+)?$
    ('variantCost: "0"', "variantCost 0: must be above 0"),
    ("modelID: other", "spec.modelID: 'other', but variant 'va' serves 'm'"),
])
def test_a_variant_autoscaling_the_api_server_would_refuse_is_one_named_error(spec: str, message: str) -> None:
    with pytest.raises(UserError) as e:
        _va(spec)
    assert message in str(e.value) and "ValidationError" not in str(e.value) and "ObjectTarget" not in str(e.value)


def test_a_valid_variant_autoscaling_carries_its_cost_and_bounds() -> None:
    t = _va('modelID: m, variantCost: "2.5", minReplicas: 0, maxReplicas: 4')
    assert isinstance(t, ObjectTarget)
    assert (t.variant, t.cost, t.min_replicas, t.max_replicas) == ("va", 2.5, 0, 4)
