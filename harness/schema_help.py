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

from pydantic import BaseModel, ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError, PydanticUndefined

from scalearena.contracts.errors import UserError
from scalearena.contracts.suggest import did_you_mean

UNIT_SUFFIXES = (("_seconds", "s"), ("_s", "s"), ("_ms", "ms"), ("_rps", "req/s"), ("_percentage", "%"),
                 ("_pct", "%"), ("_tokens", "tokens"), ("_kwh", "kWh"), ("_w", "W"))


def raise_at(title: str, errs: list[tuple[tuple[Any, ...], str]]) -> None:
    """Raise ``errs`` (field path within the model being validated, message) from a model validator as one
    ValidationError at those paths, so the user's one-line error names the field itself."""
    if errs:
        raise ValidationError.from_exception_data(title, [
            InitErrorDetails(type=PydanticCustomError("value_error", f"Value error, {msg}"), loc=loc, input={})
            for loc, msg in errs])


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
    origin = typing.get_origin(annotation)
    if inspect.isclass(origin) and typing.get_args(annotation):  # list[...], dict[str, ...], tuple[...]
        return f"{origin.__name__}[{', '.join(_type_name(a) for a in typing.get_args(annotation))}]"
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


def format_validation_error(err: ValidationError, where: str, data: Any = None,
                            model: type[BaseModel] | None = None) -> UserError:
    """One message: file, field path, what was expected (first error, count of the rest); for an
    unknown field of ``model``, the closest valid name ("did you mean")."""
    errors = err.errors(include_url=False)
    first = errors[0]
    loc = [str(p) for p in first["loc"] if "[" not in str(p)]  # drop pydantic's internal validator tags
    if len(loc) >= 2 and loc[0] == "workload" and loc[1] == "0" and isinstance(data, dict) \
            and isinstance(data.get("workload"), dict):
        del loc[1]  # the file holds one workload mapping, not a list
    msg = first["msg"]
    if first["type"] == "value_error":
        msg = msg.removeprefix("Value error, ")
        field = re.match(r"([a-z_]+): ", msg)  # a model-level check naming its field (contracts.limits)
        if field:
            loc.append(field.group(1))
            msg = msg[field.end():]
    path = ".".join(loc) or "(top level)"
    if first["type"] == "extra_forbidden":
        msg = "unknown field"
        if model is not None and first["loc"]:
            msg += did_you_mean(str(first["loc"][-1]), fields_at(model, [str(p) for p in first["loc"]]))
    elif first["type"] == "missing":
        msg = "required field is missing"
    more = f" (+{len(errors) - 1} more problems)" if len(errors) > 1 else ""
    inp = first.get("input")
    got = "" if first["type"] in ("missing",) or isinstance(inp, dict) else f"; got {inp!r}"
    return UserError(f"{path}: {msg}{got}{more}", where=where)
