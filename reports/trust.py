"""Whether a run's summary.json can be trusted: the one check ``compare`` and ``report`` apply before using it.

A summary is written by scalearena, but a results folder is user input: hand-edited, truncated, copied from
elsewhere. ``check_summary`` refuses one whose ``complete`` is not a JSON boolean, whose numbers are not
finite, whose counts are not non-negative integers or do not add up (ok + failed = total, the failure causes
sum to the failed), whose attainments are not shares, or whose gated metrics are negative. The error names
the file, the field and what was expected.
"""
from __future__ import annotations

import math
from typing import Any

from scalearena.contracts.errors import UserError
from scalearena.contracts.limits import MAX_MAGNITUDE
from scalearena.reports.catalog import METRICS
from scalearena.reports.load import Run

COUNTS = ("requests_total", "requests_ok", "requests_failed", "scaling_actions")


def _bad(run: Run, field_path: str, got: object, expected: str) -> UserError:
    return UserError(f"{field_path}: got {got!r}", where=str(run.dir / "summary.json"), expected=expected)


def _first_non_finite(node: object, path: str) -> tuple[str, float] | None:
    stack = [(node, path)]
    while stack:
        node, path = stack.pop()
        if isinstance(node, int | float) and not isinstance(node, bool) and (
                not math.isfinite(node) or abs(node) > MAX_MAGNITUDE):
            return path, node
        if isinstance(node, dict):
            stack += [(v, f"{path}.{k}" if path else str(k)) for k, v in node.items()]
        elif isinstance(node, list):
            stack += [(v, f"{path}.{i}") for i, v in enumerate(node)]
    return None


def check_summary(run: Run) -> None:
    """Refuse a summary the gate cannot trust (see the module docstring)."""
    s = run.summary
    if not isinstance(s.get("complete"), bool):
        raise _bad(run, "complete", s.get("complete"), "true or false (a JSON boolean)")
    bad = _first_non_finite(s, "")
    if bad is not None:
        raise _bad(run, bad[0], bad[1], f"a finite number below 2^{MAX_MAGNITUDE.bit_length() - 1} in magnitude")
    failures = s.get("failures", {})
    if not isinstance(failures, dict):
        raise _bad(run, "failures", failures, "a mapping of failure cause to count")
    counts = [(k, s[k]) for k in COUNTS if k in s] + [(f"failures.{k}", v) for k, v in failures.items()]
    for name, v in counts:
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise _bad(run, name, v, "a non-negative integer count")
    for m in METRICS:
        node: object = s
        for key in m.path:
            node = node.get(key) if isinstance(node, dict) else None
        if node is None or isinstance(node, dict) and m.id == "failures":
            continue
        if isinstance(node, bool) or not isinstance(node, int | float) or node < 0:
            raise _bad(run, ".".join(m.path), node, "a non-negative number or null")
    _check_consistent(run, s, failures)


def _check_consistent(run: Run, s: dict[str, Any], failures: dict[str, Any]) -> None:
    """Counts that must add up (a hand-edited or truncated summary does not): ok + failed = total, the failure
    causes sum to the failed, an attainment is a share."""
    total, ok, failed = (s.get(k) for k in ("requests_total", "requests_ok", "requests_failed"))
    if total is not None and ok is not None and failed is not None and ok + failed != total:
        raise _bad(run, "requests_total", total, f"requests_ok + requests_failed = {ok} + {failed} = {ok + failed}")
    if failed is not None and failures and sum(failures.values()) != failed:
        raise _bad(run, "requests_failed", failed, f"the sum of failures.* = {sum(failures.values())}")
    good, thru = s.get("goodput_rps"), s.get("throughput_rps")
    if isinstance(good, int | float) and isinstance(thru, int | float) and good > thru * (1 + 1e-9) + 1e-9:
        raise _bad(run, "goodput_rps", good, f"at most throughput_rps {thru:g} (goodput counts served requests "
                   "within the SLO)")
    att = s.get("slo_attainment")
    for key, share in (att.items() if isinstance(att, dict) else ()):
        if isinstance(share, int | float) and not isinstance(share, bool) and not 0.0 <= share <= 1.0:
            raise _bad(run, f"slo_attainment.{key}", share, "a share from 0 to 1")
