"""PromQL at virtual time: an in-memory TSDB, an evaluator over promql-parser, and rule groups.

The simulator's MetricsSource answers ``query(expr, at)`` here, so a query
means the same in ``sim`` as on a real Prometheus (tests/integration/
test_promql_differential.py holds the two to equal answers).
"""
from __future__ import annotations

from scalearena.harness.promql.engine import PromQLEngine
from scalearena.harness.promql.errors import (
    PromQLError,
    PromQLParseError,
    QueryExecutionError,
    UnsupportedPromQL,
)
from scalearena.harness.promql.tsdb import TSDB
from scalearena.harness.promql.values import Matrix, Sample, Scalar, Series, Vector

__all__ = [
    "TSDB", "Matrix", "PromQLEngine", "PromQLError", "PromQLParseError", "QueryExecutionError", "Sample",
    "Scalar", "Series", "UnsupportedPromQL", "Vector",
]
