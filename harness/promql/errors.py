"""Errors of the PromQL engine, split the way a Prometheus server splits them.

A query the parser rejects, or one that uses a function outside the engine's
subset, is the user's to fix: a ``UserError`` naming the query, the function
and its character position, so the CLI prints one line and exits 2. A query
that parses but fails while evaluating (many-to-many matching, duplicate
label sets) is what a real Prometheus answers with HTTP 422: a
``MetricsUnavailable``, so controllers treat it as a failed read, as KEDA
counts it toward its fallback.
"""
from __future__ import annotations

from scalearena.contracts.errors import MetricsUnavailable, UserError


class PromQLError(UserError):
    """A query that cannot be evaluated as written (parse error or unsupported construct)."""

    def __init__(self, message: str, *, query: str, position: int | None = None) -> None:
        self.query = query
        self.position = position
        where = f"query {query!r}" + (f" at character {position}" if position is not None else "")
        super().__init__(message, where=where)


class PromQLParseError(PromQLError):
    """The parser (promql-parser) rejected the query."""


class UnsupportedPromQL(PromQLError):
    """Valid PromQL that this engine does not evaluate; refused rather than answered wrongly."""


class QueryExecutionError(MetricsUnavailable):
    """The query parsed but Prometheus would fail it at evaluation time (HTTP 422)."""


def is_parser_panic(e: BaseException) -> bool:
    """Whether ``e`` is a Rust panic of promql-parser: pyo3 raises it as ``PanicException``, a BaseException that
    no ``except Exception`` catches and that pyo3 does not export by a stable import path."""
    return type(e).__name__ == "PanicException"
