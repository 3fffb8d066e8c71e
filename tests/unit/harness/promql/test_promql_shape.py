"""A query's size and shape are bounded before it is parsed (harness/promql/shape.py, issue 31 item 1):
10,000 nested parentheses aborted the interpreter, a 5,000-term sum crashed it, 400 terms took 9.5 s."""
from __future__ import annotations

import pytest

from scalearena.harness.promql.errors import PromQLParseError
from scalearena.harness.promql.shape import MAX_QUERY_DEPTH, MAX_QUERY_OPERATORS, check_shape
from scalearena.harness.promql.validate import parse_supported


def test_depth_is_bounded_at_64_levels() -> None:
    parse_supported("(" * 64 + "x" + ")" * 64)
    with pytest.raises(PromQLParseError, match="nested more than 64 levels deep") as e:
        parse_supported("(" * 65 + "x" + ")" * 65)
    assert e.value.position == 64  # the 65th opening parenthesis, 0-based
    with pytest.raises(PromQLParseError, match="nested more than 64 levels deep"):
        parse_supported("(" * 5_000 + "x" + ")" * 5_000)  # 10,000 once aborted the parser (SIGABRT)
    assert MAX_QUERY_DEPTH == 64


def test_binary_operators_are_bounded_at_100() -> None:
    parse_supported(" + ".join(["x"] * 101))  # 100 operators
    with pytest.raises(PromQLParseError, match="more than 100 binary operators") as e:
        parse_supported(" + ".join(["x"] * 102))
    assert e.value.position == 4 * 101 - 2  # "x + " repeats every 4 characters: the k-th '+' is at 4k - 2
    assert MAX_QUERY_OPERATORS == 100


def test_label_matchers_and_strings_are_no_operators() -> None:
    # 100 selectors with != and =~ matchers and strings full of operator characters, joined by 99 "or"s
    q = " or ".join(['x{a!="-+*/", b=~"a|b+", c="<>"}'] * 100)
    check_shape(q)
    with pytest.raises(PromQLParseError, match="more than 100 binary operators"):
        check_shape(q + " or y and z")  # 99 + 2 = 101


def test_length_is_bounded_and_the_message_stays_one_line() -> None:
    with pytest.raises(PromQLParseError, match="query of 16,385 characters, more than the 16,384 allowed") as e:
        check_shape("x" * 16_385)
    assert len(str(e.value)) < 200  # the query is cut to 80 characters in the message


def test_huge_ranges_and_offsets_are_refused_before_the_parser_panics() -> None:
    """x[1e308] made promql-parser panic (float seconds to Duration) past every error guard (issue 31)."""
    for q, pos in (("x[1e308]", 2), ("x offset 1e999", 9), ("x offset -1e999", 10), ("max_over_time(x[1h:1e12s])", 19)):
        with pytest.raises(PromQLParseError, match="more than 1e\\+09 seconds") as e:
            parse_supported(q)
        assert e.value.position == pos
    for ok in ("rate(x[5m])", "x offset 5m", "x * 1e308", "max_over_time(x[7d:1m])"):
        parse_supported(ok)  # a large number outside a range or offset is a number


def test_what_an_autoscaler_reads_is_an_instant_vector_or_a_scalar_and_subqueries_are_bounded() -> None:
    from scalearena.harness.promql.errors import UnsupportedPromQL
    from scalearena.harness.promql.validate import check_read

    for q, kind in (("x[5m]", "a range vector"), ("(x[5m])", "a range vector"), ("x[1h:1m]", "a range vector"),
                    ('"text"', "a string")):
        with pytest.raises(UnsupportedPromQL, match=f"the query returns {kind}"):
            check_read(q)
        parse_supported(q)  # the engine itself evaluates range queries (a source reading a window)
    # 1 h at 1 ms is 3,600,000 steps per evaluation, where 11,000 is Prometheus' points-per-series limit
    with pytest.raises(UnsupportedPromQL, match="a subquery of 3,600,000 steps"):
        parse_supported("avg_over_time(x[1h:1ms])")
    parse_supported("avg_over_time(x[7d:1m])")  # 10,080 steps
