"""PromQL value types and float arithmetic with Go's semantics.

Prometheus computes in Go, where ``1/0`` is ``+Inf``, ``math.Max`` returns NaN
when either side is NaN, and ``%`` is ``math.Mod``; Python raises or differs
in each of these, so the engine routes every scalar operation through the
helpers here (facts from Go's ``math`` package docs and Prometheus'
``promql/engine.go`` ``vectorElemBinop``). Label sets are sorted tuples of
pairs: hashable, ordered like Prometheus' ``labels.Labels``.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

NAME = "__name__"
Labels = tuple[tuple[str, str], ...]
INF = math.inf
NAN = math.nan


def make_labels(name: str | None, labels: Mapping[str, str]) -> Labels:
    """A series' label set: its labels plus ``__name__``; empty values are absent, as in Prometheus."""
    pairs = {k: v for k, v in labels.items() if v != ""}
    if name:
        pairs[NAME] = name
    return tuple(sorted(pairs.items()))


def label(labels: Labels, key: str) -> str:
    for k, v in labels:
        if k == key:
            return v
    return ""


_DROPPED: dict[Labels, Labels] = {}


def drop_name(labels: Labels) -> Labels:
    """The label set without ``__name__`` (memoised: the same series pass through every evaluation)."""
    out = _DROPPED.get(labels)
    if out is None:
        if len(_DROPPED) > 200_000:
            _DROPPED.clear()
        out = _DROPPED[labels] = tuple(p for p in labels if p[0] != NAME)
    return out


def keep_only(labels: Labels, keys: frozenset[str]) -> Labels:
    return tuple(p for p in labels if p[0] in keys)


def without(labels: Labels, keys: frozenset[str]) -> Labels:
    return tuple(p for p in labels if p[0] not in keys)


@dataclass(frozen=True, slots=True)
class Sample:
    """One element of an instant vector; ``t`` (ms) is the sample's own time only for ``timestamp()``."""

    labels: Labels
    value: float
    t: int


@dataclass(frozen=True, slots=True)
class Scalar:
    value: float


@dataclass(frozen=True, slots=True)
class String:
    value: str


@dataclass(slots=True)
class Series:
    """One element of a range vector (matrix): points are (t_ms, value), oldest first."""

    labels: Labels
    points: list[tuple[int, float]]


class Vector(list[Sample]):
    """An instant vector."""


class Matrix(list[Series]):
    """A range vector."""


Value = Scalar | String | Vector | Matrix


# -- Go float semantics ---------------------------------------------------------------------------
def go_max(a: float, b: float) -> float:
    """Go's math.Max: +Inf wins over NaN, then NaN wins."""
    if a == INF or b == INF:
        return INF
    if a != a or b != b:
        return NAN
    if a == 0 and b == 0:
        return a if math.copysign(1, a) > 0 else b
    return a if a > b else b


def go_min(a: float, b: float) -> float:
    """Go's math.Min: -Inf wins over NaN, then NaN wins."""
    if a == -INF or b == -INF:
        return -INF
    if a != a or b != b:
        return NAN
    if a == 0 and b == 0:
        return a if math.copysign(1, a) < 0 else b
    return a if a < b else b


def go_div(a: float, b: float) -> float:
    if b != 0:
        return a / b
    if a != a or a == 0:
        return NAN
    return math.copysign(INF, a) * math.copysign(1, b)


def go_mod(a: float, b: float) -> float:
    if b == 0 or a != a or b != b or math.isinf(a):
        return NAN
    if math.isinf(b):
        return a
    return math.fmod(a, b)


def go_pow(a: float, b: float) -> float:
    try:
        return math.pow(a, b)
    except ZeroDivisionError:  # 0 ** negative
        return INF if not (b == int(b) and int(b) % 2 and math.copysign(1, a) < 0) else -INF
    except ValueError:  # negative ** non-integer
        return NAN
    except OverflowError:
        neg = a < 0 and b == int(b) and int(b) % 2 == 1
        return -INF if neg else INF


ARITHMETIC: dict[str, Callable[[float, float], float]] = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": go_div,
    "%": go_mod,
    "^": go_pow,
    "atan2": math.atan2,
}
COMPARISON = {
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    ">": lambda a, b: a > b,
    "<": lambda a, b: a < b,
    ">=": lambda a, b: a >= b,
    "<=": lambda a, b: a <= b,
}
SET_OPS = frozenset({"and", "or", "unless"})


def elem_binop(op: str, lhs: float, rhs: float) -> tuple[float, bool]:
    """Prometheus' vectorElemBinop: (value, keep); comparisons keep the left value when true."""
    arith = ARITHMETIC.get(op)
    if arith is not None:
        try:
            return arith(lhs, rhs), True
        except (OverflowError, ValueError):
            return NAN, True
    return lhs, COMPARISON[op](lhs, rhs)


def format_value(v: float) -> str:
    """A sample value as Prometheus' JSON writes it (strconv.FormatFloat 'f' -1; NaN, +Inf, -Inf)."""
    if v != v:
        return "NaN"
    if v in (INF, -INF):
        return "+Inf" if v > 0 else "-Inf"
    return repr(v) if not v.is_integer() else str(int(v)) if abs(v) < 1e21 else repr(v)


def to_api_result(value: Value, t_ms: int) -> list | list[dict]:  # type: ignore[type-arg]
    """The ``data.result`` of Prometheus' /api/v1/query for a value evaluated at t_ms."""
    ts = t_ms / 1000
    if isinstance(value, Scalar):
        return [ts, format_value(value.value)]
    if isinstance(value, String):
        return [ts, value.value]
    if isinstance(value, Vector):
        return [{"metric": dict(s.labels), "value": [ts, format_value(s.value)]} for s in value]
    return [{"metric": dict(s.labels), "values": [[t / 1000, format_value(v)] for t, v in s.points]} for s in value]
