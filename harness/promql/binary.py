"""PromQL binary operators: scalar/vector arithmetic, comparisons, set operators, vector matching.

Transcribed from Prometheus v2.42 ``promql/engine.go``: ``VectorscalarBinop``
(a comparison keeps the vector's own value, `bool` turns it into 0/1 and drops
the metric name), ``VectorBinop`` with ``signatureFunc`` (`on` matches on the
listed labels only, `ignoring` on all but those and ``__name__``),
``resultMetric`` (arithmetic drops ``__name__``; one-to-one `on` keeps only
the `on` labels; `group_left/right` copy the listed labels from the one
side), and ``VectorAnd``/``VectorOr``/``VectorUnless``. Many-to-many matches
fail with Prometheus' own messages.
"""
from __future__ import annotations

from dataclasses import dataclass

from scalearena.harness.promql.errors import QueryExecutionError
from scalearena.harness.promql.values import (
    ARITHMETIC,
    NAME,
    Labels,
    Sample,
    Scalar,
    Vector,
    drop_name,
    elem_binop,
    keep_only,
    label,
    without,
)


@dataclass(frozen=True)
class Matching:
    """How two vectors are matched: card is one of one-to-one, many-to-one, one-to-many, many-to-many."""

    card: str = "one-to-one"
    on: bool = False
    labels: frozenset[str] = frozenset()
    include: tuple[str, ...] = ()

    def signature(self, labels: Labels) -> Labels:
        if self.on:
            return keep_only(labels, self.labels)
        return without(labels, self.labels | {NAME})


def scalar_binop(op: str, lhs: float, rhs: float, return_bool: bool) -> Scalar:
    value, keep = elem_binop(op, lhs, rhs)
    if op not in ARITHMETIC:  # scalar comparisons require `bool` (the parser enforces it)
        value = 1.0 if keep else 0.0
    return Scalar(value)


def vector_scalar_binop(op: str, vector: Vector, scalar: float, swap: bool, return_bool: bool, t: int) -> Vector:
    out = Vector()
    arithmetic = op in ARITHMETIC
    for s in vector:
        lv, rv = (scalar, s.value) if swap else (s.value, scalar)
        value, keep = elem_binop(op, lv, rv)
        if not arithmetic and swap:
            value = rv  # a comparison keeps the vector element's value even when it is on the right
        if return_bool:
            value, keep = (1.0 if keep else 0.0), True
        if keep:
            labels = drop_name(s.labels) if arithmetic or return_bool else s.labels
            out.append(Sample(labels, value, t))
    return out


def _result_labels(many: Labels, one: Labels, op: str, m: Matching) -> Labels:
    labels = dict(many)
    if op in ARITHMETIC:
        labels.pop(NAME, None)
    if m.card == "one-to-one":
        labels = {k: v for k, v in labels.items() if (k in m.labels) == m.on}
    for name in m.include:
        v = label(one, name)
        if v:
            labels[name] = v
        else:
            labels.pop(name, None)
    return tuple(sorted(labels.items()))


def vector_binop(op: str, lhs: Vector, rhs: Vector, m: Matching, return_bool: bool, t: int) -> Vector:
    """Arithmetic/comparison between two vectors (engine.go VectorBinop)."""
    if not lhs or not rhs:
        return Vector()
    if m.card == "one-to-many":
        lhs, rhs = rhs, lhs
    one_side: dict[Labels, Sample] = {}
    for rs in rhs:
        sig = m.signature(rs.labels)
        if sig in one_side:
            side = "left" if m.card == "one-to-many" else "right"
            raise QueryExecutionError(
                f"found duplicate series for the match group {dict(sig)} on the {side} hand-side of the operation"
                "; many-to-many matching not allowed: matching labels must be unique on one side"
            )
        one_side[sig] = rs
    matched: dict[Labels, set[Labels]] = {}
    out = Vector()
    for ls in lhs:
        sig = m.signature(ls.labels)
        match = one_side.get(sig)
        if match is None:
            continue
        rs = match
        vl, vr = (rs.value, ls.value) if m.card == "one-to-many" else (ls.value, rs.value)
        value, keep = elem_binop(op, vl, vr)
        if return_bool:
            value = 1.0 if keep else 0.0
        elif not keep:
            continue
        labels = _result_labels(ls.labels, rs.labels, op, m)
        if return_bool:
            labels = drop_name(labels)
        seen = matched.get(sig)
        if m.card == "one-to-one":
            if seen is not None:
                raise QueryExecutionError(
                    "multiple matches for labels: many-to-one matching must be explicit (group_left/group_right)"
                )
            matched[sig] = set()
        else:
            if seen is None:
                seen = matched[sig] = set()
            elif labels in seen:
                raise QueryExecutionError("multiple matches for labels: grouping labels must ensure unique matches")
            seen.add(labels)
        out.append(Sample(labels, value, t))
    return out


def set_binop(op: str, lhs: Vector, rhs: Vector, m: Matching) -> Vector:
    """and / or / unless (engine.go VectorAnd, VectorOr, VectorUnless): labels and values pass through."""
    if op == "and":
        if not lhs or not rhs:
            return Vector()
        right = {m.signature(s.labels) for s in rhs}
        return Vector(s for s in lhs if m.signature(s.labels) in right)
    if op == "or":
        if not lhs:
            return Vector(rhs)
        if not rhs:
            return Vector(lhs)
        left = {m.signature(s.labels) for s in lhs}
        return Vector([*lhs, *(s for s in rhs if m.signature(s.labels) not in left)])
    if not rhs:
        return Vector(lhs)
    right = {m.signature(s.labels) for s in rhs}
    return Vector(s for s in lhs if m.signature(s.labels) not in right)
