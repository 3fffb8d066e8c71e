"""Property: a Kubernetes object a user brings (HorizontalPodAutoscaler, ScaledObject, VariantAutoscaling,
PrometheusRule, prometheus-adapter config) compiles to a config the policy runs, or is refused with a UserError
naming the file and the field: never pydantic's ValidationError, KeyError, TypeError or another exception.

Each example starts from a valid set of documents (the shipped examples under manifests/autoscalers/examples/
and the fixtures of tests/unit/test_objects*.py) and mutates one to three places: a value replaced by one of
the wrong type, huge, negative, NaN or infinite, a deep nest or markup; a field deleted; an unknown one added;
a whole document replaced by a scalar or a list.
"""
from __future__ import annotations

import copy
import math
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, strategies as st

from scalearena.contracts.errors import UserError
from scalearena.controllers.kubernetes import Kubernetes, KubernetesConfig
from scalearena.harness.objects import compile_objects
from tests.fuzz_settings import fuzz
from tests.unit.harness.objects.test_objects import ADAPTER, PODS, RULES, VA, hpa
from tests.unit.harness.objects.test_objects_errors import SO, Q

EXAMPLES = Path(__file__).resolve().parents[4] / "manifests" / "autoscalers" / "examples"
ENV = {"${NAMESPACE}": "ns", "${VARIANT}": "va", "${MODEL}": "m", "${NS}": "ns"}
VARIANTS = {"va": "m", "vb": "m"}


def _docs(text: str) -> list[Any]:
    for name, value in ENV.items():
        text = text.replace(name, value)
    return [d for d in yaml.safe_load_all(text) if d is not None]


SCALED_OBJECT = SO.replace("QUERY", f"'{Q}'") + """  minReplicaCount: 1
  maxReplicaCount: 8
  pollingInterval: 15
  cooldownPeriod: 300
  advanced:
    horizontalPodAutoscalerConfig:
      behavior:
        scaleUp: {stabilizationWindowSeconds: 0, policies: [{type: Percent, value: 100, periodSeconds: 15}]}
    scalingModifiers: {formula: "queue * 2", target: "3", metricType: AverageValue}
"""
BASES: list[dict[str, list[Any]]] = [  # one set of files each, as a scenario's `objects:` lists them
    {f: _docs((EXAMPLES / f).read_text()) for f in ("hpa.yaml", "prometheus-adapter.yaml", "rules.yaml")},
    {"so.yaml": _docs(SCALED_OBJECT)},
    {"hpa.yaml": _docs(hpa(PODS)), "a.yaml": _docs(ADAPTER), "r.yaml": _docs(RULES)},
    {"va.yaml": _docs(VA.format(name="va", model="m", cost="1.0") + "---\n" + VA.format(name="vb", model="m",
                                                                                     cost="2.5"))},
]
HOSTILE = st.sampled_from([
    math.nan, math.inf, -math.inf, -1, 0, 1e-9, 1e308, 10**30, 2**63, -(2**63), 2**31, "x", "", "1e999", ".inf",
    "-5", "3Gi", "500m", "1e3", "0x10", "<script>", "${UNSET}", "a" * 5000, True, False, None, [], {}, [1, 2],
    {"a": 1}, {"type": "Pods"}, "Percent", "AverageValue", "Utilization", '(a+)+"', "sum(", "é",
])
OTHER = st.one_of(st.integers(), st.floats(), st.text(max_size=12),
                  st.integers(10, 40).map(lambda n: [[[[[]]]]] * 2 if n < 20 else _nest(n)))  # past 64 levels
VALUES = st.integers(0, 3).flatmap(lambda i: OTHER if i == 0 else HOSTILE)  # mostly the named hostile values


def _nest(n: int) -> Any:
    out: Any = 1
    for _ in range(n):
        out = {"a": [out]}
    return out


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into ``node`` (as tests/adversarial's leaf_paths) down to 12 levels: not into a nest an earlier
    mutation made (hypothesis' own stack is deep already)."""
    out = [prefix] if prefix else []
    if len(prefix) < 12:
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for k, v in items:
            out += _paths(v, prefix + (k,))
    return out


def _mutate(draw: st.DrawFn, docs: list[Any]) -> None:
    i = draw(st.integers(0, len(docs) - 1))
    paths = _paths(docs[i])
    deep = [p for p in paths if len(p) > 1 and p[0] not in ("apiVersion", "kind", "metadata")]
    action = draw(st.sampled_from(["value"] * 6 + ["delete", "delete", "extra", "document"]))
    if action == "document" or not paths:
        docs[i] = copy.deepcopy(draw(VALUES))  # HOSTILE holds shared lists and dicts
        return
    path = draw(st.sampled_from(deep if deep and draw(st.integers(0, 4)) else paths))
    node = docs[i]
    try:
        for k in path[:-1]:
            node = node[k]
        if action == "value":
            node[path[-1]] = copy.deepcopy(draw(VALUES))
        elif action == "delete":
            del node[path[-1]]
        elif isinstance(node, dict):
            node[draw(st.sampled_from(["unexpected", "spec", "metrics", "0", ""]))] = copy.deepcopy(draw(VALUES))
    except (KeyError, IndexError, TypeError):
        pass  # an earlier mutation replaced part of this path: the documents are hostile all the same


@st.composite
def object_files(draw: st.DrawFn) -> dict[str, bytes]:
    files = copy.deepcopy(draw(st.sampled_from(BASES)))
    names = sorted(files)
    for _ in range(draw(st.integers(1, 3))):
        _mutate(draw, files[draw(st.sampled_from(names))])
    return {name: yaml.safe_dump_all(docs, allow_unicode=True).encode() for name, docs in files.items()}


def compile_files(files: dict[str, bytes]) -> KubernetesConfig:
    with tempfile.TemporaryDirectory() as d:
        for name, content in files.items():
            (Path(d) / name).write_bytes(content)
        compiled = compile_objects(KubernetesConfig(objects=sorted(files), env={}), Path(d), VARIANTS)
    Kubernetes(compiled)  # the policy is built from what compiled
    return compiled


def test_every_base_compiles() -> None:
    for base in BASES:
        assert compile_files({n: yaml.safe_dump_all(d).encode() for n, d in base.items()}).targets


@fuzz(250)
@given(files=object_files())
def test_any_object_compiles_or_is_a_user_error_naming_the_field(files: dict[str, bytes]) -> None:
    try:
        compile_files(files)
    except UserError as e:
        assert str(e) and ".yaml" in str(e), str(e)


def _edit(base: int, file: str, edit: Any) -> dict[str, bytes]:
    files = copy.deepcopy(BASES[base])
    edit(files[file])
    return {name: yaml.safe_dump_all(docs).encode() for name, docs in files.items()}


def _set(path: tuple[Any, ...], value: Any) -> Any:
    def edit(docs: list[Any]) -> None:
        node = docs
        for k in path[:-1]:
            node = node[k]
        if value is _DELETE:
            del node[path[-1]]
        else:
            node[path[-1]] = value
    return edit


_DELETE = object()
ADAPTER_RULE = (0, "rules", 0)


@pytest.mark.parametrize(("base", "file", "edit", "message"), [
    # a ConfigMap whose data is not a mapping: AttributeError ('float' object has no attribute 'get')
    (0, "prometheus-adapter.yaml", _set((0, "data"), math.nan), "data.config.yaml: missing"),
    # matchLabels: .nan reached the adapter's query builder: AttributeError ('float' object has no attribute 'items')
    (0, "hpa.yaml", _set((0, "spec", "metrics", 2, "external", "metric", "selector", "matchLabels"), math.nan),
     "spec.metrics.2.external.metric.selector.matchLabels"),
    (0, "hpa.yaml", _set((0, "spec", "metrics", 2, "external", "metric", "selector"), {"matchLabels": {"a": 5}}),
     "selector.matchLabels.a"),
    # averageValue .inf: pydantic's ValidationError for ExternalMetric (the HPA's internal model)
    (0, "hpa.yaml", _set((0, "spec", "metrics", 2, "external", "target", "averageValue"), math.inf),
     "spec.metrics.2.external.target.averageValue"),
    (0, "hpa.yaml", _set((0, "spec", "metrics", 2, "external", "target", "averageValue"), 1e308),
     "spec.metrics.2.external.target.averageValue"),
    (0, "hpa.yaml", _set((0, "spec", "metrics", 0, "pods", "target", "averageValue"), math.nan),
     "spec.metrics.0.pods.target.averageValue"),
    # a rule group's interval of -5 or 1e999 made promql-parser panic (PanicException, a Rust backtrace)
    (2, "r.yaml", _set((0, "spec", "groups", 0, "interval"), "-5"), "not a Prometheus duration: '-5'"),
    (2, "r.yaml", _set((0, "spec", "groups", 0, "interval"), "1e999"), "not a Prometheus duration: '1e999'"),
])
def test_what_the_fuzz_found(base: int, file: str, edit: Any, message: str) -> None:
    with pytest.raises(UserError, match=re.escape(message)):
        compile_files(_edit(base, file, edit))


def test_an_adapter_name_as_with_a_group_its_pattern_lacks_is_empty() -> None:
    """``name.as: vllm_${1}`` with ``name.matches`` removed (so ``.*``, no group) raised IndexError ('bad group
    index'); Go's Regexp.Expand makes a missing group empty, so the rule serves ``vllm_`` and the HPA's metric
    names no rule: a UserError naming the metric."""
    files = _edit(2, "a.yaml", _set(ADAPTER_RULE[:1] + ("rules", 0, "name", "matches"), _DELETE))
    with pytest.raises(UserError, match="spec.metrics.0.pods.metric.name: no prometheus-adapter rules entry serves"):
        compile_files(files)
