"""The search space of one tuning study: the autoscaler's declared tunables, as the command line adjusts them.

``AutoscalerConfig.tunables()`` (contracts/tunable.py) says what may be searched and over which range;
``--param NAME=LOW:HIGH[:log]`` replaces a range, ``--param NAME=A,B,C`` makes it a choice,
``--param NAME=VALUE`` pins it (not searched), and a numeric field that declares no range may be added
the same way. Every value a range could produce at its ends is checked against the config model's own
field (type, bounds, the unit limits of contracts/limits.py) before any run: a range the model rejects is
a ``UserError`` naming the parameter and the model's reason. Rules between fields (WVA's gamma below
tau) are the config's own validators, applied to each sampled configuration (``apply``): a trial that
breaks one is recorded as infeasible with that reason.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from scalearena.contracts.errors import UserError
from scalearena.contracts.limits import unit_problem
from scalearena.contracts.suggest import did_you_mean
from scalearena.contracts.tunable import Tunable, field_kind
from scalearena.controllers.base import AutoscalerConfig
from scalearena.harness.config.safe_yaml import parse_yaml


@dataclass(frozen=True)
class Space:
    """What a study searches (``params``) and what it holds at a value the user pinned (``fixed``)."""

    params: tuple[Tunable, ...]
    fixed: dict[str, Any]

    def names(self) -> list[str]:
        return [p.path for p in self.params]

    def default(self) -> dict[str, Any]:
        """The configuration's own values of the searched parameters, where they lie inside the searched
        range (unset ones and ones outside left out)."""
        return {p.path: p.default for p in self.params if p.default is not None and p.contains(p.default)}


def _child(node: Any, part: str, path: str) -> Any:
    if isinstance(node, BaseModel):
        if part not in type(node).model_fields:
            raise KeyError(path)
        return getattr(node, part)
    if isinstance(node, list | tuple):
        if not part.isdigit() or int(part) >= len(node):
            raise KeyError(path)
        return node[int(part)]
    if isinstance(node, dict):
        if part not in node:
            raise KeyError(path)
        return node[part]
    raise KeyError(path)


def locate(cfg: BaseModel, path: str) -> tuple[Any, str, Any]:
    """(the model, list or mapping holding ``path``'s last part, that part, its current value)."""
    parts = path.split(".")
    node: Any = cfg
    for part in parts[:-1]:
        node = _child(node, part, path)
    return node, parts[-1], _child(node, parts[-1], path)


def field_problem(cfg: AutoscalerConfig, path: str, value: Any) -> str | None:
    """Why the config model's field at ``path`` refuses ``value`` on its own (None: accepted)."""
    owner, last, _ = locate(cfg, path)
    if isinstance(value, int | float) and not isinstance(value, bool):
        problem = unit_problem(last, float(value))
        if problem:
            return problem
    if isinstance(owner, BaseModel):
        info = type(owner).model_fields[last]
        try:
            TypeAdapter(Annotated[info.annotation, info]).validate_python(value)  # type: ignore[arg-type]
        except ValidationError as e:
            return e.errors(include_url=False)[0]["msg"]
        return None
    try:
        apply(cfg, {path: value})
    except (UserError, ValueError) as e:
        return str(e)
    return None


def _set(data: Any, path: str, value: Any) -> None:
    parts = path.split(".")
    node = data
    for part in parts[:-1]:
        node = node[int(part)] if isinstance(node, list) else node[part]
    last = parts[-1]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = str(value) if isinstance(node.get(last), str) and not isinstance(value, str) else value
        # ^ a placeholder in env is text: the number goes in as envsubst would write it


def apply(cfg: AutoscalerConfig, values: dict[str, Any]) -> AutoscalerConfig:
    """``cfg`` with ``values`` set at their paths, validated by its model (ValueError with the model's
    reason when the combination is refused). A ``kubernetes`` config is re-read from its object files by
    the caller (harness.config.scenario.compile_objects): its placeholders changed."""
    data = cfg.model_dump(mode="json")
    for path, value in values.items():
        _set(data, path, value)
    try:
        return type(cfg).model_validate(data)
    except ValidationError as e:
        err = e.errors(include_url=False)[0]
        where = ".".join(str(p) for p in err["loc"])
        raise ValueError(f"{where + ': ' if where else ''}{err['msg'].removeprefix('Value error, ')}") from None


def _parse_number(text: str, what: str) -> float:
    value = parse_yaml(text, what)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise UserError(f"{what}: {text!r} is not a finite number")
    return value


def parse_param(item: str, base: Tunable | None, current: Any, kind: str) -> Tunable:
    """One ``--param`` item as a tunable (``base``: the declared one it replaces, if any)."""
    if "=" not in item:
        raise UserError(f"--param {item!r}: missing '='", expected="NAME=LOW:HIGH[:log], NAME=A,B,C or NAME=VALUE")
    name, spec = item.split("=", 1)
    what = f"--param {item}"
    default = base.default if base is not None else current
    description = base.description if base is not None else ""
    if "," in spec:
        choices = tuple(parse_yaml(c.strip(), what) for c in spec.split(","))
        return Tunable(name, "categorical", default, choices=choices, description=description)
    parts = spec.split(":")
    if len(parts) == 1:
        value = parse_yaml(spec, what)
        if kind == "categorical" or isinstance(value, str | bool):
            return Tunable(name, "categorical", default, choices=(value,), description=description)
        return Tunable(name, kind, default, low=value, high=value, description=description)  # type: ignore[arg-type]
    if len(parts) not in (2, 3) or (len(parts) == 3 and parts[2] not in ("log", "linear")):
        raise UserError(f"{what}: cannot read the range", expected="LOW:HIGH, LOW:HIGH:log or LOW:HIGH:linear")
    low, high = _parse_number(parts[0], what), _parse_number(parts[1], what)
    if kind == "categorical":
        raise UserError(f"{what}: {name} takes values, not a range", expected=f"{name}=A,B,...")
    if kind == "int" and not (float(low).is_integer() and float(high).is_integer()):
        raise UserError(f"{what}: {name} is a whole number", expected="integer ends, e.g. 0:600")
    if not low < high:
        raise UserError(f"{what}: low {low:g} must be below high {high:g}")
    log = parts[2] == "log" if len(parts) == 3 else (base.log if base is not None and base.kind != "categorical"
                                                     else False)
    if log and low <= 0:
        raise UserError(f"{what}: a log range needs low > 0")
    if kind == "int":
        low, high = int(low), int(high)
    return Tunable(name, kind, default, low=low, high=high, log=log, description=description)  # type: ignore[arg-type]


def _kind_of(cfg: AutoscalerConfig, path: str, current: Any) -> str:
    owner, last, _ = locate(cfg, path)
    if isinstance(owner, BaseModel):
        return field_kind(type(owner).model_fields[last].annotation)
    if isinstance(current, str):  # a placeholder's value in env is text: "0.55" is a number
        current = parse_yaml(current, path)
    if isinstance(current, bool) or not isinstance(current, int | float):
        return "categorical"
    return "int" if isinstance(current, int) else "float"


def _ends(t: Tunable) -> list[Any]:
    return list(t.choices) if t.kind == "categorical" else [t.low, t.high]


def build_space(cfg: AutoscalerConfig, items: list[str]) -> Space:
    """The declared tunables of ``cfg`` with the ``--param`` items applied (see the module docstring)."""
    declared = {t.path: t for t in cfg.tunables()}
    fixed: dict[str, Any] = {}
    for item in items:
        name = item.split("=", 1)[0]
        try:
            _, _, current = locate(cfg, name)
        except KeyError:
            known = sorted(declared)
            raise UserError(f"--param {item}: {cfg.label} has no parameter {name!r}{did_you_mean(name, known)}",
                            expected="a field of its config (`scalearena autoscalers " + cfg.kind + "`), declared "
                            "tunables: " + (", ".join(known) or "none")) from None
        base = declared.get(name)
        t = parse_param(item, base, current, base.kind if base is not None else _kind_of(cfg, name, current))
        for end in _ends(t):
            problem = field_problem(cfg, name, end)
            if problem:
                declared_in = name.startswith("env.") and name[4:] in (getattr(cfg, "tune", None) or {}) \
                    and isinstance(end, int | float) and not isinstance(end, bool)
                raise UserError(f"--param {item}: {cfg.kind} refuses {name} = {end!r}: {problem}",
                                expected=f"a range within its tune: entry {name[4:]}; widen that entry under the "
                                "autoscaler in the scenario to search further" if declared_in else None)
        if t.fixed:
            declared.pop(name, None)
            fixed[name] = _ends(t)[0]
        else:
            declared[name] = t
    return Space(tuple(declared.values()), fixed)
