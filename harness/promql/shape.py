"""Bounds on a query's size and shape, checked on its text before it is parsed.

A user's PromQL (KEDA queries, PrometheusRule ``expr``, adapter ``metricsQuery``, recipe ``env``) went
to promql-parser as written, and its cost is not linear: 10,000 nested parentheses aborted the
interpreter, a 5,000-term ``x + x + ...`` crashed it, and the checks after parsing take 0.08 s at
100 binary operators, 0.7 s at 200 and 9.5 s at 400 (measured here). So before any parse the text is
scanned once (string literals skipped) and refused past:

* ``MAX_QUERY_CHARS`` characters (16 KiB: Prometheus recording rules in llm-d's guides are under 300);
* ``MAX_QUERY_DEPTH`` levels of ``( [ {`` nesting (64; 256 already takes 0.5 s to check);
* ``MAX_QUERY_OPERATORS`` binary operators outside label matchers (100: each is a level of the tree);
* ``MAX_QUERY_SECONDS`` in a range (``[...]``) or an ``offset``: ``x[1e308]`` made the parser panic
  (its float-to-Duration conversion), past every error guard.

Each refusal names the limit and where the query crosses it. Written here: no PromQL library bounds its
input, and the scan is twenty lines.
"""
from __future__ import annotations

import re

from scalearena.harness.promql.errors import PromQLParseError

MAX_QUERY_CHARS = 16_384
MAX_QUERY_DEPTH = 64
MAX_QUERY_OPERATORS = 100
MAX_QUERY_SECONDS = 1e9  # about 31 years: any range, step or offset beyond it is a typo or an attack
_DURATION = re.compile(r"(\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)(ms|s|m|h|d|w|y)?")
_UNIT_S = {"ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0, "y": 31536000.0, None: 1.0}
_OFFSET = re.compile(r"offset\s*-?\s*", re.IGNORECASE)
_OPERATOR = re.compile(r"==|!=|>=|<=|[-+*/%^<>]|\b(?:and|or|unless|atan2)\b")
_OPEN, _CLOSE = "([{", ")]}"


def _shown(query: str) -> str:
    return query if len(query) <= 80 else query[:77] + "..."


def check_shape(query: str) -> None:
    """Refuse ``query`` (``PromQLParseError``) when it is longer, deeper or has more operators than allowed."""
    if len(query) > MAX_QUERY_CHARS:
        raise PromQLParseError(f"query of {len(query):,} characters, more than the {MAX_QUERY_CHARS:,} allowed",
                               query=_shown(query))
    depth, operators, i, n = 0, 0, 0, len(query)
    braces = 0  # inside {...}: label matchers, whose = != =~ are no operators
    brackets = 0  # inside [...]: a range or a subquery's range and step
    while i < n:
        c = query[i]
        if c in "\"'`":  # a string literal: skip to its closing quote (backslash escapes, not in backticks)
            j = i + 1
            while j < n and query[j] != c:
                j += 2 if c != "`" and query[j] == "\\" else 1
            i = j + 1
            continue
        if c in _OPEN:
            depth += 1
            braces += c == "{"
            brackets += c == "["
            if depth > MAX_QUERY_DEPTH:
                raise PromQLParseError(f"nested more than {MAX_QUERY_DEPTH} levels deep", query=_shown(query),
                                       position=i)
        elif c in _CLOSE:
            depth = max(0, depth - 1)
            braces = max(0, braces - (c == "}"))
            brackets = max(0, brackets - (c == "]"))
        elif (c.isdigit() or c == ".") and (brackets or _after_offset(query, i)) and (m := _DURATION.match(query, i)):
            seconds = float(m.group(1)) * _UNIT_S[m.group(2)]
            if not seconds <= MAX_QUERY_SECONDS:  # also NaN
                raise PromQLParseError(f"a range, step or offset of {m.group(0)}, more than {MAX_QUERY_SECONDS:g} "
                                       "seconds", query=_shown(query), position=i)
            i = m.end()
            continue
        elif not braces and (m := _OPERATOR.match(query, i)):
            operators += 1
            if operators > MAX_QUERY_OPERATORS:
                raise PromQLParseError(f"more than {MAX_QUERY_OPERATORS} binary operators", query=_shown(query),
                                       position=i)
            i = m.end()
            continue
        i += 1


def _after_offset(query: str, i: int) -> bool:
    """Whether position ``i`` starts the duration of an ``offset`` (``offset 5m``, ``offset -1h``)."""
    start = max(0, i - 16)
    return any(m.end() == i for m in _OFFSET.finditer(query, start, i))
