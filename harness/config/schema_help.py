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
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, Tag, ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError, PydanticUndefined

from scalearena.contracts.errors import UserError
from scalearena.contracts.suggest import did_you_mean

M = TypeVar("M", bound=BaseModel)

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


def validated(model: type[M], data: Any, where: str, *, context: dict[str, Any] | None = None) -> M:
    """``model`` from ``data``; a schema failure is the one UserError (``error: ...``, exit 2) that names
    ``where`` and the first wrong field as the user wrote it (see format_validation_error)."""
    try:
        return model.model_validate(data, context=context)
    except ValidationError as e:
        raise format_validation_error(e, where, data, model) from None


Member = tuple[Any, "str | None"]  # a type a path can reach, with the Tag its union gives it (if any)


def _members(annotation: Any, tag: str | None = None) -> list[Member]:
    """The types an annotation admits, each with its union Tag: Annotated unwrapped, unions flattened,
    None dropped."""
    if typing.get_origin(annotation) is typing.Annotated:
        inner, *meta = typing.get_args(annotation)
        return _members(inner, next((m.tag for m in meta if isinstance(m, Tag)), tag))
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        return [m for a in typing.get_args(annotation) for m in _members(a)]
    return [] if annotation is type(None) else [(annotation, tag)]


def _is_model(t: Any) -> bool:
    return inspect.isclass(t) and issubclass(t, BaseModel)


def _labels(member: Member) -> set[str]:
    """The names pydantic may give a union member in an error path: its Tag, its discriminator's value
    (a one-value Literal field such as ``kind: Literal["roofline"]``), its type's name (``str``)."""
    t, tag = member
    out = {tag} if tag else set()
    out |= {getattr(t, "__name__", "")}
    if _is_model(t):
        for f in t.model_fields.values():
            args = typing.get_args(f.annotation)
            if typing.get_origin(f.annotation) is typing.Literal and len(args) == 1:
                out.add(str(args[0]))
    return out - {""}


def _step(members: list[Member], part: Any) -> list[Member] | None:
    """The types below ``part`` (a field name or alias, a list index, a mapping key) of ``members``;
    None when ``part`` is none of these there."""
    fields = [f for m, _ in members if _is_model(m) for name, f in m.model_fields.items()
              if part in (name, f.alias, f.validation_alias)]
    if fields:
        return [t for f in fields for t in _members(f.annotation)]
    below: list[Member] = []
    for m, _ in members:
        origin, args = typing.get_origin(m), typing.get_args(m)
        if str(part).isdigit() and origin in (list, tuple, set, frozenset):
            below += _members(args[int(part)] if origin is tuple and args[-1] is not Ellipsis and int(part) < len(args)
                              else args[0] if args else Any)
        elif isinstance(part, str) and inspect.isclass(origin) and issubclass(origin, Mapping):
            below += _members(args[1] if len(args) == 2 else Any)
    return below or None


def _walk(model: type[BaseModel], loc: tuple[Any, ...]) -> tuple[list[str], list[Member]]:
    """``loc`` as the user's file spells it, and the types it reaches. pydantic's union tags are left
    out: the ``kind`` of a tagged union member such as ``roofline``, a Tag such as ``inline``, a member
    type name such as ``str`` or ``function-after[...]``. Right below a union a part that names one of
    its members is that tag; elsewhere a part is a tag when it is no field, alias, index or key of the
    types the path has reached. Past a type that cannot be looked into (Any) every part is kept."""
    members: list[Member] = [(model, None)]
    at_union = False
    out: list[str] = []
    for part in loc:
        if "[" in str(part):  # function-after[...], list[int], ...: never a name in a file
            continue
        if not members or any(m is Any for m, _ in members):
            out.append(str(part))
            continue
        named = [m for m in members if str(part) in _labels(m)] if at_union else []
        below = None if named else _step(members, part)
        at_union = False
        if below is None:  # a tag: go on in the member it names, when one does
            members = named or [m for m in members if str(part) in _labels(m)] or members
            continue
        out.append(str(part))
        members, at_union = below, len(below) > 1
    return out, members


def fields_at(model: type[BaseModel], loc: list[Any]) -> set[str]:
    """Field names valid at the place ``loc`` points into (the last element is the unknown key): the
    fields of the models the path reaches through nested models, lists, mappings and union tags. Empty
    when the path cannot be followed."""
    return {f for m, _ in _walk(model, tuple(loc[:-1]))[1] if _is_model(m) for f in m.model_fields}


def format_validation_error(err: ValidationError, where: str, data: Any = None,
                            model: type[BaseModel] | None = None) -> UserError:
    """One message: file, field path, what was expected, then every other field with a problem (a field that
    failed several ways, e.g. each member of a union, is named once); for an unknown field of ``model``, the
    closest valid name ("did you mean"). With ``model`` the path leaves out pydantic's union tags
    (``latency.model_shape``, not ``latency.roofline.model_shape.inline``)."""
    described = [_describe(e, data, model) for e in err.errors(include_url=False)]
    first_path, text = described[0]
    others: dict[str, str] = {}
    for path, line in described[1:]:
        if path != first_path:
            others.setdefault(path, line)
    if others:
        text += f"; {len(others)} more: " + "; ".join(others.values())
    return UserError(text, where=where)


def _describe(first: Any, data: Any, model: type[BaseModel] | None) -> tuple[str, str]:
    """(field path, "path: message; got value") for one pydantic error."""
    if model is None:
        loc = [str(p) for p in first["loc"] if "[" not in str(p)]  # drop pydantic's internal validator tags
    else:
        unknown = first["type"] == "extra_forbidden" and bool(first["loc"])  # the last part: the user's own key
        loc = _walk(model, tuple(first["loc"][:-1] if unknown else first["loc"]))[0]
        loc += [str(first["loc"][-1])] if unknown else []
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
            msg += did_you_mean(str(first["loc"][-1]), fields_at(model, list(first["loc"])))
    elif first["type"] == "missing":
        msg = "required field is missing"
    inp = first.get("input")
    got = "" if first["type"] in ("missing",) or isinstance(inp, dict) else f"; got {inp!r}"
    return path, f"{path}: {msg}{got}"
