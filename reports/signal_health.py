"""Signals an autoscaler never received: the end-of-run check that a policy was not silently blind.

A user's HPA whose PromQL matches no series (``namespace: llm-d`` where the run exports
``scalearena``), a KEDA trigger whose query is empty (``ignoreNullValues`` turns that into 0),
``multimetric`` on an engine that exports no GPU utilization: each runs to the end "ok" at its
minimum, and the only trace is in its decisions. This module reads those decisions back and
counts, per autoscaler and signal, the reads that carried a value from a series.

What counts as a read, by the reason each controller writes (controllers/):

* ``metric`` / ``metric_invalid`` (the HPA engine: presets, user objects, KEDA's generated HPA):
  one read of ``values.metric``; invalid when the rule is ``metric_invalid``.
* ``trigger`` / ``trigger_error`` (KEDA's scalers): one read per ``values.triggers`` entry;
  invalid when its ``value`` is None, *unmatched* when ``matched`` is False (the query returned
  no series, or NaN/Inf, and the value used was 0).
* ``signals`` (multimetric): one read each of ``gpu_raw`` and ``kv_mean``; invalid when None.

A signal is *missing* when it was read at least once and never valid. ``summary.json`` carries
the counts under ``signals`` and the missing ones under ``signals_missing``; the run and suite
pages put them at the top. A signal that had the same value in every read (``constant``: an
llm-d queue recipe behind a router that rejects instead of queueing reads 0 all run) is not
missing, but where the autoscaler also never scaled the run page says so (``flat_text``).
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

MULTIMETRIC_SIGNALS = ("gpu_raw", "kv_mean")  # the per-pod readings it cannot do without


@dataclass
class _Tally:
    reads: int = 0
    valid: int = 0
    unmatched: int = 0
    last_error: str = ""
    first: float | None = None  # the first valid value
    varied: bool = False  # a later valid value differed from it

    def add(self, ok: bool, unmatched: bool = False, error: str = "", value: Any = None) -> None:
        self.reads += 1
        self.valid += ok and not unmatched
        self.unmatched += unmatched
        if error:
            self.last_error = error
        if ok and not unmatched and isinstance(value, int | float):
            if self.first is None:
                self.first = float(value)
            elif float(value) != self.first:
                self.varied = True


def _reads(reason: dict[str, Any]) -> Iterable[tuple[str, bool, bool, str, Any]]:
    """(signal, ok, unmatched, error, value) for each signal one reason read."""
    rule, values = reason.get("rule"), reason.get("values") or {}
    if rule in ("metric", "metric_invalid") and isinstance(values.get("metric"), str):
        ok = rule == "metric"
        yield values["metric"], ok, False, "" if ok else str(reason.get("message", "")), values.get("usage")
    elif rule in ("trigger", "trigger_error") and isinstance(values.get("triggers"), dict):
        for label, t in values["triggers"].items():
            if not isinstance(t, dict):
                continue
            failed = t.get("value") is None
            unmatched = not failed and t.get("matched") is False
            error = (str(reason.get("message", "")) if failed
                     else f"query {t.get('query')!r} matched no series (read as 0)" if unmatched else "")
            yield str(label), not failed, unmatched, error, t.get("value")
    elif rule == "signals":
        for name in MULTIMETRIC_SIGNALS:
            if name in values:
                ok = values[name] is not None
                yield name, ok, False, "" if ok else f"{name}: no pod reported a value", values[name]


def signal_health(decisions: Iterable[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Per (autoscaler, signal): reads, valid reads, reads of no series and ``constant`` (the one value every
    valid read had, else None); and the missing ones (read at least once, never valid), each with the last
    error seen."""
    tallies: dict[tuple[str, str], _Tally] = {}
    for d in decisions:
        who = str(d.get("autoscaler", ""))
        for reason in d.get("reasons") or ():
            for signal, ok, unmatched, error, value in _reads(reason):
                tallies.setdefault((who, signal), _Tally()).add(ok, unmatched, error, value)
    rows: list[dict[str, Any]] = []
    missing: list[dict[str, Any]] = []
    for (who, signal), t in sorted(tallies.items()):
        rows.append({"autoscaler": who, "signal": signal, "reads": t.reads, "valid": t.valid,
                     "unmatched": t.unmatched, "constant": None if t.first is None or t.varied else t.first})
        if t.reads and not t.valid:
            missing.append({**rows[-1], "why": t.last_error})
    return rows, missing


def missing_text(m: dict[str, Any]) -> str:
    """One line for a page banner: which signal of which autoscaler never had a value, and why."""
    never = "matched no series" if m.get("unmatched") == m.get("reads") else "never had a value"
    why = f": {m['why']}" if m.get("why") else ""
    return f"{m['autoscaler']} read {m['signal']} {m['reads']} times and it {never}{why}"


def blind_text(m: dict[str, Any]) -> str:
    """The end-of-run warning: the same line, saying what it means for the run's result."""
    return (f"{m['autoscaler']} never received a value for {m['signal']} ({m['reads']} reads); it scaled "
            f"without that signal (reason: {m.get('why') or 'none given'})")


def flat_rows(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """Signals that read one value all run, when the autoscaler never scaled: the policy could not have
    reacted to anything, which is worth a line even though the signal exists."""
    if summary.get("scaling_actions"):
        return []
    return [r for r in summary.get("signals") or () if r.get("constant") is not None and r.get("valid", 0) > 1]


def flat_line(r: dict[str, Any]) -> str:
    return f"{r['autoscaler']} read {r['signal']} as {r['constant']:g} in all {r['valid']} reads and never scaled"


def flat_text(summary: dict[str, Any]) -> list[str]:
    """``flat_rows`` as the run page prints them."""
    return [flat_line(r) for r in flat_rows(summary)]


def blind_lines(summary: dict[str, Any]) -> list[tuple[str, str]]:
    """(signal, line) for every signal of a run that was missing or flat (the suite page's box)."""
    return ([(str(m.get("signal")), missing_text(m)) for m in summary.get("signals_missing") or ()]
            + [(str(r.get("signal")), flat_line(r)) for r in flat_rows(summary)])
