"""Turn a scenario's ``workload`` section into the run's request stream.

``iter_requests`` is the one implementation; ``build_requests`` is the same
sequence as a list. Both merge every workload of the scenario (one per model
when several models share a GPU budget), order by ``(arrival_s, model)`` —
ties between two workloads of the same model keep the workload order — and
number the requests 0..n-1 in that order. Arrivals lie in ``[0, duration_s)``.

Seeding. Each workload ``i`` gets four independent numpy generators, one per
stream: arrivals, input lengths, output lengths and prefix groups, each from
``SeedSequence(scenario.seed, spawn_key=(i, stream))``. The key is fixed per
(workload, stream), so changing the output-length distribution, adding a
second workload or turning on shared prefixes never moves an arrival. Trace
replay draws its thinning / duplication decisions from the arrival stream.
"""
from __future__ import annotations

import heapq
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from itertools import chain, repeat
from typing import TYPE_CHECKING, Generic, NamedTuple, Protocol, TypeVar

import numpy as np

from scalearena.workloads.arrivals import CHUNK, arrival_chunks
from scalearena.workloads.base import RequestSpec
from scalearena.workloads.lengths import token_length_chunks, token_lengths
from scalearena.workloads.spec import SharedPrefix, TraceArrivals, WorkloadSpec

if TYPE_CHECKING:
    from scalearena.workloads.traces.base import TraceStats

class Scenario(Protocol):
    """What request generation reads of a scenario (harness.config.scenario.Scenario satisfies it);
    a protocol so that workloads/ need not import the harness, which imports workloads/."""

    @property
    def workloads(self) -> Sequence[WorkloadSpec]: ...
    @property
    def duration_s(self) -> float: ...
    @property
    def seed(self) -> int: ...
    def model_of(self, workload: WorkloadSpec) -> str: ...


_new = tuple.__new__  # a named tuple from its values in field order, in C (its __new__ is a Python lambda)

# stream numbers in the seed's spawn key; never renumber (it would change every seeded run)
ARRIVALS, INPUT_TOKENS, OUTPUT_TOKENS, PREFIX_GROUPS = 0, 1, 2, 3


def stream_rng(seed: int, workload_index: int, stream: int) -> np.random.Generator:
    """The generator of one stream of one workload (see the module docstring)."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed, spawn_key=(workload_index, stream))))


class Draft(NamedTuple):
    """A request before it has a run-wide id (what one workload's stream yields): ``RequestSpec``'s fields
    after ``request_id``, in its order, so that the spec is ``(request_id, *draft)``."""

    model: str
    arrival_s: float
    input_tokens: int
    output_tokens: int
    prefix_group: int = -1
    prefix_tokens: int = 0
    hash_ids: tuple[int, ...] = ()
    tenant: str = ""
    priority: int = 0


@dataclass
class WorkloadStats:
    """What happened while generating, per workload (filled in as the stream is read).

    ``traces[i]`` is the ``TraceStats`` of workload ``i`` when it replays a trace
    (rows read, kept, thinned, duplicated, clipped), else ``None``.
    """

    requests: list[int] = field(default_factory=list)
    traces: list[TraceStats | None] = field(default_factory=list)

    @property
    def clipped(self) -> int:
        """Requests whose tokens were clipped to max_model_len, over all traces."""
        return sum(t.clipped for t in self.traces if t is not None)


def _prefix_chunks(sp: SharedPrefix, rng: np.random.Generator) -> Iterator[list[int]]:
    """Prefix group per request (-1: none), ``CHUNK`` at a time; one uniform and one group draw per request."""
    while True:
        carry = rng.random(CHUNK) < sp.fraction
        group = rng.integers(0, sp.groups, size=CHUNK)
        yield np.where(carry, group, -1).tolist()


def _prefixes(sp: SharedPrefix, rng: np.random.Generator) -> Iterator[int]:
    return chain.from_iterable(_prefix_chunks(sp, rng))


_T = TypeVar("_T")


class _Taker(Generic[_T]):
    """An endless stream of values that comes in chunks, read ``n`` values at a time. Each stream has
    its own generator and draws fixed chunks of ``CHUNK``, so how it is read never changes a value."""

    def __init__(self, chunks: Iterator[list[_T]]) -> None:
        self._chunks = chunks
        self._buf: list[_T] = []
        self._pos = 0

    def take(self, n: int) -> list[_T]:
        pos, buf = self._pos, self._buf
        if pos + n <= len(buf):
            self._pos = pos + n
            return buf[pos:pos + n]
        out = buf[pos:]
        while True:
            buf = next(self._chunks)
            need = n - len(out)
            if need <= len(buf):
                out += buf[:need]
                self._buf, self._pos = buf, need
                return out
            out += buf


class _Columns(NamedTuple):
    """A run of one workload's requests, column by column (a chunk of its arrivals)."""

    arrival_s: list[float]
    input_tokens: list[int]
    output_tokens: list[int]
    prefix_group: list[int] | None  # None: no shared prefix (-1 each)
    prefix_tokens: list[int] | None  # None: 0 each


def _synthetic_columns(w: WorkloadSpec, duration_s: float, seed: int, i: int) -> Iterator[_Columns]:
    """One synthetic workload's requests a chunk of arrivals at a time: each arrival takes the next
    input length, output length and prefix group of their streams, as a request at a time would."""
    assert w.input_tokens is not None and w.output_tokens is not None  # enforced by WorkloadSpec
    chunks = arrival_chunks(w.arrivals, duration_s, stream_rng(seed, i, ARRIVALS))
    ins = _Taker(token_length_chunks(w.input_tokens, stream_rng(seed, i, INPUT_TOKENS)))
    outs = _Taker(token_length_chunks(w.output_tokens, stream_rng(seed, i, OUTPUT_TOKENS)))
    sp = w.shared_prefix
    groups = _Taker(_prefix_chunks(sp, stream_rng(seed, i, PREFIX_GROUPS))) if sp else None
    for times in chunks:
        n_in, n_out = ins.take(len(times)), outs.take(len(times))
        if groups is None or sp is None:
            yield _Columns(times, n_in, n_out, None, None)
            continue
        g = groups.take(len(times))
        # the shared prefix is part of the prompt, so it never exceeds the prompt
        ptoks = [min(sp.prefix_tokens, k) if j >= 0 else 0 for j, k in zip(g, n_in, strict=True)]
        yield _Columns(times, n_in, n_out, g, ptoks)


def _tail(c: _Columns) -> tuple[Iterator[int], Iterator[int], Iterator[tuple[int, ...]], Iterator[str], Iterator[int]]:
    """The columns after the output tokens (prefix group, prefix tokens, hash ids, tenant, priority)."""
    return (repeat(-1) if c.prefix_group is None else iter(c.prefix_group),
            repeat(0) if c.prefix_tokens is None else iter(c.prefix_tokens), repeat(()), repeat(""), repeat(0))


def _synthetic(w: WorkloadSpec, model: str, duration_s: float, seed: int, i: int) -> Iterator[Draft]:
    return chain.from_iterable(  # Draft(model, t, n_in, n_out, ...) per request, built in C
        map(_new, repeat(Draft), zip(repeat(model), c.arrival_s, c.input_tokens, c.output_tokens, *_tail(c)))
        for c in _synthetic_columns(w, duration_s, seed, i))


def _traced(
    w: WorkloadSpec, model: str, duration_s: float, seed: int, i: int, stats: TraceStats
) -> Iterator[Draft]:
    from scalearena.workloads.traces.replay import (
        replay,  # local: keeps the synthetic path free of trace readers
    )

    assert isinstance(w.arrivals, TraceArrivals)
    rows = replay(w.arrivals, duration_s, stream_rng(seed, i, ARRIVALS), stats)
    ins = token_lengths(w.input_tokens, stream_rng(seed, i, INPUT_TOKENS)) if w.input_tokens else None
    outs = token_lengths(w.output_tokens, stream_rng(seed, i, OUTPUT_TOKENS)) if w.output_tokens else None
    sp = w.shared_prefix
    groups = _prefixes(sp, stream_rng(seed, i, PREFIX_GROUPS)) if sp else None
    for r in rows:
        n_in = next(ins) if ins is not None else r.input_tokens
        n_out = next(outs) if outs is not None else r.output_tokens
        group, ptoks = -1, 0
        if groups is not None:
            g = next(groups)
            if not r.hash_ids and g >= 0:  # a prefix the trace names (hash_ids) wins over a synthetic one
                group, ptoks = g, min(sp.prefix_tokens, n_in)  # type: ignore[union-attr]
        yield Draft(model, r.arrival_s, n_in, n_out, group, ptoks, r.hash_ids)


def _tag(i: int, drafts: Iterator[Draft]) -> Iterator[tuple[float, str, int, Draft]]:
    """Merge key (arrival, model, workload index) for one workload's drafts."""
    for d in drafts:
        yield d.arrival_s, d.model, i, d


def iter_drafts(scenario: Scenario, stats: WorkloadStats | None = None) -> Iterator[Draft]:
    """Every workload's drafts merged by (arrival_s, model); ties keep workload order."""
    from scalearena.workloads.traces.base import TraceStats

    streams: list[Iterator[Draft]] = []
    for i, w in enumerate(scenario.workloads):
        model = scenario.model_of(w)
        if isinstance(w.arrivals, TraceArrivals):
            ts = TraceStats(path=w.arrivals.path)
            if stats is not None:
                stats.traces.append(ts)
            streams.append(_traced(w, model, scenario.duration_s, scenario.seed, i, ts))
        else:
            if stats is not None:
                stats.traces.append(None)
            streams.append(_synthetic(w, model, scenario.duration_s, scenario.seed, i))
        if stats is not None:
            stats.requests.append(0)
    tags = [(w.tenant, w.priority) for w in scenario.workloads]
    if len(streams) == 1 and tags[0] == ("", 0):  # one untagged workload: its drafts as they are
        if stats is None:
            yield from streams[0]
            return
        counts = stats.requests
        for d in streams[0]:
            counts[0] += 1
            yield d
        return
    if len(streams) == 1:
        merged: Iterator[tuple[int, Draft]] = zip(repeat(0), streams[0])
    else:
        tagged = [_tag(i, s) for i, s in enumerate(streams)]
        merged = ((x[2], x[3]) for x in heapq.merge(*tagged, key=lambda x: (x[0], x[1], x[2])))
    for i, d in merged:
        if tags[i] != ("", 0):
            d = d._replace(tenant=tags[i][0], priority=tags[i][1])
        if stats is not None:
            stats.requests[i] += 1
        yield d


def iter_requests(scenario: Scenario, stats: WorkloadStats | None = None) -> Iterator[RequestSpec]:
    """The scenario's requests, streamed in send order with ids 0..n-1.

    Pass a ``WorkloadStats`` to learn, once the stream is consumed, how many
    trace rows were thinned, duplicated or clipped to max_model_len.

    One untagged synthetic workload (the common case) is built a chunk of
    arrivals at a time (``_one_synthetic``); every other scenario goes through
    the merge of ``iter_drafts``. Both give the same requests.
    """
    ws = scenario.workloads
    if len(ws) == 1 and not isinstance(ws[0].arrivals, TraceArrivals) and (ws[0].tenant, ws[0].priority) == ("", 0):
        return chain.from_iterable(_one_synthetic(scenario, stats))
    return _numbered(iter_drafts(scenario, stats))


def _one_synthetic(scenario: Scenario, stats: WorkloadStats | None) -> Iterator[Iterator[RequestSpec]]:
    """The requests of a scenario of one untagged synthetic workload, a chunk of arrivals at a time, each
    ``RequestSpec`` built in C from its columns (no generator frame per request)."""
    w = scenario.workloads[0]
    model = scenario.model_of(w)
    if stats is not None:
        stats.traces.append(None)
        stats.requests.append(0)
    first = 0
    for c in _synthetic_columns(w, scenario.duration_s, scenario.seed, 0):
        n = len(c.arrival_s)
        if stats is not None:
            stats.requests[0] += n
        yield map(_new, repeat(RequestSpec), zip(range(first, first + n), repeat(model), c.arrival_s,
                                                 c.input_tokens, c.output_tokens, *_tail(c)))
        first += n


def _numbered(drafts: Iterator[Draft]) -> Iterator[RequestSpec]:
    for i, d in enumerate(drafts):
        yield _new(RequestSpec, (i, *d))  # RequestSpec(i, d.model, d.arrival_s, ...) without a Python frame


def build_requests(scenario: Scenario, stats: WorkloadStats | None = None) -> list[RequestSpec]:
    """``list(iter_requests(scenario))``: the whole run's requests in send order."""
    return list(iter_requests(scenario, stats))
