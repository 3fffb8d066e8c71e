"""A PromQL evaluator over the in-memory TSDB, at virtual time.

The simulator's autoscalers must read the same numbers a real Prometheus
would give them, so this engine follows Prometheus v2.42 ``promql/engine.go``
step for step: instant selectors take the newest sample within the lookback
(5 min by default; a staleness marker ends a series at once), range
selectors take the samples inside ``[t - range, t]`` (v2.x windows are
closed; ``left_open=True`` gives v3's), subqueries evaluate their inner
expression at step-aligned times, functions drop ``__name__``, and a vector
holding two elements with the same label set is an error. Parsing is
promql-parser's (the Rust parser's Python bindings); nothing is parsed by
hand. Whatever the engine does not implement is refused before evaluation
(``UnsupportedPromQL`` with the construct and its position in the query), so
an answer is either Prometheus' answer or an error.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import promql_parser as pp

from scalearena.harness.promql import validate
from scalearena.harness.promql.aggregate import aggregate, histogram_quantile
from scalearena.harness.promql.binary import (
    Matching,
    scalar_binop,
    set_binop,
    vector_binop,
    vector_scalar_binop,
)
from scalearena.harness.promql.errors import QueryExecutionError
from scalearena.harness.promql.functions import MATH_FUNCTIONS, RANGE_FUNCTIONS, quantile
from scalearena.harness.promql.tsdb import TSDB, LabelMatcher, to_ms
from scalearena.harness.promql.values import (
    NAME,
    SET_OPS,
    Labels,
    Matrix,
    Sample,
    Scalar,
    Series,
    String,
    Value,
    Vector,
    drop_name,
    go_div,
    go_max,
    go_min,
)

_MATCH_OPS = {"MatchOp.Equal": "=", "MatchOp.NotEqual": "!=", "MatchOp.Re": "=~", "MatchOp.NotRe": "!~"}
_CARD = {"OneToOne": "one-to-one", "ManyToOne": "many-to-one", "OneToMany": "one-to-many", "ManyToMany": "many-to-many"}


def _ms(d: timedelta | None) -> int:
    return 0 if d is None else round(d.total_seconds() * 1000)


class PromQLEngine:
    """Instant and range queries over a TSDB; times are virtual seconds."""

    def __init__(
        self, tsdb: TSDB, *, lookback_s: float = 300.0, subquery_step_s: float = 60.0, left_open: bool = False
    ) -> None:
        self.tsdb = tsdb
        self.lookback_ms = to_ms(lookback_s)
        self.default_step_ms = to_ms(subquery_step_s)  # Prometheus' global evaluation_interval (1m default)
        self.left_open = left_open
        self._parsed: dict[str, Any] = {}

    @staticmethod
    def check(query: str) -> None:
        """Raise the PromQLError a query an autoscaler or a rule reads would raise, without evaluating it (config
        validation): also refused when it returns a range vector or a string, which nothing can read."""
        validate.check_read(query)

    def parse(self, query: str) -> Any:
        """The checked AST of a query (cached): a parse error or an unsupported construct raises here."""
        node = self._parsed.get(query)
        if node is None:
            node = validate.parse_supported(query)
            self._parsed[query] = node
        return node

    def query(self, query: str, at: float) -> Value:
        """Evaluate at virtual time ``at`` (seconds): a Vector, Scalar, String or Matrix."""
        return self._eval(self.parse(query), to_ms(at))

    def query_range(self, query: str, start: float, end: float, step: float) -> Matrix:
        """Evaluate at start, start+step, ... <= end; one Series per label set (scalars: empty labels)."""
        node = self.parse(query)
        t0, t1, dt = to_ms(start), to_ms(end), to_ms(step)
        if dt <= 0 or t1 < t0:
            raise ValueError(f"query_range needs step > 0 and end >= start, got {start}..{end} step {step}")
        series: dict[Labels, Series] = {}
        for t in range(t0, t1 + 1, dt):
            value = self._eval(node, t)
            if isinstance(value, Scalar):
                value = Vector([Sample((), value.value, t)])
            if not isinstance(value, Vector):
                raise QueryExecutionError(f"query_range needs a scalar or instant vector, got {type(value).__name__}")
            for s in value:
                series.setdefault(s.labels, Series(s.labels, [])).points.append((t, s.value))
        return Matrix(sorted(series.values(), key=lambda s: s.labels))

    # -- evaluation ----------------------------------------------------------------------------------
    def _eval(self, node: Any, t: int) -> Value:
        handler: Callable[[Any, int], Value] = getattr(self, f"_eval_{type(node).__name__}")
        return handler(node, t)

    def _eval_NumberLiteral(self, node: Any, t: int) -> Value:
        return Scalar(float(node.val))

    def _eval_StringLiteral(self, node: Any, t: int) -> Value:
        return String(node.val)

    def _eval_ParenExpr(self, node: Any, t: int) -> Value:
        return self._eval(node.expr, t)

    def _eval_UnaryExpr(self, node: Any, t: int) -> Value:
        value = self._eval(node.expr, t)
        if isinstance(value, Scalar):
            return Scalar(-value.value)
        assert isinstance(value, Vector)
        return Vector(Sample(drop_name(s.labels), -s.value, t) for s in value)

    def _matchers(self, vs: Any) -> list[LabelMatcher]:
        out = [LabelMatcher(m.name, _MATCH_OPS[str(m.op)], m.value) for m in vs.matchers.matchers]
        if vs.name:
            out.append(LabelMatcher(NAME, "=", vs.name))
        return out

    def _eval_VectorSelector(self, node: Any, t: int) -> Value:
        hi = t - _ms(node.offset)
        lo = hi - self.lookback_ms
        out = Vector()
        for s in self.tsdb.select(self._matchers(node)):
            hit = s.latest(lo, hi, left_open=self.left_open)
            if hit is not None:
                out.append(Sample(s.labels, hit[1], hit[0]))
        return out

    def _eval_MatrixSelector(self, node: Any, t: int) -> Value:
        return Matrix(Series(labels, list(zip(ts, vals, strict=True))) for labels, ts, vals, *_ in self._windows(node, t))

    def _eval_SubqueryExpr(self, node: Any, t: int) -> Value:
        return self._eval_MatrixSelector(node, t)

    def _windows(self, node: Any, t: int) -> list[tuple[Labels, list[int], list[float], int, int]]:
        """Per series of a matrix selector or subquery: its labels, times, values and the window [lo, hi]."""
        if isinstance(node, pp.MatrixSelector):
            vs = node.vector_selector
            hi = t - _ms(vs.offset)
            lo = hi - _ms(node.range)
            out = []
            for s in self.tsdb.select(self._matchers(vs)):
                ts, vals = s.window(lo, hi, left_open=self.left_open)
                if ts:
                    out.append((s.labels, ts, vals, lo, hi))
            return out
        return self._subquery(node, t)

    def _subquery(self, node: Any, t: int) -> list[tuple[Labels, list[int], list[float], int, int]]:
        """engine.go SubqueryExpr: evaluate the inner expression at multiples of the step inside the window."""
        hi = t - _ms(node.offset)
        lo = hi - _ms(node.range)
        step = _ms(node.step) or self.default_step_ms
        start = step * (lo // step)
        if start < lo or (self.left_open and start == lo):
            start += step
        points: dict[Labels, tuple[list[int], list[float]]] = {}
        for ts in range(start, hi + 1, step):
            inner = self._eval(node.expr, ts)
            if isinstance(inner, Scalar):
                inner = Vector([Sample((), inner.value, ts)])
            assert isinstance(inner, Vector)
            for s in inner:
                times, vals = points.setdefault(s.labels, ([], []))
                times.append(ts)
                vals.append(s.value)
        return [(labels, ts_, vs_, lo, hi) for labels, (ts_, vs_) in sorted(points.items())]

    def _scalar_arg(self, node: Any, t: int) -> float:
        value = self._eval(node, t)
        assert isinstance(value, Scalar), value
        return value.value

    def _vector_arg(self, node: Any, t: int) -> Vector:
        value = self._eval(node, t)
        assert isinstance(value, Vector), value
        return value

    def _eval_Call(self, node: Any, t: int) -> Value:
        name = node.func.name
        args = node.args
        result: Value
        if name in RANGE_FUNCTIONS or name == "quantile_over_time":
            result = self._range_call(name, args, t)
        elif name in MATH_FUNCTIONS:
            fn = MATH_FUNCTIONS[name]
            result = Vector(Sample(drop_name(s.labels), fn(s.value), t) for s in self._vector_arg(args[0], t))
        else:
            result = self._other_call(name, args, t)
        if isinstance(result, Vector):
            _check_unique(result)
        return result

    def _range_call(self, name: str, args: list[Any], t: int) -> Vector:
        out = Vector()
        if name == "quantile_over_time":
            q = self._scalar_arg(args[0], t)
            for labels, _ts, vals, _lo, _hi in self._windows(args[1], t):
                out.append(Sample(drop_name(labels), quantile(q, vals), t))
            return out
        fn = RANGE_FUNCTIONS[name]
        range_s = _ms(args[0].range) / 1000
        keep_name = name == "last_over_time"  # the one range function that keeps __name__ (engine.go)
        for labels, ts, vals, lo, hi in self._windows(args[0], t):
            value = fn(ts, vals, lo, hi, range_s)
            if value is not None:
                out.append(Sample(labels if keep_name else drop_name(labels), value, t))
        return out

    def _other_call(self, name: str, args: list[Any], t: int) -> Value:
        if name == "vector":
            return Vector([Sample((), self._scalar_arg(args[0], t), t)])
        if name == "scalar":
            v = self._vector_arg(args[0], t)
            return Scalar(v[0].value if len(v) == 1 else math.nan)
        if name == "time":
            return Scalar(t / 1000)
        if name == "timestamp":
            return Vector(Sample(drop_name(s.labels), s.t / 1000, t) for s in self._vector_arg(args[0], t))
        if name == "histogram_quantile":
            return histogram_quantile(self._scalar_arg(args[0], t), self._vector_arg(args[1], t), t)
        if name == "absent":
            return self._absent(args[0], t)
        if name in ("sort", "sort_desc"):
            v = self._vector_arg(args[0], t)
            return Vector(sorted(v, key=lambda s: s.value, reverse=name == "sort_desc"))
        vec = self._vector_arg(args[0], t)
        return _clamp_like(name, vec, [self._scalar_arg(a, t) for a in args[1:]], t)

    def _absent(self, arg: Any, t: int) -> Vector:
        """functions.go funcAbsent: 1 with the selector's equality labels when the argument is empty."""
        if self._vector_arg(arg, t):
            return Vector()
        labels: dict[str, str] = {}
        seen: set[str] = set()
        inner = arg
        while isinstance(inner, pp.ParenExpr):
            inner = inner.expr
        if isinstance(inner, pp.VectorSelector):
            for m in self._matchers(inner):
                if m.name == NAME:
                    continue
                if m.op == "=" and m.name not in seen:
                    labels[m.name] = m.value
                elif m.name in labels:
                    del labels[m.name]
                seen.add(m.name)
        return Vector([Sample(tuple(sorted(labels.items())), 1.0, t)])

    def _eval_AggregateExpr(self, node: Any, t: int) -> Value:
        op = str(node.op)
        vector = self._vector_arg(node.expr, t)
        param = self._scalar_arg(node.param, t) if node.param is not None else None
        names: frozenset[str] = frozenset()
        by = True
        if node.modifier is not None:
            names, by = frozenset(node.modifier.labels), str(node.modifier.type).endswith("By")
        return aggregate(op, vector, names, by, param, t)

    def _eval_BinaryExpr(self, node: Any, t: int) -> Value:
        op = str(node.op)
        mod = node.modifier
        return_bool = bool(mod and mod.return_bool)
        lhs, rhs = self._eval(node.lhs, t), self._eval(node.rhs, t)
        if isinstance(lhs, Scalar) and isinstance(rhs, Scalar):
            return scalar_binop(op, lhs.value, rhs.value, return_bool)
        if isinstance(lhs, Vector) and isinstance(rhs, Scalar):
            return vector_scalar_binop(op, lhs, rhs.value, False, return_bool, t)
        if isinstance(lhs, Scalar) and isinstance(rhs, Vector):
            return vector_scalar_binop(op, rhs, lhs.value, True, return_bool, t)
        assert isinstance(lhs, Vector) and isinstance(rhs, Vector)
        matching = _matching(mod, op)
        if op in SET_OPS:
            return set_binop(op, lhs, rhs, matching)
        result = vector_binop(op, lhs, rhs, matching, return_bool, t)
        _check_unique(result)
        return result


def _matching(mod: Any, op: str) -> Matching:
    card = "many-to-many" if op in SET_OPS else "one-to-one"
    if mod is None:
        return Matching(card=card)
    if mod.card is not None:
        card = _CARD[str(mod.card).rsplit(".", 1)[-1]]
    m = mod.matching
    on = m is not None and str(m.type).endswith("Include")
    labels = frozenset(m.labels) if m is not None else frozenset()
    return Matching(card=card, on=on, labels=labels, include=tuple(mod.group_labels or ()))


def _clamp_like(name: str, vec: Vector, params: list[float], t: int) -> Vector:
    """clamp/clamp_min/clamp_max/round (functions.go): Go's math.Max/Min, so NaN stays NaN."""
    if name == "clamp":
        lo, hi = params
        if hi < lo:
            return Vector()
        return Vector(Sample(drop_name(s.labels), go_max(lo, go_min(hi, s.value)), t) for s in vec)
    if name == "clamp_min":
        return Vector(Sample(drop_name(s.labels), go_max(params[0], s.value), t) for s in vec)
    if name == "clamp_max":
        return Vector(Sample(drop_name(s.labels), go_min(params[0], s.value), t) for s in vec)
    if name == "round":  # funcRound: floor(v * inv + 0.5) / inv in IEEE floats (round(x, 0): inv = +Inf, NaN)
        inv = go_div(1.0, params[0] if params else 1.0)
        return Vector(Sample(drop_name(s.labels), go_div(_go_floor(s.value * inv + 0.5), inv), t) for s in vec)
    raise AssertionError(f"function {name} passed validation but has no implementation")


def _go_floor(x: float) -> float:
    """Go's math.Floor: infinities and NaN are their own floor (Python's math.floor raises on them)."""
    return float(math.floor(x)) if math.isfinite(x) else x


def _check_unique(vector: Vector) -> None:
    seen: set[Labels] = set()
    for s in vector:
        if s.labels in seen:
            raise QueryExecutionError("vector cannot contain metrics with the same labelset")
        seen.add(s.labels)
