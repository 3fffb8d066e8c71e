"""Reading the objects' files: ``${VAR}`` substitution, documents, and what each document is.

Upstream guides ship their manifests with envsubst placeholders (``${NAMESPACE}``,
``$MODEL``) for the reader to fill in; scalearena fills them from the
autoscaler's ``env:`` before parsing, as ``envsubst < file | kubectl apply -f -``
would, except that a placeholder without a value is an error naming the file and
line (envsubst would silently write an empty string). Hand-written because
envsubst's rule is one regular expression; ``$$`` and a ``$`` not followed by a
name are left alone, as envsubst leaves them.

Each document is then classified by ``apiVersion`` and ``kind`` (or, for the
two plain configuration files, by their top-level keys: a Prometheus rule file
has ``groups``, a prometheus-adapter config has ``rules`` / ``externalRules`` /
``resourceRules``); anything else is an error that names the file and document.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from scalearena.contracts.errors import UserError
from scalearena.contracts.suggest import did_you_mean
from scalearena.harness.config.safe_yaml import parse_yaml, parse_yaml_all, read_text

KINDS: dict[tuple[str, str], str] = {
    ("autoscaling/v2", "HorizontalPodAutoscaler"): "hpa",
    ("keda.sh/v1alpha1", "ScaledObject"): "scaledobject",
    ("monitoring.coreos.com/v1", "PrometheusRule"): "rules",
    ("llmd.ai/v1alpha1", "VariantAutoscaling"): "variantautoscaling",
    ("v1", "ConfigMap"): "adapter",  # prometheus-adapter's config map (data: config.yaml)
}
_ADAPTER_KEYS = {"rules", "externalRules", "resourceRules"}
_VAR = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")


@dataclass(frozen=True)
class Doc:
    """One document of an objects file."""

    file: str  # the path as the scenario gives it
    index: int  # 0-based position in the file
    category: str  # hpa, scaledobject, rules, variantautoscaling, adapter
    data: dict[str, Any]

    @property
    def name(self) -> str:
        md = self.data.get("metadata")
        name = md.get("name") if isinstance(md, dict) else None
        return str(name) if name else f"document {self.index + 1}"

    @property
    def where(self) -> str:
        kind = self.data.get("kind")
        return f"{self.file}: {kind}/{self.name}" if kind else f"{self.file}: {self.name}"


def substitute(text: str, env: dict[str, str], where: str) -> str:
    """envsubst: ``${VAR}`` and ``$VAR`` replaced by ``env[VAR]``; an unset one is a UserError naming the
    line and, where the file parses as YAML, the object and the field that holds it."""
    def value(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2)
        if name not in env:
            line = text.count("\n", 0, m.start()) + 1
            found = locate(text, m.start())
            obj, field = found if found is not None else (None, None)
            raise UserError(f"{field + ': ' if field else ''}${{{name}}} has no value (line {line})",
                            where=f"{where}: {obj}" if obj else where, expected=f"{name} under this autoscaler's env:")
        return env[name]
    return _VAR.sub(value, text)


def locate(text: str, offset: int) -> tuple[str, str] | None:
    """(``Kind/name`` of the document, dotted path of the field) holding character ``offset`` of the raw text.

    ``yaml.compose_all`` builds the node tree with source marks and constructs nothing (an alias stays one
    shared node), so it is safe on untrusted text; None when the text does not parse."""
    try:
        docs = [d for d in yaml.compose_all(text) if d is not None]
    except yaml.YAMLError:
        return None
    for i, doc in enumerate(docs):
        if doc.start_mark.index <= offset <= doc.end_mark.index:
            return _label(doc, i), ".".join(_path(doc, offset))
    return None


def _path(node: yaml.Node, offset: int) -> list[str]:
    path: list[str] = []
    while True:
        if isinstance(node, yaml.MappingNode):
            pairs = [(k, v) for k, v in node.value if k.start_mark.index <= offset <= v.end_mark.index]
            if not pairs:
                return path
            key, node = pairs[0]
            path.append(str(key.value))
        elif isinstance(node, yaml.SequenceNode):
            items = [(j, v) for j, v in enumerate(node.value) if v.start_mark.index <= offset <= v.end_mark.index]
            if not items:
                return path
            j, node = items[0]
            path.append(str(j))
        else:
            return path


def _label(doc: yaml.Node, index: int) -> str:
    fields = {str(k.value): v for k, v in doc.value} if isinstance(doc, yaml.MappingNode) else {}
    kind = fields.get("kind")
    md = fields.get("metadata")
    name = next((v.value for k, v in md.value if k.value == "name"), None) if isinstance(md, yaml.MappingNode) else None
    label = f"{kind.value}/" if isinstance(kind, yaml.ScalarNode) else ""
    return label + (str(name) if isinstance(name, str) else f"document {index + 1}")


def classify(data: Any, file: str, index: int) -> Doc:
    where = f"{file}: document {index + 1}"
    if not isinstance(data, dict):
        raise UserError("a document must be a mapping (a Kubernetes object or a rule/adapter file)", where=where)
    if "kind" in data or "apiVersion" in data:
        key = (str(data.get("apiVersion")), str(data.get("kind")))
        category = KINDS.get(key)
        if category is None:
            known = ", ".join(f"{a} {k}" for a, k in KINDS)
            kinds = {k for _, k in KINDS}
            field = "apiVersion" if key[1] in kinds else "kind"  # a known kind at another version: its apiVersion
            name = Doc(file, index, "", data).name
            raise UserError(f"{field}: unsupported object apiVersion {key[0]!r} kind {key[1]!r}",
                            where=f"{file}: {key[1]}/{name}", expected=f"one of {known}")
        if category == "adapter":
            data = _adapter_config_map(data, where)
        return Doc(file, index, category, data)
    if "groups" in data:
        return Doc(file, index, "rules", data)
    if set(data) & _ADAPTER_KEYS:
        return Doc(file, index, "adapter", data)
    raise UserError("not a Kubernetes object (no apiVersion/kind), a rule file (groups:) or a prometheus-adapter "
                    f"config (rules:); top-level keys: {sorted(data)}", where=where)


def _adapter_config_map(data: dict[str, Any], where: str) -> dict[str, Any]:
    """The adapter config inside a ConfigMap's ``data["config.yaml"]`` (the only ConfigMap read)."""
    config_map = data.get("data")
    text = config_map.get("config.yaml") if isinstance(config_map, dict) else None
    if not isinstance(text, str):
        raise UserError("data.config.yaml: missing; the only ConfigMap read is prometheus-adapter's config",
                        where=where)
    inner = parse_yaml(text, f"{where} data.config.yaml")
    if not isinstance(inner, dict) or not set(inner) & _ADAPTER_KEYS:
        raise UserError("data.config.yaml: not a prometheus-adapter config (rules, externalRules, resourceRules)",
                        where=where)
    return {**inner, "metadata": data.get("metadata", {}), "kind": "ConfigMap"}


def _resolve(file: str, base_dir: Path | None) -> Path:
    path = Path(file)
    return base_dir / path if not path.is_absolute() and base_dir is not None else path


def placeholders(paths: list[str], base_dir: Path | None = None) -> set[str]:
    """The names of every ``${VAR}`` / ``$VAR`` the files use (what ``substitute`` would fill in)."""
    return {m.group(1) or m.group(2) for f in paths for m in _VAR.finditer(read_text(_resolve(f, base_dir)))}


def check_env_used(keys: set[str], paths: list[str], base_dir: Path | None, where: str) -> None:
    """An ``env:`` entry that no ``${VAR}`` of the files names is refused: envsubst would ignore it, and in a
    scenario it is a typo or a stale key that silently changes nothing (``THETA_UPP`` for ``THETA_UP``)."""
    used = placeholders(paths, base_dir)
    unused = sorted(keys - used)
    if unused:
        more = f" (and {', '.join(unused[1:])})" if unused[1:] else ""
        hint = did_you_mean(unused[0], used)
        raise UserError(f"env.{unused[0]}: no ${{{unused[0]}}} in {', '.join(paths)}{more}{hint}", where=where,
                        expected=f"a placeholder the objects use: {', '.join(sorted(used)) or 'they use none'}")


def load_documents(paths: list[str], env: dict[str, str], base_dir: Path | None) -> list[Doc]:
    """Every document of every file, substituted and classified, in file order."""
    docs: list[Doc] = []
    for file in paths:
        text = substitute(read_text(_resolve(file, base_dir)), env, file)
        for i, data in enumerate(parse_yaml_all(text, file)):
            docs.append(classify(data, file, i))
    return docs
