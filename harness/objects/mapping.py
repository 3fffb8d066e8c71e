"""Your cluster's names onto the scenario's: the mapping that lets objects run as they were written.

A user's HPA or ScaledObject names its own namespace (``llm-d``), its own Deployment
(``ms-qwen-decode``), the model name its vLLM serves (``Qwen/Qwen3-32B``) and its gateway's
EPP (``gaie-inference-scheduling-epp``); a scenario
exports series in namespace ``scalearena`` (contracts/series.py ``NAMESPACE``), one
Deployment per variant named after the variant, and ``model_name`` equal to the variant's
model id. Rather than asking the user to edit the objects, the documents are rewritten as if
they had been applied to the scenario's cluster:

* ``metadata.namespace`` of every document becomes the scenario's namespace, and so does the
  value of every ``namespace`` label matcher that names one of the documents' namespaces
  (the adapter builds its ``namespace="..."`` matcher from the HPA's own namespace);
* ``deployments`` (``--target DEPLOYMENT=VARIANT``): ``spec.scaleTargetRef.name`` and every
  ``deployment`` matcher naming DEPLOYMENT become VARIANT;
* ``model_names`` (``--model-name SERVED=MODEL``): every ``model_name`` matcher, selector
  ``matchLabels`` value and VariantAutoscaling ``spec.modelID`` naming SERVED becomes MODEL;
* ``epp_names`` (``--epp NAME=MODEL``, for llm-d's guides, whose queries select the EPP's series by
  ``service`` or ``inference_pool``): a ``service`` or ``inference_pool`` matcher naming NAME becomes
  the scenario's EPP service or InferencePool of MODEL (contracts/series.py ``epp_labels``).

Matchers are rewritten in every string of the documents (KEDA queries, recording rules, the
adapter's ``seriesQuery``): a label name followed by ``=``, ``!=``, ``=~`` or ``!~`` and a quoted
value equal to an old name. A regular expression is rewritten only where it is exactly the old
name; ``pod=~"ms-qwen-.*"`` and ``label_replace`` targets are left as written (validate's probe
shows a query that then matches nothing), and so is a query that does not parse, so that its
error quotes the user's own text. Hand-written: it is a rename of label values in
text, for which no PromQL library offers a printer that keeps the rest of the query as written.
"""
from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from scalearena.contracts.series import NAMESPACE, epp_labels
from scalearena.harness.objects.load import Doc
from scalearena.harness.promql.errors import PromQLError
from scalearena.harness.promql.validate import parse_supported

_MATCHER = re.compile(r"""\b(namespace|model_name|deployment|service|inference_pool)(\s*(?:=~|!~|!=|=)\s*)("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')""")


def doc_namespaces(docs: list[Doc]) -> set[str]:
    """The namespaces the documents declare in ``metadata.namespace``."""
    out = set()
    for d in docs:
        md = d.data.get("metadata")
        if isinstance(md, dict) and md.get("namespace"):
            out.add(str(md["namespace"]))
    return out


def map_documents(docs: list[Doc], deployments: dict[str, str], model_names: dict[str, str],
                  epp_names: dict[str, str] | None = None, namespace: str = NAMESPACE) -> list[Doc]:
    """``docs`` as applied to the scenario's cluster (the module docstring's rules)."""
    epp = {name: epp_labels(model, namespace) for name, model in (epp_names or {}).items()}
    renames = {"namespace": {ns: namespace for ns in doc_namespaces(docs)},
               "deployment": dict(deployments), "model_name": dict(model_names),
               "service": {name: lab["service"] for name, lab in epp.items()},
               "inference_pool": {name: lab["inference_pool"] for name, lab in epp.items()}}
    if not any(old != new for r in renames.values() for old, new in r.items()):
        return docs
    return [replace(d, data=_map_doc(d.data, renames, namespace)) for d in docs]


def rename_matchers(text: str, renames: dict[str, dict[str, str]]) -> str:
    """``text`` with each label matcher ``label OP "old"`` of a label in ``renames`` given its new value."""
    def one(m: re.Match[str]) -> str:
        label, op, quoted = m.group(1), m.group(2), m.group(3)
        new = renames.get(label, {}).get(quoted[1:-1])
        return m.group(0) if new is None else f'{label}{op}"{_escape(new)}"'
    mapped = _MATCHER.sub(one, text)
    if mapped != text and "<<" not in text and not _parses(text):
        return text  # a query that does not parse keeps the user's text, so its error points into their file
    return mapped


def _parses(text: str) -> bool:
    try:
        parse_supported(text)  # its size checks first: a deep query never reaches the parser (promql/shape.py)
    except PromQLError:
        return False
    return True


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


def _map_doc(data: dict[str, Any], renames: dict[str, dict[str, str]], namespace: str) -> dict[str, Any]:
    out = _walk(data, renames)
    md = out.get("metadata")
    if isinstance(md, dict) and md.get("namespace"):
        out["metadata"] = {**md, "namespace": namespace}
    spec = out.get("spec")
    if isinstance(spec, dict):
        ref = spec.get("scaleTargetRef")
        if isinstance(ref, dict) and str(ref.get("name")) in renames["deployment"]:
            spec["scaleTargetRef"] = {**ref, "name": renames["deployment"][str(ref["name"])]}
        if str(spec.get("modelID")) in renames["model_name"]:
            spec["modelID"] = renames["model_name"][str(spec["modelID"])]
    return out


def _walk(node: Any, renames: dict[str, dict[str, str]]) -> Any:
    """A copy of ``node`` with matchers renamed in its strings and in ``matchLabels`` mappings."""
    if isinstance(node, dict):
        out = {k: _walk(v, renames) for k, v in node.items()}
        labels = out.get("matchLabels")
        if isinstance(labels, dict):
            out["matchLabels"] = {k: renames.get(k, {}).get(str(v), v) for k, v in labels.items()}
        return out
    if isinstance(node, list):
        return [_walk(v, renames) for v in node]
    return rename_matchers(node, renames) if isinstance(node, str) else node
