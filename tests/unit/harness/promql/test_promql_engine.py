"""The PromQL engine on hand-built series: expected values worked out by hand from Prometheus' algorithms."""
from __future__ import annotations

import math

import pytest

from scalearena.contracts.errors import MetricsUnavailable, UserError
from scalearena.harness.promql import (
    TSDB,
    PromQLEngine,
    PromQLParseError,
    QueryExecutionError,
    Scalar,
    UnsupportedPromQL,
    Vector,
)


def _by(vec: object, key: str = "pod") -> dict[str, float]:
    assert isinstance(vec, Vector)
    return {dict(s.labels).get(key, ""): s.value for s in vec}


def _engine(**series: list[tuple[float, float]]) -> PromQLEngine:
    db = TSDB()
    for spec, points in series.items():
        name, _, pod = spec.partition("__")
        for t, v in points:
            db.append(name, {"pod": pod} if pod else {}, t, v)
    return PromQLEngine(db)


def test_rate_extrapolates_to_the_window_edges_only_within_1_1_sample_spacings() -> None:
    e = _engine(reqs__a=[(10, 5), (25, 20), (40, 35)])
    # window [0, 60]: increase 30 over 30 s of samples, spacing 15, threshold 16.5
    # start: 10 s to the edge, but the counter hits zero 30*(5/30) = 5 s before the first sample -> +5
    # end: 20 s > 16.5 -> half a spacing, +7.5; interval 42.5 -> increase 30*42.5/30 = 42.5, rate 42.5/60
    assert _by(e.query("increase(reqs[1m])", 60)) == {"a": pytest.approx(42.5, rel=1e-12)}
    assert _by(e.query("rate(reqs[1m])", 60)) == {"a": pytest.approx(42.5 / 60, rel=1e-12)}


def test_counter_reset_adds_the_value_before_the_drop() -> None:
    e = _engine(reqs__a=[(0, 10), (15, 20), (30, 5), (45, 15), (60, 25)])
    # 25 - 10 = 15, plus 20 lost at the reset = 35; samples span the whole window [0, 60] -> factor 1
    assert _by(e.query("increase(reqs[1m])", 60)) == {"a": pytest.approx(35.0)}
    # irate: last two samples 15 -> 25 over 15 s
    assert _by(e.query("irate(reqs[1m])", 60)) == {"a": pytest.approx(10 / 15)}
    # delta does not treat the drop as a reset: 25 - 10 = 15
    assert _by(e.query("delta(reqs[1m])", 60)) == {"a": pytest.approx(15.0)}


def test_lookback_keeps_a_sample_for_5_minutes_and_a_staleness_marker_ends_it() -> None:
    e = _engine(kv__a=[(0, 0.5)], kv__b=[(0, 0.7)])
    assert _by(e.query("kv", 300)) == {"a": 0.5, "b": 0.7}  # v2.x lookback window [t-5m, t] is closed
    assert e.query("kv", 300.001) == []
    e.tsdb.mark_stale("kv", {"pod": "b"}, 30)
    assert _by(e.query("kv", 29)) == {"a": 0.5, "b": 0.7}
    assert _by(e.query("kv", 31)) == {"a": 0.5}
    assert _by(e.query("kv offset 2s", 31)) == {"a": 0.5, "b": 0.7}  # 29 s is before the marker


def test_histogram_quantile_interpolates_inside_the_bucket_that_holds_the_rank() -> None:
    db = TSDB()
    for le, count in (("0.1", 10), ("0.5", 30), ("1", 40), ("+Inf", 40)):
        db.append("ttft_bucket", {"le": le, "model_name": "m"}, 10, count)
    e = PromQLEngine(db)
    # q=0.5: rank 20 falls in (0.1, 0.5] holding 20 -> 0.1 + 0.4 * (10/20) = 0.3
    assert _by(e.query("histogram_quantile(0.5, ttft_bucket)", 10), "model_name") == {"m": pytest.approx(0.3)}
    # q=0.99: rank 39.6 in (0.5, 1] holding 10 -> 0.5 + 0.5 * (9.6/10) = 0.98
    assert _by(e.query("histogram_quantile(0.99, ttft_bucket)", 10), "model_name") == {"m": pytest.approx(0.98)}
    # q > 1 is +Inf; no observations -> NaN
    assert _by(e.query("histogram_quantile(1.5, ttft_bucket)", 10), "model_name") == {"m": math.inf}
    assert math.isnan(e.query("histogram_quantile(0.5, ttft_bucket * 0)", 10)[0].value)


def test_rank_in_the_inf_bucket_returns_the_highest_finite_bound() -> None:
    db = TSDB()
    for le, count in (("1", 30), ("+Inf", 40)):
        db.append("h_bucket", {"le": le}, 0, count)
    # q=0.9: rank 36 > 30 lies in +Inf -> upper bound of the bucket below, 1
    assert PromQLEngine(db).query("histogram_quantile(0.9, h_bucket)", 0)[0].value == 1.0


def test_aggregations_by_and_without() -> None:
    db = TSDB()
    for pod, variant, v in (("p1", "a", 1.0), ("p2", "a", 4.0), ("p3", "b", 10.0)):
        db.append("waiting", {"pod": pod, "variant": variant}, 0, v)
    e = PromQLEngine(db)
    assert _by(e.query("sum by (variant)(waiting)", 0), "variant") == {"a": 5.0, "b": 10.0}
    assert _by(e.query("avg without (pod)(waiting)", 0), "variant") == {"a": 2.5, "b": 10.0}
    assert _by(e.query("count(waiting)", 0), "") == {"": 3.0}
    assert _by(e.query("topk(1, waiting)", 0)) == {"p3": 10.0}
    assert _by(e.query("bottomk by (variant)(1, waiting)", 0)) == {"p1": 1.0, "p3": 10.0}
    assert _by(e.query("quantile(0.5, waiting)", 0), "") == {"": 4.0}


def test_vector_matching_on_ignoring_group_left_and_many_to_many() -> None:
    db = TSDB()
    db.append("running", {"pod": "p1", "variant": "a"}, 0, 6.0)
    db.append("running", {"pod": "p2", "variant": "a"}, 0, 2.0)
    db.append("replicas", {"variant": "a", "deployment": "d"}, 0, 2.0)
    e = PromQLEngine(db)
    out = e.query("running / on(variant) group_left(deployment) replicas", 0)
    assert {(dict(s.labels)["pod"], dict(s.labels)["deployment"]): s.value for s in out} == {
        ("p1", "d"): 3.0, ("p2", "d"): 1.0,  # 6/2, 2/2, the one side's `deployment` copied over
    }
    with pytest.raises(QueryExecutionError, match="many-to-one matching must be explicit"):
        e.query("running / on(variant) replicas", 0)
    with pytest.raises(QueryExecutionError, match="many-to-many"):
        e.query("replicas / on(variant) running", 0)
    assert isinstance(QueryExecutionError("x"), MetricsUnavailable)


def test_comparisons_filter_or_return_bool_and_keep_the_vector_value() -> None:
    e = _engine(q__a=[(0, 3.0)], q__b=[(0, 8.0)])
    assert _by(e.query("q > 5", 0)) == {"b": 8.0}
    assert _by(e.query("5 < q", 0)) == {"b": 8.0}  # scalar on the left: the vector's value is kept
    assert _by(e.query("q > bool 5", 0)) == {"a": 0.0, "b": 1.0}
    assert e.query("2 > bool 1", 0) == Scalar(1.0)
    assert _by(e.query("q / 0", 0)) == {"a": math.inf, "b": math.inf}  # Go float division


def test_empty_results_and_set_operators() -> None:
    e = _engine(q__a=[(0, 3.0)])
    assert e.query("sum(missing)", 0) == []
    assert math.isnan(e.query("scalar(missing)", 0).value)  # type: ignore[union-attr]
    assert _by(e.query("sum(missing) or vector(0)", 0), "") == {"": 0.0}
    assert e.query("q and missing", 0) == []
    assert _by(e.query("q unless missing", 0)) == {"a": 3.0}
    assert _by(e.query("absent(missing{pod=\"x\"})", 0)) == {"x": 1.0}


def test_subquery_steps_are_aligned_to_multiples_of_the_step() -> None:
    e = _engine(g__a=[(t, t) for t in range(0, 100, 5)])
    # at t=70, window [10, 70], step 20 -> points at 20, 40, 60 (multiples of 20 from 0)
    assert _by(e.query("count_over_time(g[1m:20s])", 70)) == {"a": 3.0}
    assert _by(e.query("min_over_time(g[1m:20s])", 70)) == {"a": 20.0}
    assert _by(e.query("max_over_time(g[1m:20s] offset 10s)", 70)) == {"a": 60.0}  # [0, 60]


def test_clamp_and_math_functions_drop_the_metric_name() -> None:
    e = _engine(x__a=[(0, -1.5)], x__b=[(0, 2.5)])
    assert _by(e.query("clamp(x, -1, 2)", 0)) == {"a": -1.0, "b": 2.0}
    assert _by(e.query("clamp_min(x, 0)", 0)) == {"a": 0.0, "b": 2.5}
    assert _by(e.query("abs(x)", 0)) == {"a": 1.5, "b": 2.5}
    assert _by(e.query("ceil(x)", 0)) == {"a": -1.0, "b": 3.0}
    assert all(dict(s.labels).get("__name__") is None for s in e.query("floor(x)", 0))  # type: ignore[union-attr]


def test_query_range_returns_one_series_per_label_set() -> None:
    e = _engine(x__a=[(0, 1.0), (10, 2.0)])
    m = e.query_range("x * 2", 0, 20, 10)
    assert [(dict(s.labels), s.points) for s in m] == [({"pod": "a"}, [(0, 2.0), (10000, 4.0), (20000, 4.0)])]


@pytest.mark.parametrize(
    ("query", "kind", "position", "words"),
    [
        ("sum(rate(x[1m])) + stddev(x)", UnsupportedPromQL, 19, "stddev"),
        ("max(x) + label_replace(x, \"a\", \"b\", \"c\", \"d\")", UnsupportedPromQL, 9, "label_replace"),
        ("rate(x[1m]) + rate(y[1m]) * predict_linear(z[5m], 60)", UnsupportedPromQL, 28, "predict_linear"),
        ("nosuch(x)", PromQLParseError, 0, "nosuch"),
    ],
)
def test_outside_the_subset_is_a_user_error_with_the_position(query: str, kind: type, position: int, words: str) -> None:
    e = _engine(x__a=[(0, 1.0)])
    with pytest.raises(kind) as info:
        e.query(query, 0)
    assert isinstance(info.value, UserError)
    assert info.value.position == position
    assert words in str(info.value) and f"character {position}" in str(info.value)


def test_round_follows_funcround_in_ieee_floats() -> None:
    """Prometheus' funcRound: floor(v x (1 / to_nearest) + 0.5) / (1 / to_nearest) in Go floats, where 1 / 0 is +Inf
    (round(x, 0) failed the run with ZeroDivisionError, issue 31). By hand: -1.5 -> floor(-1.0) = -1; 2.5 -> 3;
    to the nearest 0.5: 1.26 -> floor(3.02) / 2 = 1.5; to 0: v x Inf = +-Inf, floor(+-Inf) / Inf = NaN, and
    0 x Inf = NaN; an infinite sample stays infinite at to_nearest 1 (Inf / 1)."""
    e = _engine(x__a=[(0, -1.5)], x__b=[(0, 2.5)], y__c=[(0, 1.26)], z__z=[(0, 0.0)], w__w=[(0, math.inf)])
    assert _by(e.query("round(x)", 0)) == {"a": -1.0, "b": 3.0}
    assert _by(e.query("round(y, 0.5)", 0)) == {"c": 1.5}
    zero = _by(e.query("round(x, 0)", 0)) | _by(e.query("round(z, 0)", 0))
    assert set(zero) == {"a", "b", "z"} and all(math.isnan(v) for v in zero.values())
    assert _by(e.query("round(w)", 0)) == {"w": math.inf}


def test_label_regexes_run_in_linear_time_and_anchor_as_prometheus() -> None:
    """=~ is RE2 anchored as ^(?s:pattern)$ (model/labels/regexp.go): "(a+)+" against 50,000 a's and a b
    backtracked for ever in Python's re (issue 31); the dot matches a newline as (?s) says."""
    from scalearena.harness.promql.regex import label_match

    db = TSDB()
    db.append("x", {"pod": "a" * 50_000 + "b"}, 0, 1.0)
    db.append("x", {"pod": "aaa"}, 0, 2.0)
    e = PromQLEngine(db)
    assert list(_by(e.query('x{pod=~"(a+)+"}', 0)).values()) == [2.0]  # the long one does not match (a b at its end)
    assert label_match("a.*", "abc") and not label_match("a.*", "xabc")  # anchored at both ends
    assert label_match("a.b", "a\nb")  # (?s)
    with pytest.raises(UserError, match=r"regular expression '\(': missing \)"):
        label_match("(", "x")
