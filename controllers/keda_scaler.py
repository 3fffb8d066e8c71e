"""One KEDA ``prometheus`` trigger: its spec, how its value is read, and KEDA's fallback arithmetic.

A trigger's ``query`` is either the name of a ``signals.Signal`` (computed from the view, the
paper's default) or a PromQL expression run through the metrics source (``MetricsSource.query``:
the PromQL engine over the simulator's series, or a real Prometheus). The PromQL result is read
as kedacore/keda ``pkg/scalers/prometheus_scaler.go`` ``ExecutePromQuery`` reads the
``/api/v1/query`` answer:

- no series: 0 when ``ignore_null_values`` (KEDA's default, true), else an error ("the result is
  empty");
- more than one series: an error ("returned multiple elements"), never a sum;
- a value that is +-Inf: 0 when ``ignore_null_values``, else an error ("promtheus query returns
  +Inf"); NaN is no error there (only ``math.IsInf`` is checked) and becomes the metric 0:
  KEDA main's ``quantityFromFloat64`` (pkg/scalers/scaler.go, "Treat NaN and Inf as zero")
  writes NaN as 0 (earlier releases wrote ``int64(NaN x 1000)``, which on amd64 is the most
  negative int64: a proposal below min, clamped to min as 0's is); inactive (NaN > x is false);
- a scalar or string result does not decode as a vector in KEDA: an error.
Every error is a failed read (``MetricsUnavailable``), which KEDA counts toward ``fallback``.

Fallback (kedacore/keda ``pkg/fallback/fallback.go``): once a metric has failed more than
``failure_threshold`` times in a row, the generated HPA is fed ``normalisation x 1000 x replicas``
milli-units, where ``normalisation`` is the trigger's AverageValue target truncated to an integer
(``int64(AverageValue.AsApproximateFloat64())``) or the scalingModifiers target, and ``replicas``
follows ``behavior``: ``static`` -> fallback.replicas; ``currentReplicas`` -> the target's current
replicas; ``currentReplicasIfHigher`` / ``IfLower`` -> the larger / smaller of the two.
"""
from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import Field, field_validator

from scalearena.contracts.errors import MetricsUnavailable
from scalearena.contracts.limits import StrictSpec
from scalearena.controllers.base import ClusterView, VariantView
from scalearena.controllers.signals import SIGNAL_QUERIES, signal_value

FallbackBehavior = Literal["static", "currentReplicas", "currentReplicasIfHigher", "currentReplicasIfLower"]
MetricType = Literal["AverageValue", "Value"]


class Trigger(StrictSpec):
    """One ``prometheus`` trigger of a ScaledObject."""

    name: str | None = Field(
        default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_-]*$",
        description="Trigger name (required with scaling_modifiers: the formula's variable).",
    )
    query: str = Field(min_length=1, description="A signal name (controllers/signals.py) or a PromQL expression.")
    threshold: float = Field(gt=0, description="threshold: the generated HPA's target for this metric.")
    activation_threshold: float = Field(default=0.0, ge=0, description="activationThreshold: active while value > this.")
    metric_type: MetricType = Field(
        default="AverageValue", description="AverageValue: desired = ceil(value / threshold); Value: total target."
    )
    ignore_null_values: bool = Field(
        default=True, description="ignoreNullValues: an empty result (or NaN/Inf) reads 0; false: an error."
    )

    @field_validator("query")
    @classmethod
    def _parses(cls, q: str) -> str:
        if q not in SIGNAL_QUERIES:
            import promql_parser  # the same parser the PromQL engine uses (harness/promql)

            try:
                promql_parser.parse(q)
            except ValueError as e:
                raise ValueError(f"not a signal ({', '.join(SIGNAL_QUERIES)}) and not PromQL: {e}") from None
        return q

    @property
    def is_signal(self) -> bool:
        return self.query in SIGNAL_QUERIES


class Fallback(StrictSpec):
    failure_threshold: int = Field(ge=0, description="Fallback once consecutive failures exceed this.")
    replicas: int = Field(ge=0, description="Replicas to run while the trigger keeps failing.")
    behavior: FallbackBehavior = Field(
        default="static", description="static | currentReplicas | currentReplicasIfHigher | currentReplicasIfLower."
    )


def fallback_replicas(fb: Fallback, current: int) -> int:
    """``doFallback``'s replica count for ``fb.behavior`` with the target at ``current`` replicas."""
    if fb.behavior == "currentReplicas":
        return current
    if fb.behavior == "currentReplicasIfHigher":
        return max(current, fb.replicas)
    if fb.behavior == "currentReplicasIfLower":
        return min(current, fb.replicas)
    return fb.replicas


def fallback_value(fb: Fallback, target: float, current: int) -> float:
    """The metric value (metric units) the HPA is fed in fallback: int(target) x replicas."""
    return float(int(target) * fallback_replicas(fb, current))


def prometheus_value(result: Any, query: str, ignore_null_values: bool) -> float:
    """``ExecutePromQuery``'s reading of an instant query's ``data.result``."""
    return prometheus_reading(result, query, ignore_null_values)[0]


def prometheus_reading(result: Any, query: str, ignore_null_values: bool) -> tuple[float, bool]:
    """``prometheus_value`` and whether it came from a series (False: none matched, or it read NaN / Inf, and
    the value is the 0 that ``ignoreNullValues`` or NaN's conversion puts in its place)."""
    if not isinstance(result, list) or any(not isinstance(s, dict) for s in result):
        raise MetricsUnavailable(f"prometheus query {query} did not return a vector")
    if not result:
        if ignore_null_values:
            return 0.0, False
        raise MetricsUnavailable("prometheus metrics 'prometheus' target may be lost, the result is empty")
    if len(result) > 1:
        raise MetricsUnavailable(f"prometheus query {query} returned multiple elements")
    value = result[0].get("value") or []
    if len(value) < 2:
        if not value and ignore_null_values:
            return 0.0, False
        raise MetricsUnavailable(f"prometheus query {query} didn't return enough values")
    try:
        v = float(value[1])
    except (TypeError, ValueError):
        raise MetricsUnavailable(f"prometheus query {query} returned {value[1]!r}") from None
    if math.isnan(v):
        return 0.0, False
    if math.isinf(v):
        if ignore_null_values:
            return 0.0, False
        raise MetricsUnavailable(f"prometheus query returns {v}")
    return v, True


def read_trigger(view: ClusterView, v: VariantView, t: Trigger) -> tuple[float, bool]:
    """The trigger's value for variant ``v`` and whether it came from a series (False: the query matched
    nothing or read NaN/Inf, and ``ignoreNullValues`` made it 0); ``MetricsUnavailable`` when the read fails."""
    if t.is_signal:
        return signal_value(view, v, t.query), True
    query = getattr(view.metrics, "query", None)
    if query is None:
        raise MetricsUnavailable("the metrics source cannot run PromQL")
    # KEDA asks Prometheus at the whole second (prometheus_scaler.go: time.Now().UTC().Format(time.RFC3339)): a
    # source that keeps the simulator's clock says when that was (MemoryMetrics.keda_query_time)
    at = getattr(view.metrics, "keda_query_time", None)
    result = query(t.query, at(view.now)) if at is not None else query(t.query)
    return prometheus_reading(result, t.query, t.ignore_null_values)
