"""Reading user YAML (scenarios, suites, ``--set`` values) without trusting it.

PyYAML's ``safe_load`` refuses arbitrary objects but not a small file that
explodes: nine anchors each aliasing the previous one nine times (a "billion
laughs" file of 1.6 KB) load as a shared graph, and the first code that walks
it as a tree (pydantic validation, ``deepcopy``) expands it to billions of
values. PyYAML has no switch for that, and no maintained safe loader we use
has one either, so the loaded graph is measured here, iteratively: the number
of values after expanding every alias, and the nesting depth; past the limits
of ``contracts.limits`` the file is refused before anything walks it. The
other ways a file breaks the loader (bytes that are not UTF-8, an integer of
thousands of digits, nesting deep enough to exhaust Python's stack, a file
larger than any scenario) become ``UserError``s naming the file too.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from scalearena.contracts.errors import UserError
from scalearena.contracts.files import read_regular
from scalearena.contracts.limits import MAX_YAML_BYTES, MAX_YAML_DEPTH, MAX_YAML_NODES


def expanded_size(data: Any, where: str) -> int:
    """Values in ``data`` counting each alias as a full copy; refuses cycles, depth and size past the limits."""
    memo: dict[int, int] = {}  # id(container) -> expanded size
    on_path: set[int] = set()
    stack: list[tuple[Any, int, bool]] = [(data, 1, False)]  # (node, depth, children done)
    while stack:
        node, depth, children_done = stack.pop()
        if not isinstance(node, dict | list):
            continue
        key = id(node)
        children = list(node.values()) + list(node.keys()) if isinstance(node, dict) else node
        if children_done:
            on_path.discard(key)
            size = 1 + sum(memo.get(id(c), 1) if isinstance(c, dict | list) else 1 for c in children)
            if size > MAX_YAML_NODES:
                raise UserError(f"too many values after expanding aliases (more than {MAX_YAML_NODES:,})",
                                where=where, expected="a scenario without alias bombs")
            memo[key] = size
            continue
        if key in memo:
            continue
        if key in on_path:
            raise UserError("an alias refers to a mapping or list that contains it", where=where,
                            expected="acyclic YAML")
        if depth > MAX_YAML_DEPTH:
            raise UserError(f"nested more than {MAX_YAML_DEPTH} levels deep", where=where)
        on_path.add(key)
        stack.append((node, depth, True))
        stack.extend((c, depth + 1, False) for c in children if isinstance(c, dict | list))
    return memo.get(id(data), 1)


def parse_yaml(text: str, where: str) -> Any:
    """``yaml.safe_load`` of untrusted text; every failure is a UserError naming ``where``."""
    return _guarded(yaml.safe_load, text, where)


def parse_yaml_all(text: str, where: str) -> list[Any]:
    """Every document of a multi-document YAML text (``---``-separated Kubernetes objects), empty ones
    dropped, each held to the same limits as a scenario."""
    # libyaml's safe loader when PyYAML has it (the same safe constructors, ~10x faster: a recipe's files are
    # read once per variant, and the contract suite reads them for every drawn cluster)
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    docs = _guarded(lambda t: list(yaml.load_all(t, Loader=loader)), text, where)
    return [d for d in docs if d is not None]


def _guarded(load: Any, text: str, where: str) -> Any:
    try:
        data = load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        raise UserError(f"not valid YAML: {getattr(e, 'problem', None) or e}", where=f"{where}{line}") from None
    except RecursionError:
        raise UserError("nested too deeply to read", where=where,
                        expected=f"at most {MAX_YAML_DEPTH} levels") from None
    except ValueError as e:  # e.g. an integer of more than 4300 digits
        raise UserError(f"unreadable value: {str(e).split(';')[0]}", where=where) from None
    expanded_size(data, where)
    return data


def read_text(path: str | Path) -> str:
    """A user file's UTF-8 text, refused past ``MAX_YAML_BYTES`` or when it is no regular file (contracts/files.py);
    every failure a UserError naming it."""
    raw = read_regular(path, MAX_YAML_BYTES, "a readable YAML file")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise UserError(f"not UTF-8 text: byte 0x{raw[e.start]:02x} at offset {e.start}", where=str(path),
                        expected="a UTF-8 YAML file") from None


def read_yaml(path: str | Path) -> Any:
    """Load a user YAML file (scenario or suite) within the limits of ``contracts.limits``."""
    return parse_yaml(read_text(path), str(path))
