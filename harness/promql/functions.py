"""PromQL functions, each a transcription of Prometheus' own algorithm.

Range-vector functions take one series' samples in the window (times in ms,
oldest first) and return a value or None (no output element). The sources
are Prometheus ``promql/functions.go`` (v2.42, the version the differential
test runs): ``extrapolatedRate`` for rate/increase/delta, ``instantValue``
for irate/idelta, ``aggrOverTime`` for the ``*_over_time`` family, and
``promql/quantile.go`` for ``quantile``/``quantile_over_time``.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from scalearena.harness.promql.values import NAN, go_max, go_min

RangeFn = Callable[[list[int], list[float], int, int, float], "float | None"]


def extrapolated_rate(
    ts: list[int], vals: list[float], range_start: int, range_end: int, range_s: float,
    *, is_counter: bool, is_rate: bool,
) -> float | None:
    """functions.go extrapolatedRate: the change over the window, extrapolated to its edges.

    Counter resets add the pre-reset value back; extrapolation reaches a window
    edge only when the first/last sample is within 1.1 average sample spacings
    of it (else half a spacing), and a counter is never extrapolated below zero.
    """
    n = len(ts)
    if n < 2:
        return None
    result = vals[-1] - vals[0]
    if is_counter:
        prev = vals[0]
        for v in vals[1:]:
            if v < prev:
                result += prev
            prev = v
    duration_to_start = (ts[0] - range_start) / 1000
    duration_to_end = (range_end - ts[-1]) / 1000
    sampled = (ts[-1] - ts[0]) / 1000
    avg_between = sampled / (n - 1)
    if is_counter and result > 0 and vals[0] >= 0:
        duration_to_zero = sampled * (vals[0] / result)
        if duration_to_zero < duration_to_start:
            duration_to_start = duration_to_zero
    threshold = avg_between * 1.1
    interval = sampled
    interval += duration_to_start if duration_to_start < threshold else avg_between / 2
    interval += duration_to_end if duration_to_end < threshold else avg_between / 2
    factor = interval / sampled
    if is_rate:
        factor /= range_s
    return result * factor


def instant_value(ts: list[int], vals: list[float], *, is_rate: bool) -> float | None:
    """functions.go instantValue: irate/idelta from the last two samples (a drop is a counter reset)."""
    if len(ts) < 2:
        return None
    last, prev = vals[-1], vals[-2]
    value = last if is_rate and last < prev else last - prev
    interval = ts[-1] - ts[-2]
    if interval == 0:
        return None
    if is_rate:
        value /= interval / 1000
    return value


def _avg(vals: list[float]) -> float:
    # aggrOverTime(avg): incremental mean, so large values do not overflow (functions.go funcAvgOverTime).
    mean, count = 0.0, 0
    for v in vals:
        count += 1
        if math.isinf(mean):
            if math.isinf(v) and (mean > 0) == (v > 0):
                continue
            if not math.isinf(v) and not math.isnan(v):
                continue
        mean += v / count - mean / count
    return mean


def _max(vals: list[float]) -> float:
    out = vals[0]
    for v in vals:
        if v > out or out != out:
            out = v
    return out


def _min(vals: list[float]) -> float:
    out = vals[0]
    for v in vals:
        if v < out or out != out:
            out = v
    return out


def quantile(q: float, values: Sequence[float]) -> float:
    """quantile.go quantile: linear interpolation between the closest ranks; NaN sorts first."""
    if not values or q != q:
        return NAN
    if q < 0:
        return -math.inf
    if q > 1:
        return math.inf
    vs = sorted(values, key=lambda v: (v == v, v if v == v else 0.0))
    n = len(vs)
    rank = q * (n - 1)
    lower = go_max(0, math.floor(rank))
    upper = go_min(n - 1, lower + 1)
    weight = rank - math.floor(rank)
    return vs[int(lower)] * (1 - weight) + vs[int(upper)] * weight


def _over_time(fn: Callable[[list[float]], float]) -> RangeFn:
    def call(ts: list[int], vals: list[float], _s: int, _e: int, _r: float) -> float | None:
        return fn(vals) if vals else None

    return call


def _rate(is_counter: bool, is_rate: bool) -> RangeFn:
    def call(ts: list[int], vals: list[float], s: int, e: int, r: float) -> float | None:
        return extrapolated_rate(ts, vals, s, e, r, is_counter=is_counter, is_rate=is_rate)

    return call


def _instant(is_rate: bool) -> RangeFn:
    def call(ts: list[int], vals: list[float], _s: int, _e: int, _r: float) -> float | None:
        return instant_value(ts, vals, is_rate=is_rate)

    return call


def _changes(vals: list[float]) -> float:
    return float(sum(1 for a, b in zip(vals, vals[1:], strict=False) if not (a == b or (a != a and b != b))))


def _resets(vals: list[float]) -> float:
    return float(sum(1 for a, b in zip(vals, vals[1:], strict=False) if b < a))


# Range-vector functions with one matrix argument. Which of them keep __name__: none (v2.42).
RANGE_FUNCTIONS: dict[str, RangeFn] = {
    "rate": _rate(True, True),
    "increase": _rate(True, False),
    "delta": _rate(False, False),
    "irate": _instant(True),
    "idelta": _instant(False),
    "avg_over_time": _over_time(_avg),
    "min_over_time": _over_time(_min),
    "max_over_time": _over_time(_max),
    "sum_over_time": _over_time(lambda vs: float(sum(vs))),
    "count_over_time": _over_time(lambda vs: float(len(vs))),
    "last_over_time": _over_time(lambda vs: vs[-1]),
    "present_over_time": _over_time(lambda vs: 1.0),
    "changes": _over_time(_changes),
    "resets": _over_time(_resets),
}


def _safe(fn: Callable[[float], float]) -> Callable[[float], float]:
    def call(v: float) -> float:
        try:
            return fn(v)
        except ValueError:  # Go returns NaN for ln(-1), sqrt(-1)
            return NAN
        except OverflowError:
            return math.inf

    return call


def _ln(v: float) -> float:
    if v == 0:
        return -math.inf
    return math.log(v) if v == v else NAN


def _ceil(v: float) -> float:
    return float(math.ceil(v)) if math.isfinite(v) else v


def _floor(v: float) -> float:
    return float(math.floor(v)) if math.isfinite(v) else v


def _sgn(v: float) -> float:
    return 1.0 if v > 0 else -1.0 if v < 0 else v


# Element-wise functions of one instant vector; all drop the metric name.
MATH_FUNCTIONS: dict[str, Callable[[float], float]] = {
    "abs": abs,
    "ceil": _ceil,
    "floor": _floor,
    "sqrt": _safe(math.sqrt),
    "exp": _safe(math.exp),
    "ln": _safe(_ln),
    "log2": _safe(lambda v: math.log2(v) if v > 0 else _ln(v)),
    "log10": _safe(lambda v: math.log10(v) if v > 0 else _ln(v)),
    "sgn": _sgn,
}
