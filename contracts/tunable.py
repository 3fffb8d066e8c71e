"""Tunable parameters: which settings of an autoscaler ``scalearena tune`` may search, and over what range.

Declared once, on the config model that owns the setting: a field carries
``json_schema_extra=tune(low, high, log=...)`` (or ``tune_choices(...)``), and
``AutoscalerConfig.tunables()`` reads those declarations back from a config
instance, so the range sits next to the field's description, bounds and default.
A config whose space depends on its contents (one target per HPA metric, one
threshold per KEDA trigger, the ``${VAR}`` placeholders of a user's Kubernetes
objects) extends ``tunables()`` and builds the extra entries with the same
``Tunable`` type.

The default of a tunable is the value in the config it was read from (the
scenario's configuration of that autoscaler), so the tuned study starts from,
and is compared against, what the user runs today. Types follow the field:
``int`` fields give integer ranges, ``float`` fields real ones, ``tune_choices``
a categorical. Written by hand: a dataclass and a dict walk; the search itself
is Optuna's (harness/tuning).
"""
from __future__ import annotations

import math
import typing
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel

Kind = Literal["float", "int", "categorical"]
TUNE_KEY = "tune"


def tune(low: float, high: float, *, log: bool = False, step: float | None = None) -> dict[str, Any]:
    """``json_schema_extra`` of a field ``scalearena tune`` may search over [low, high] (log scale if ``log``)."""
    if not low < high:
        raise ValueError(f"tune range needs low < high, got {low} .. {high}")
    if log and low <= 0:
        raise ValueError(f"a log-scale tune range needs low > 0, got {low}")
    return {TUNE_KEY: {"low": low, "high": high, "log": log, "step": step}}


def tune_choices(*choices: Any) -> dict[str, Any]:
    """``json_schema_extra`` of a field searched over a set of values."""
    if len(choices) < 2:
        raise ValueError("a categorical tune range needs at least two choices")
    return {TUNE_KEY: {"choices": list(choices)}}


@dataclass(frozen=True)
class Tunable:
    """One searchable parameter of one autoscaler configuration."""

    path: str  # dotted path into the config: tau_kv, metrics.0.average_value, env.THETA_UP
    kind: Kind
    default: Any  # the value in the configuration it was read from (None: unset there)
    low: float | None = None
    high: float | None = None
    log: bool = False
    step: float | None = None
    choices: tuple[Any, ...] = ()
    description: str = ""

    def __post_init__(self) -> None:
        if self.kind == "categorical":
            if len(self.choices) < 1:
                raise ValueError(f"{self.path}: a categorical parameter needs choices")
            return
        if self.low is None or self.high is None or not self.low <= self.high:
            raise ValueError(f"{self.path}: needs low <= high, got {self.low} .. {self.high}")
        if self.log and self.low <= 0:
            raise ValueError(f"{self.path}: a log scale needs low > 0, got {self.low}")

    @property
    def fixed(self) -> bool:
        """One value only: pinned, not searched."""
        return len(self.choices) == 1 if self.kind == "categorical" else self.low == self.high

    def contains(self, value: Any) -> bool:
        if self.kind == "categorical":
            return value in self.choices
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        assert self.low is not None and self.high is not None
        return self.low <= value <= self.high

    def describe(self) -> str:
        """The range as a person reads it: ``0.5 .. 0.95``, ``1 .. 20 (log)``, ``{a, b}``."""
        if self.kind == "categorical":
            return "{" + ", ".join(str(c) for c in self.choices) + "}"
        text = f"{_num(self.low)} .. {_num(self.high)}"
        return text + (" (log)" if self.log else "") + (f" step {_num(self.step)}" if self.step else "")


def _num(v: float | None) -> str:
    return "?" if v is None else f"{v:g}"


def field_kind(annotation: Any) -> Kind:
    """``int`` for an int field (``int | None`` too), ``categorical`` for a Literal or bool, else ``float``."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)] or [annotation]
    if any(a is bool for a in args) or any(typing.get_origin(a) is Literal for a in args):
        return "categorical"
    if all(a is int for a in args):
        return "int"
    return "float"


def declared(model: BaseModel, prefix: str = "") -> list[Tunable]:
    """The fields of ``model`` that carry a ``tune`` declaration, with the model's values as defaults."""
    out: list[Tunable] = []
    for name, info in type(model).model_fields.items():
        extra = info.json_schema_extra
        raw = extra.get(TUNE_KEY) if isinstance(extra, dict) else None
        if not isinstance(raw, dict):
            continue
        spec: dict[str, Any] = dict(raw)
        value = getattr(model, name)
        description = (info.description or "").strip()
        if "choices" in spec:
            out.append(Tunable(f"{prefix}{name}", "categorical", value, choices=tuple(spec["choices"]),
                               description=description))
            continue
        out.append(Tunable(f"{prefix}{name}", field_kind(info.annotation), value, low=spec["low"], high=spec["high"],
                           log=bool(spec.get("log")), step=spec.get("step"), description=description))
    return out


def around(path: str, default: float, kind: Kind = "float", factor: float = 4.0, description: str = "") -> Tunable:
    """A log-scale range from ``default / factor`` to ``default x factor`` (a target whose scale depends on
    the metric it is set for: an HPA AverageValue, a KEDA threshold)."""
    low, high = default / factor, default * factor
    if kind == "int":
        low, high = max(1, math.floor(low)), max(2, math.ceil(high))
    return Tunable(path, kind, default, low=low, high=high, log=True, description=description)
