"""Parse a query with promql-parser and refuse what the engine does not evaluate.

The subset is checked once per query string, before any evaluation, so an
unsupported function never yields a partial or wrong number. promql-parser's
AST carries no source positions, so the position reported is that of the
construct's n-th occurrence in the query text (n = its order in the AST walk),
which is where a reader would look for it.
"""
from __future__ import annotations

import re
from typing import Any

import promql_parser as pp

from scalearena.harness.promql.errors import PromQLParseError, UnsupportedPromQL, is_parser_panic
from scalearena.harness.promql.functions import MATH_FUNCTIONS, RANGE_FUNCTIONS
from scalearena.harness.promql.position import describe, error_position
from scalearena.harness.promql.shape import check_shape

SUPPORTED_FUNCTIONS = frozenset(
    {*RANGE_FUNCTIONS, *MATH_FUNCTIONS, "quantile_over_time", "histogram_quantile", "clamp", "clamp_min",
     "clamp_max", "round", "vector", "scalar", "time", "timestamp", "absent", "sort", "sort_desc"}
)
SUPPORTED_AGGREGATIONS = frozenset({"sum", "avg", "min", "max", "count", "group", "topk", "bottomk", "quantile"})
MAX_SUBQUERY_STEPS = 11_000  # Prometheus' limit on points per series of a range query (web/api/v1/api.go)
# promql-parser's lexer errors that only the end of the text raises
_AT_END = frozenset({"unclosed left parenthesis", "unexpected end of input inside braces",
                     "unexpected end of input inside brackets"})


def position_of(query: str, word: str, occurrence: int = 0, *, call: bool = True) -> int | None:
    """Character offset (0-based) of the n-th `word(` (or bare `word`) in the query."""
    pattern = rf"(?<![\w:]){re.escape(word)}\s*\(" if call else re.escape(word)
    hits = [m.start() for m in re.finditer(pattern, query)]
    if not hits:
        return None
    return hits[min(occurrence, len(hits) - 1)]


def parse_supported(query: str) -> Any:
    check_shape(query)  # before the parser sees it: its cost grows faster than the text (shape.py)
    try:
        node = pp.parse(query)
    except BaseException as e:
        if is_parser_panic(e):
            raise PromQLParseError(f"PromQL parse error: {str(e).splitlines()[0]}", query=query) from None
        if not isinstance(e, ValueError):
            raise
        message = str(e)
        unknown = re.search(r"unknown function with name '([^']+)'", message)
        pos = position_of(query, unknown.group(1)) if unknown else None
        if pos is None:  # promql-parser gives no position: find the token it stops at (position.py)
            pos = error_position(query)
            # the grammar's bare error, or an end-of-input error of promql-parser's lexer (which reads the whole
            # text before parsing) where the parser stops earlier, as Prometheus' lazy lexer does: say what the
            # parser stopped at ("sum(x by (a)": unexpected 'by' at 6, not "unclosed left parenthesis")
            if message == "invalid promql query" or (pos < len(query) and message in _AT_END):
                message = describe(query, pos)
        raise PromQLParseError(f"PromQL parse error: {message}", query=query, position=pos) from None
    _check_arg_types(query, node)
    _check_subset(query, node)
    return node


def check_read(query: str) -> None:
    """A query an autoscaler or a recording rule reads (config validation): parsed within the subset, and
    an instant vector or a scalar."""
    _top_level(query, parse_supported(query))


_TYPE_NAMES = {"Vector": "instant vector", "Scalar": "scalar", "Matrix": "range vector", "String": "string"}


def _static_type(node: Any) -> str | None:
    """The value type of ``node`` as Prometheus' checker infers it before evaluation (None: not worked out)."""
    while isinstance(node, pp.ParenExpr | pp.UnaryExpr):
        node = node.expr
    if isinstance(node, pp.NumberLiteral):
        return "Scalar"
    if isinstance(node, pp.StringLiteral):
        return "String"
    if isinstance(node, pp.VectorSelector | pp.AggregateExpr):
        return "Vector"
    if isinstance(node, pp.MatrixSelector | pp.SubqueryExpr):
        return "Matrix"
    if isinstance(node, pp.Call):
        return str(node.func.return_type).rpartition(".")[2]
    if isinstance(node, pp.BinaryExpr):
        sides = (_static_type(node.lhs), _static_type(node.rhs))
        return "Vector" if "Vector" in sides else "Scalar" if sides == ("Scalar", "Scalar") else None
    return None


def _check_arg_types(query: str, root: Any) -> None:
    """Each function argument of the type the function declares. promql-parser checks this itself, except for a
    plain number given to ln, log2 or log10 (``ln(0)`` parsed, then failed the engine's evaluation: issue 31)."""
    calls: list[Any] = []

    def collect(node: Any) -> bool:
        if isinstance(node, pp.Call):
            calls.append(node)
        return True

    pp.walk(root, collect)
    for call in calls:
        declared = [str(t).rpartition(".")[2] for t in call.func.arg_types]
        for i, arg in enumerate(call.args):
            want, got = declared[min(i, len(declared) - 1)] if declared else None, _static_type(arg)
            if want and got and want != got:
                name = call.func.name
                raise PromQLParseError(f"PromQL parse error: expected type {_TYPE_NAMES[want]} in call to function "
                                       f"{name!r}, got {_TYPE_NAMES[got]}", query=query, position=position_of(query, name))


def _check_subset(query: str, root: Any) -> None:
    seen: dict[str, int] = {}
    problem: list[tuple[str, str, bool]] = []  # (message, word to locate, is a call)

    def visit(node: Any) -> bool:
        if problem:
            return False
        word, msg = _unsupported(node)
        key = word or ""
        if isinstance(node, pp.Call) or isinstance(node, pp.AggregateExpr):
            seen[key] = seen.get(key, 0) + 1
        if msg:
            problem.append((msg, key, isinstance(node, pp.Call | pp.AggregateExpr)))
            return False
        return True

    pp.walk(root, visit)
    if problem:
        msg, word, is_call = problem[0]
        pos = position_of(query, word, seen.get(word, 1) - 1, call=is_call)
        raise UnsupportedPromQL(msg, query=query, position=pos)


def _unsupported(node: Any) -> tuple[str | None, str | None]:
    """(the construct's name, why it is refused) or (name, None) when supported."""
    if isinstance(node, pp.Call):
        name = node.func.name
        if name not in SUPPORTED_FUNCTIONS:
            return name, f"function {name}() is outside the supported PromQL subset"
        return name, None
    if isinstance(node, pp.AggregateExpr):
        op = str(node.op)
        if op not in SUPPORTED_AGGREGATIONS:
            return op, f"aggregation {op}() is outside the supported PromQL subset"
        return op, None
    if isinstance(node, pp.VectorSelector | pp.SubqueryExpr) and node.at is not None:
        return "@", "the @ modifier is outside the supported PromQL subset"
    if isinstance(node, pp.VectorSelector) and node.matchers.or_matchers:
        return "or", "`or` inside a label selector is outside the supported PromQL subset"
    if isinstance(node, pp.SubqueryExpr) and node.step is not None and node.step.total_seconds() > 0:
        steps = (node.range.total_seconds() if node.range is not None else 0.0) / node.step.total_seconds()
        if steps > MAX_SUBQUERY_STEPS:
            return ":", (f"a subquery of {steps:,.0f} steps ({node.range} at {node.step}), more than the "
                         f"{MAX_SUBQUERY_STEPS:,} points Prometheus returns per series")
    return None, None


def _top_level(query: str, root: Any) -> None:
    """What an HPA metric, a KEDA trigger and a recording rule read must be an instant vector or a scalar
    (Prometheus refuses a rule of another type: "invalid expression type ... must be Scalar or instant Vector")."""
    node = root
    while isinstance(node, pp.ParenExpr):
        node = node.expr
    kind = ("a range vector" if isinstance(node, pp.MatrixSelector | pp.SubqueryExpr)
            else "a string" if isinstance(node, pp.StringLiteral) else None)
    if kind:
        raise UnsupportedPromQL(f"the query returns {kind}; an autoscaler or a rule reads an instant vector or a "
                                "scalar (e.g. wrap a range in rate() or avg_over_time())", query=query, position=0)
