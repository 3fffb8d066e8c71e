"""Strategic merge and JSON 6902 patches, the two kinds kustomize applies.

Kept apart from the renderer because the kube backend also uses the strategic
merge to lay a scenario's variant settings over an overlay's Deployment.

Strategic merge follows the Kubernetes merge keys for the lists manifests/
patches (containers and initContainers by name, env by name, ports by
containerPort, volumes by name, volumeMounts by mountPath); any other list is
replaced, a null value deletes a key, ``$patch: delete`` on a keyed list item
removes it.
"""
from __future__ import annotations

import copy
from typing import Any

from scalearena.contracts.errors import UserError

MERGE_KEYS: dict[str, str] = {
    "containers": "name",
    "initContainers": "name",
    "env": "name",
    "ports": "containerPort",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "imagePullSecrets": "name",
}


def strategic_merge(base: Any, patch: Any, field: str | None = None) -> Any:
    if isinstance(base, dict) and isinstance(patch, dict):
        out = copy.deepcopy(base)
        for key, value in patch.items():
            if value is None:
                out.pop(key, None)
            elif key in out:
                out[key] = strategic_merge(out[key], value, key)
            else:
                out[key] = _strip_directives(copy.deepcopy(value))
        return out
    if isinstance(base, list) and isinstance(patch, list) and field in MERGE_KEYS:
        return _merge_keyed_list(base, patch, MERGE_KEYS[field])
    return _strip_directives(copy.deepcopy(patch))


def _merge_keyed_list(base: list[Any], patch: list[Any], key: str) -> list[Any]:
    out = copy.deepcopy(base)
    added: list[Any] = []  # kustomize puts items new to the list first, in patch order
    for item in patch:
        if not isinstance(item, dict) or key not in item:
            raise UserError(f"strategic merge: list item without merge key {key!r}: {item!r}")
        idx = next((i for i, b in enumerate(out) if isinstance(b, dict) and b.get(key) == item[key]), None)
        if item.get("$patch") == "delete":
            if idx is not None:
                out.pop(idx)
        elif idx is None:
            added.append(_strip_directives(copy.deepcopy(item)))
        else:
            out[idx] = strategic_merge(out[idx], item)
    return added + out


def _strip_directives(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_directives(v) for k, v in value.items() if not k.startswith("$patch")}
    if isinstance(value, list):
        return [_strip_directives(v) for v in value]
    return value


# ---- JSON 6902 ----------------------------------------------------------------------------------


def _tokens(path: str) -> list[str]:
    if not path.startswith("/"):
        raise UserError(f"JSON patch path must start with '/': {path!r}")
    return [t.replace("~1", "/").replace("~0", "~") for t in path[1:].split("/")]


def _parent(doc: Any, tokens: list[str], path: str) -> Any:
    node = doc
    for t in tokens[:-1]:
        try:
            node = node[int(t)] if isinstance(node, list) else node[t]
        except (KeyError, IndexError, ValueError):
            raise UserError(f"JSON patch path not found: {path}") from None
    return node


def apply_json6902(obj: dict[str, Any], ops: list[dict[str, Any]]) -> dict[str, Any]:
    """Apply add / replace / remove / test operations (RFC 6902 subset)."""
    doc = copy.deepcopy(obj)
    for op in ops:
        kind, path = op.get("op"), op.get("path", "")
        tokens = _tokens(path)
        parent = _parent(doc, tokens, path)
        last = tokens[-1]
        if kind in ("add", "replace"):
            if isinstance(parent, list):
                if last == "-":
                    parent.append(copy.deepcopy(op["value"]))
                elif kind == "add":
                    parent.insert(int(last), copy.deepcopy(op["value"]))
                else:
                    parent[int(last)] = copy.deepcopy(op["value"])
            else:
                if kind == "replace" and last not in parent:
                    raise UserError(f"JSON patch replace: {path} does not exist")
                parent[last] = copy.deepcopy(op["value"])
        elif kind == "remove":
            try:
                del parent[int(last) if isinstance(parent, list) else last]
            except (KeyError, IndexError):
                raise UserError(f"JSON patch remove: {path} does not exist") from None
        elif kind == "test":
            have = parent[int(last)] if isinstance(parent, list) else parent.get(last)
            if have != op.get("value"):
                raise UserError(f"JSON patch test failed at {path}: {have!r} != {op.get('value')!r}")
        else:
            raise UserError(f"JSON patch op {kind!r} not supported", expected="add, replace, remove or test")
    return doc
