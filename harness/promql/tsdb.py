"""An in-memory time-series database at virtual time, for the PromQL engine.

The simulator appends what a real Prometheus would scrape: one sample per
series per scrape, at the scrape's virtual time, in milliseconds as
Prometheus stores them (the engine's window arithmetic is integer ms, so the
answers match a real server's to the bit). Series are keyed by their full
label set (``__name__`` included) and indexed by metric name, the matcher
every real query carries. Retention is bounded: samples older than
``retention_s`` behind the newest append are dropped, so a long run keeps
constant memory. A series that disappears (pod deleted) can be ended with a
staleness marker, as Prometheus writes one when a target stops exposing it.
"""
from __future__ import annotations

import struct
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from scalearena.harness.promql.regex import label_match
from scalearena.harness.promql.values import NAME, Labels, make_labels

# Prometheus' staleness marker: a NaN with this exact bit pattern (model/value/value.go StaleNaN).
STALE_NAN_BITS = 0x7FF0000000000002
STALE_NAN: float = struct.unpack("<d", struct.pack("<Q", STALE_NAN_BITS))[0]


def is_stale(v: float) -> bool:
    return v != v and struct.unpack("<Q", struct.pack("<d", v))[0] == STALE_NAN_BITS


def to_ms(seconds: float) -> int:
    return round(seconds * 1000)




@dataclass(frozen=True, slots=True)
class LabelMatcher:
    """One label matcher (=, !=, =~, !~); an absent label matches as the empty string."""

    name: str
    op: str
    value: str

    def matches(self, labels: Mapping[str, str]) -> bool:
        v = labels.get(self.name, "")
        if self.op == "=":
            return v == self.value
        if self.op == "!=":
            return v != self.value
        hit = label_match(self.value, v)  # RE2, anchored as Prometheus does (regex.py)
        return hit if self.op == "=~" else not hit


@dataclass(slots=True)
class StoredSeries:
    labels: Labels
    label_map: dict[str, str]
    ts: list[int] = field(default_factory=list)
    vals: list[float] = field(default_factory=list)

    def window(self, lo: int, hi: int, *, left_open: bool) -> tuple[list[int], list[float]]:
        """Samples with lo <= t <= hi (lo < t when left_open), staleness markers removed."""
        i = bisect_right(self.ts, lo) if left_open else bisect_left(self.ts, lo)
        j = bisect_right(self.ts, hi)
        ts, vals = self.ts[i:j], self.vals[i:j]
        if any(v != v for v in vals):
            keep = [k for k, v in enumerate(vals) if not is_stale(v)]
            ts, vals = [ts[k] for k in keep], [vals[k] for k in keep]
        return ts, vals

    def latest(self, lo: int, hi: int, *, left_open: bool) -> tuple[int, float] | None:
        """The newest sample at or before hi, if it is not older than lo and not a staleness marker."""
        j = bisect_right(self.ts, hi) - 1
        if j < 0:
            return None
        t = self.ts[j]
        if t < lo or (left_open and t == lo):
            return None
        v = self.vals[j]
        if v != v and is_stale(v):
            return None
        return t, v


class TSDB:
    """Series by label set, samples in time order, bounded retention."""

    def __init__(self, retention_s: float = 3600.0) -> None:
        self.retention_ms = to_ms(retention_s)
        self._series: dict[Labels, StoredSeries] = {}
        self._by_name: dict[str, list[StoredSeries]] = {}
        self.newest_ms = 0
        self._appends_since_trim = 0
        self._selections: dict[tuple[LabelMatcher, ...], list[StoredSeries]] = {}  # valid until the series set changes

    def __len__(self) -> int:
        return len(self._series)

    def append(self, name: str, labels: Mapping[str, str], t_s: float, value: float) -> None:
        """Add one sample at virtual time t_s (seconds); a sample at the series' last time replaces it."""
        self.append_ms(make_labels(name, labels), to_ms(t_s), float(value))

    def append_ms(self, key: Labels, t: int, value: float) -> None:
        s = self._series.get(key)
        if s is None:
            s = StoredSeries(key, dict(key))
            self._series[key] = s
            self._by_name.setdefault(s.label_map.get(NAME, ""), []).append(s)
            self._selections.clear()
        if s.ts and t <= s.ts[-1]:
            if t < s.ts[-1]:
                raise ValueError(f"out-of-order sample for {key}: {t} ms after {s.ts[-1]} ms")
            s.vals[-1] = value
            return
        s.ts.append(t)
        s.vals.append(value)
        if t > self.newest_ms:
            self.newest_ms = t
        self._appends_since_trim += 1
        if self._appends_since_trim >= 4096:
            self.trim()

    def mark_stale(self, name: str, labels: Mapping[str, str], t_s: float) -> None:
        """End a series the way Prometheus does when a target stops exposing it."""
        key = make_labels(name, labels)
        if key in self._series:
            self.append_ms(key, to_ms(t_s), STALE_NAN)

    def mark_stale_key(self, key: Labels, t: int) -> None:
        """A staleness marker at t (ms) for an existing series whose last sample is older."""
        s = self._series.get(key)
        if s is not None and s.ts and s.ts[-1] < t and not is_stale(s.vals[-1]):
            self.append_ms(key, t, STALE_NAN)

    def trim(self) -> None:
        """Drop samples older than the retention behind the newest sample, and emptied series."""
        self._appends_since_trim = 0
        cutoff = self.newest_ms - self.retention_ms
        for key, s in list(self._series.items()):
            i = bisect_left(s.ts, cutoff)
            if i:
                del s.ts[:i], s.vals[:i]
            if not s.ts:
                del self._series[key]
                self._by_name[s.label_map.get(NAME, "")].remove(s)
                self._selections.clear()

    def select(self, matchers: Iterable[LabelMatcher]) -> list[StoredSeries]:
        """Series matching every matcher, in label-set order (Prometheus returns them sorted)."""
        ms = tuple(matchers)
        hit = self._selections.get(ms)
        if hit is not None:
            return hit
        name = next((m.value for m in ms if m.name == NAME and m.op == "="), None)
        pool: Iterable[StoredSeries] = self._by_name.get(name, []) if name is not None else self._series.values()
        out = [s for s in pool if all(m.matches(s.label_map) for m in ms)]
        out.sort(key=lambda s: s.labels)
        if len(self._selections) > 10_000:
            self._selections.clear()
        self._selections[ms] = out
        return out

    def series(self) -> list[StoredSeries]:
        return sorted(self._series.values(), key=lambda s: s.labels)

