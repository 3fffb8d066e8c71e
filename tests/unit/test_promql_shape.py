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
