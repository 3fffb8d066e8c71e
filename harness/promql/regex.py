"""Regular expressions as Prometheus and prometheus-adapter run them: RE2, in linear time.

Prometheus (Go ``regexp``, RE2 syntax and guarantees) anchors a label matcher's pattern as
``^(?s:pattern)$`` (model/labels/regexp.go); prometheus-adapter searches its ``seriesFilters`` and
``name.matches`` unanchored with Go's ``regexp`` too. Python's ``re`` backtracks: ``=~"(a+)+"`` against
a long label value hung a run (issue 31), and its syntax is not Go's. So every user pattern runs on
``google-re2`` (the RE2 library the Go engine reimplements), compiled once per pattern; a pattern RE2
refuses is a ``UserError`` naming it. Errors are not logged by RE2 itself (``log_errors`` off).
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any

import re2

from scalearena.contracts.errors import UserError

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False


@lru_cache(maxsize=1024)
def compiled(pattern: str, anchored: bool = False) -> Any:
    """``pattern`` compiled by RE2; ``anchored``: as a PromQL label matcher (the whole value, dot matches \\n)."""
    text = f"^(?s:{pattern})$" if anchored else pattern
    try:
        return re2.compile(text, options=_OPTIONS)
    except re2.error as e:
        detail = e.args[0].decode() if e.args and isinstance(e.args[0], bytes) else str(e)
        raise UserError(f"regular expression {pattern!r}: {detail}", expected="an RE2 (Go regexp) pattern") from None


def label_match(pattern: str, value: str) -> bool:
    """Whether a label ``value`` matches ``=~"pattern"`` (Prometheus: the whole value)."""
    return compiled(pattern, True).search(value) is not None


def search(pattern: str, text: str) -> Any:
    """Go's ``regexp.FindStringSubmatch`` for prometheus-adapter: the first match anywhere, or None."""
    return compiled(pattern).search(text)
