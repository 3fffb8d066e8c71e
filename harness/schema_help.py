"""Reading the config models back for people: parameter tables and field suggestions.

Every config model carries a description on each field (STYLE), so the
``scalearena autoscalers NAME`` detail view and the "did you mean" hint for an
unknown key are both generated from the models themselves and cannot drift
from what the validator accepts. Units follow the field-name suffixes that
contracts/limits.py bounds (``*_s``, ``*_ms``, ``*_rps``, ...).
"""
from __future__ import annotations

import inspect
import re
import sys
import types
import typing
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

UNIT_SUFFIXES = (("_seconds", "s"), ("_s", "s"), ("_ms", "ms"), ("_rps", "req/s"), ("_percentage", "%"),
                 ("_pct", "%"), ("_tokens", "tokens"), ("_kwh", "kWh"), ("_w", "W"))


def unit_of(name: str) -> str:
    """The unit a field's name carries ('' when it carries none)."""
    for suffix, unit in UNIT_SUFFIXES:
        if name.endswith(suffix):
            return unit
    return ""


@dataclass(frozen=True)
class Param:
    path: str  # dotted, e.g. headroom.delta_kv
    type: str
    default: str
    unit: str
    description: str


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """Pydantic models named anywhere in a type annotation (unions, lists, dicts, Annotated)."""
    if inspect.isclass(annotation) and issubclass(annotation, BaseModel):
        return [annotation]
    out: list[type[BaseModel]] = []
    for arg in typing.get_args(annotation):
        out += _models_in(arg)
    return out


def _type_name(annotation: Any) -> str:
    if annotation is type(None):
        return "null"
    if inspect.isclass(annotation) and not typing.get_args(annotation):
        return annotation.__name__
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        return " | ".join(_type_name(a) for a in typing.get_args(annotation))
    if typing.get_origin(annotation) is typing.Literal:
        return " | ".join(repr(a) for a in typing.get_args(annotation))
    if typing.get_origin(annotation) is typing.Annotated:
        return _type_name(typing.get_args(annotation)[0])
    return str(annotation).replace("typing.", "")


def _default_text(field: Any) -> str:
    if field.default is PydanticUndefined:
        return "(required)" if field.default_factory is None else "(computed)"
    value = field.default.model_dump() if isinstance(field.default, BaseModel) else field.default
    return "null" if value is None else str(value)


def params(model: type[BaseModel], prefix: str = "", skip: tuple[str, ...] = ("kind", "name")) -> list[Param]:
    """Every parameter of ``model``, nested models flattened to dotted paths."""
    out: list[Param] = []
    for name, field in model.model_fields.items():
        if not prefix and name in skip:
            continue
        path = f"{prefix}{name}"
        nested = _models_in(field.annotation)
        if len(nested) == 1 and field.default is not None:
            key = ".<name>" if typing.get_origin(field.annotation) is dict else ""
            out += params(nested[0], prefix=f"{path}{key}.", skip=("kind",))
            continue
        out.append(Param(path, _type_name(field.annotation), _default_text(field), unit_of(name),
                         (field.description or "").strip()))
    return out


def source_line(cls: type) -> str:
    """The upstream a policy or model follows: the first paragraph of its module's docstring, on one line."""
    doc = inspect.getdoc(sys.modules[cls.__module__]) or ""
    first = " ".join(doc.split("\n\n")[0].split())
    return re.sub(r"^``[^`]+``:\s*", "", first)  # "``kpa``: the Knative ..." -> "the Knative ..."


def fields_at(model: type[BaseModel], loc: list[str]) -> set[str]:
    """Field names valid at the place ``loc`` points into (the last element is the unknown key).

    Follows the path through nested models, lists and unions; a part that is not a field name (a list
    index, a union tag) keeps the candidates. Empty when the path cannot be followed."""
    current: list[type[BaseModel]] = [model]
    for part in loc[:-1]:
        nxt = [m for c in current if part in c.model_fields for m in _models_in(c.model_fields[part].annotation)]
        if nxt:
            current = nxt
        elif not any(part in c.model_fields for c in current):
            # a list index or a union tag (e.g. 'wva'): narrow to the tagged model when one matches
            tagged = [c for c in current if _tag(c) == part]
            current = tagged or current
    return {f for c in current for f in c.model_fields}


def _tag(model: type[BaseModel]) -> str | None:
    kind = model.model_fields.get("kind")
    args = typing.get_args(kind.annotation) if kind is not None else ()
    return str(args[0]) if len(args) == 1 else None
