"""``--set dotted.key=value`` overrides applied to a scenario or suite document before validation."""
from __future__ import annotations

import copy
from typing import Any

from scalearena.contracts.errors import UserError
from scalearena.harness.config.safe_yaml import parse_yaml


def parse_override(item: str) -> tuple[list[str], Any]:
    if "=" not in item:
        raise UserError(f"--set {item!r}: missing '='", expected="dotted.key=value")
    key, raw = item.split("=", 1)
    if not key:
        raise UserError(f"--set {item!r}: empty key", expected="dotted.key=value")
    return key.split("."), parse_yaml(raw, f"--set {key}")


def apply_overrides(data: Any, overrides: list[str], where: str = "--set") -> Any:
    """Apply ``dotted.key=value`` overrides; list items are addressed by index."""
    data = copy.deepcopy(data)
    for item in overrides:
        keys, value = parse_override(item)
        node = data
        for i, k in enumerate(keys):
            last = i == len(keys) - 1
            if isinstance(node, list):
                path = ".".join(keys[:i]) or "the document"
                if not k.isdigit():
                    raise UserError(f"--set {item!r}: {path} is a list, {k!r} is not an index", where=where,
                                    expected=f"an index 0..{len(node) - 1}" if node else "nothing: the list is empty")
                if int(k) >= len(node):
                    raise UserError(f"--set {item!r}: {path} has {len(node)} item{'s' * (len(node) != 1)}, no index {k}",
                                    where=where, expected=f"an index 0..{len(node) - 1}" if node
                                    else "nothing: the list is empty")
                if last:
                    node[int(k)] = value
                else:
                    node = node[int(k)]
            elif isinstance(node, dict):
                if last:
                    node[k] = value
                else:
                    node = node.setdefault(k, {})
            else:
                raise UserError(f"--set {item!r}: {'.'.join(keys[:i])} is not a mapping", where=where)
    return data
