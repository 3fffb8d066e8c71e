"""PromQL aggregation operators and histogram_quantile over instant vectors.

Transcribed from Prometheus v2.42 ``promql/engine.go`` ``aggregation`` (sum,
avg as an incremental mean, min/max where a NaN is replaced by any number,
count, group, topk/bottomk, quantile) and ``promql/quantile.go``
``bucketQuantile`` (sort buckets, merge equal bounds, force monotonic counts,
interpolate linearly inside the bucket holding the rank).
"""
from __future__ import annotations

import math

from scalearena.harness.promql.errors import QueryExecutionError
from scalearena.harness.promql.functions import quantile
from scalearena.harness.promql.values import NAME, NAN, Labels, Sample, Vector, drop_name, label


def group_key(labels: Labels, names: frozenset[str], by: bool) -> Labels:
    """The output label set of a sample's group: `by` keeps only names, `without` drops them and __name__."""
    if by:
        return tuple(p for p in labels if p[0] in names)
    return tuple(p for p in labels if p[0] not in names and p[0] != NAME)


def _fold(op: str, samples: list[Sample], param: float | None) -> float:
    if op == "sum":
        total = 0.0
        for s in samples:
            total += s.value
        return total
    if op == "count":
        return float(len(samples))
    if op == "group":
        return 1.0
    if op == "avg":
        mean, count = samples[0].value, 1
        for s in samples[1:]:
            count += 1
            if math.isinf(mean):
                if math.isinf(s.value) and (mean > 0) == (s.value > 0):
                    continue
                if not math.isinf(s.value) and not math.isnan(s.value):
                    continue
            mean += s.value / count - mean / count
        return mean
    if op in ("max", "min"):
        out = samples[0].value
        for s in samples[1:]:
            better = s.value > out if op == "max" else s.value < out
            if better or out != out:
                out = s.value
        return out
    if op == "quantile":
        assert param is not None
        return quantile(param, [s.value for s in samples])
    raise AssertionError(op)


def aggregate(op: str, vector: Vector, names: frozenset[str], by: bool, param: float | None, t: int) -> Vector:
    """One aggregation at one step; groups are output in first-seen order, as Prometheus does."""
    groups: dict[Labels, list[Sample]] = {}
    for s in vector:
        groups.setdefault(group_key(s.labels, names, by), []).append(s)
    if op in ("topk", "bottomk"):
        return _topk(op, groups, param, t)
    return Vector(Sample(key, _fold(op, members, param), t) for key, members in groups.items())


MAX_INT64 = 9223372036854774784.0  # Prometheus' model/value.go: the largest float an int64 holds
MIN_INT64 = -9223372036854775808.0


def _go_float(v: float | None) -> str:
    return "NaN" if v is None or v != v else "+Inf" if v == math.inf else "-Inf" if v == -math.inf else f"{v:g}"


def _topk(op: str, groups: dict[Labels, list[Sample]], param: float | None, t: int) -> Vector:
    """topk/bottomk keep the k largest (smallest) samples of each group with their full labels.

    Ties at the cut-off are broken by input order (series sorted by labels); a
    NaN ranks below every number for both, as in Prometheus' value heaps. A k that no int64 holds (NaN,
    +-Inf, 1e19) fails the query as engine.go's convertibleToInt64 check does ("topk(1e999, x)" raised
    OverflowError, issue 31).
    """
    if param is None:
        return Vector()
    if not MIN_INT64 <= param <= MAX_INT64:
        raise QueryExecutionError(f"Scalar value {_go_float(param)} overflows int64")
    k = int(param)
    out = Vector()
    if k < 1:
        return out
    for members in groups.values():
        def rank(s: Sample) -> tuple[bool, float]:
            nan = s.value != s.value
            return (not nan, (s.value if op == "topk" else -s.value) if not nan else 0.0)

        kept = sorted(members, key=rank, reverse=True)[:k]
        out.extend(Sample(s.labels, s.value, t) for s in kept)
    return out


def bucket_quantile(q: float, buckets: list[tuple[float, float]]) -> float:
    """quantile.go bucketQuantile over (upper bound, cumulative count) pairs."""
    if q != q:
        return NAN
    if q < 0:
        return -math.inf
    if q > 1:
        return math.inf
    buckets = sorted(buckets, key=lambda b: b[0])
    if not buckets or buckets[-1][0] != math.inf:
        return NAN
    merged: list[list[float]] = []
    for ub, count in buckets:  # coalesceBuckets: equal bounds are summed
        if merged and merged[-1][0] == ub:
            merged[-1][1] += count
        else:
            merged.append([ub, count])
    top = -math.inf
    for b in merged:  # ensureMonotonic
        if b[1] > top:
            top = b[1]
        elif b[1] < top:
            b[1] = top
    if len(merged) < 2:
        return NAN
    observations = merged[-1][1]
    if observations == 0:
        return NAN
    rank = q * observations
    idx = next((i for i in range(len(merged) - 1) if merged[i][1] >= rank), len(merged) - 1)
    if idx == len(merged) - 1:
        return merged[-2][0]
    if idx == 0 and merged[0][0] <= 0:
        return merged[0][0]
    start, end, count = 0.0, merged[idx][0], merged[idx][1]
    if idx > 0:
        start = merged[idx - 1][0]
        count -= merged[idx - 1][1]
        rank -= merged[idx - 1][1]
    return start + (end - start) * (rank / count)


def histogram_quantile(q: float, vector: Vector, t: int) -> Vector:
    """functions.go funcHistogramQuantile: group `_bucket` samples by their labels without `le`."""
    groups: dict[Labels, list[tuple[float, float]]] = {}
    for s in vector:
        try:
            upper = float(label(s.labels, "le"))
        except ValueError:
            continue  # no or malformed `le`: skipped, as upstream does
        key = tuple(p for p in drop_name(s.labels) if p[0] != "le")
        groups.setdefault(key, []).append((upper, s.value))
    return Vector(Sample(key, bucket_quantile(q, b), t) for key, b in groups.items())
