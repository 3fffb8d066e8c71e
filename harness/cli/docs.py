"""The one-line help of a lazily imported command, read from its source instead of importing it.

``scalearena --help`` lists every command with its first sentence; click gets that by importing
each command, and the tuning, kube and paper commands import Optuna, the Kubernetes client and the
whole run machinery at module level (1.8 s of CPU for the listing). The command's docstring is
its help (click's rule when no ``help=`` is given), so reading it with ``ast`` gives the same line
(tests/unit/harness/cli/test_cli_help.py compares both for every lazy command).
"""
from __future__ import annotations

import ast
import importlib.util
from pathlib import Path
from typing import Any

import click


def docstring_of(spec: str) -> str | None:
    """The docstring of ``module:function`` as click would use it (up to a ``\\f``), found without importing
    the module; None when the module or function is not found, or a decorator passes ``help=`` itself."""
    module, attr = spec.split(":")
    try:
        found = importlib.util.find_spec(module)  # imports the parent packages only (empty __init__ files)
    except (ImportError, ValueError):
        return None
    if found is None or not found.origin or not found.origin.endswith(".py"):
        return None
    for node in ast.parse(Path(found.origin).read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef) and node.name == attr:
            if any(isinstance(d, ast.Call) and any(k.arg in ("help", "short_help") for k in d.keywords)
                   and isinstance(d.func, ast.Attribute) and d.func.attr in ("command", "group")
                   for d in node.decorator_list):
                return None
            doc = ast.get_docstring(node)
            return doc.split("\f")[0] if doc else None
    return None


def command_rows(group: Any, ctx: click.Context, width: int) -> list[tuple[str, str]]:
    """(name, one-line help) of every command of ``group`` (an ``ArenaGroup``), as click's listing has them:
    a lazy command's from its docstring, any other's (or one whose docstring is not found) from the command."""
    names = group.list_commands(ctx)
    limit = width - 6 - max(map(len, names))  # click's Group.format_commands
    rows = []
    for name in names:
        doc = docstring_of(group.lazy_commands[name]) if name in group.lazy_commands else None
        if doc is not None:
            rows.append((name, click.Command(name, help=doc).get_short_help_str(limit)))  # click's shortening
            continue
        cmd = group.get_command(ctx, name)
        if cmd is not None and not cmd.hidden:
            rows.append((name, cmd.get_short_help_str(limit)))
    return rows
