"""Prefix caching in the engine (vLLM automatic prefix caching over hash chains; arithmetic in comments)."""
from __future__ import annotations

import pytest

from scalearena.harness.sim.engine.core import Engine
from scalearena.harness.sim.engine.prefix_cache import chain_keys
from scalearena.workloads.base import RequestSpec, prefix_units
from tests.unit.harness.sim.test_engine import const, run_all


def ttft(e: Engine, t: float, rid: int, prompt: int, units) -> float:
    e.submit(t, rid, prompt, 1, prefix=units)
    evs = run_all(e)
    return next(ev.t for ev in evs if ev.rid == rid and ev.kind == "first_token") - t


def test_hits_skip_prefill_of_cached_full_blocks_and_count_tokens() -> None:
    # constant model, 1 ms per prompt token: A (1000 tokens: units 512 + 488) prefills all of it -> 1 s.
    # B shares the first unit: 512 // 16 = 32 full blocks = 512 tokens cached -> TTFT 488 ms.
    # C repeats A: 32 + 488 // 16 = 30 blocks = 992 tokens cached -> 8 ms.
    e = Engine(const(8, prefill_time_per_token_ms=1.0), 1000, 16, 8, enable_prefix_caching=True)
    assert ttft(e, 0.0, 1, 1000, ((7, 512), (8, 488))) == pytest.approx(1.0)
    assert ttft(e, 10.0, 2, 1000, ((7, 512), (9, 488))) == pytest.approx(0.488)
    assert ttft(e, 20.0, 3, 1000, ((7, 512), (8, 488))) == pytest.approx(0.008)
    m = e.metrics(30.0)
    assert (m.prefix_cache_queries, m.prefix_cache_hits) == (3000, 512 + 992)
    # the same requests without caching: every prefill is whole
    off = Engine(const(8, prefill_time_per_token_ms=1.0), 1000, 16, 8)
    assert ttft(off, 0.0, 1, 1000, ((7, 512), (8, 488))) == pytest.approx(1.0)
    assert ttft(off, 10.0, 3, 1000, ((7, 512), (8, 488))) == pytest.approx(1.0)
    assert off.metrics(30.0).prefix_cache_hits == 0


def test_whole_prompt_cached_still_computes_the_last_token() -> None:
    # 512-token prompt, one unit of 32 full blocks: the repeat has 512 tokens cached, capped at 511 -> 1 ms
    e = Engine(const(8, prefill_time_per_token_ms=1.0), 1000, 16, 8, enable_prefix_caching=True)
    ttft(e, 0.0, 1, 512, ((5, 512),))
    assert ttft(e, 10.0, 2, 512, ((5, 512),)) == pytest.approx(0.001)


def test_unreferenced_units_evicted_lru_when_blocks_are_needed() -> None:
    # 100 blocks of 16. A (units 1, 2: 32 blocks each) finishes -> 64 unreferenced blocks, tail (2) older.
    # B (units 3, 4; needs 64 blocks) leaves 100 - 64 = 36 free -> unit 2 is evicted (64 -> 32 <= 36).
    # C = (1, 5): unit 1 still cached -> 512 tokens hit (TTFT 512 ms); D = (1, 2): only unit 1 hits -> 512 ms.
    e = Engine(const(8, prefill_time_per_token_ms=1.0), 100, 16, 8, enable_prefix_caching=True)
    ttft(e, 0.0, 1, 1024, ((1, 512), (2, 512)))
    assert ttft(e, 10.0, 2, 1024, ((3, 512), (4, 512))) == pytest.approx(1.024)
    assert ttft(e, 20.0, 3, 1024, ((1, 512), (5, 512))) == pytest.approx(0.512)
    assert ttft(e, 30.0, 4, 1024, ((1, 512), (2, 512))) == pytest.approx(0.512)


def test_chain_semantics_a_later_unit_needs_its_prefix() -> None:
    # unit hashes are chained: (9, 512) after (1, 512) is not the same block as (9, 512) first
    e = Engine(const(8, prefill_time_per_token_ms=1.0), 1000, 16, 8, enable_prefix_caching=True)
    ttft(e, 0.0, 1, 1024, ((1, 512), (9, 512)))
    assert ttft(e, 10.0, 2, 1024, ((9, 512), (1, 512))) == pytest.approx(1.024)


def test_request_prefix_units_from_trace_hashes_and_groups() -> None:
    # Mooncake: one hash per 512 tokens; a 1100-token prompt has units 512, 512, 76
    spec = RequestSpec(0, "m", 0.0, 1100, 10, hash_ids=(4, 5, 6))
    assert prefix_units(spec) == ((4, 512), (5, 512), (6, 76))
    # a shared-prefix group: one unit of the prefix length, keyed apart from trace hashes
    assert prefix_units(RequestSpec(1, "m", 0.0, 900, 10, prefix_group=3, prefix_tokens=600)) == ((-5, 600),)
    # groups 0 and 1 stay apart in the chained keys (ids -2, -3; -1 would hash like -2 in Python)
    g0, g1 = (prefix_units(RequestSpec(3, "m", 0.0, 900, 10, prefix_group=g, prefix_tokens=600)) for g in (0, 1))
    assert chain_keys(g0, 16)[0] != chain_keys(g1, 16)[0]
    assert prefix_units(RequestSpec(2, "m", 0.0, 900, 10)) == ()


def test_a_shared_prefix_is_held_once_in_kv_memory() -> None:
    # 100 blocks of 16 tokens. A: 1040-token prompt (units 512 + 512 + 16 -> 32 + 32 + 1 full blocks),
    # 100 output tokens at 10 ms: first token at 1.04 s, done at 1.04 + 99 x 0.01 = 2.03 s. At 1.5 s A
    # has 1 + 46 = 47 tokens: 1087 tokens = 68 blocks. B has the same prompt. Without sharing B needs its
    # own 65 blocks: 68 + 65 > 100, so it waits for A. With sharing B's 65 blocks are A's cached ones:
    # B allocates nothing to start and both run at once.
    units = ((1, 512), (2, 512), (3, 16))
    timing = {"prefill_time_per_token_ms": 1.0, "itl_ms": 10.0}
    on = Engine(const(8, **timing), 100, 16, 8, enable_prefix_caching=True)
    on.submit(0.0, 1, 1040, 100, prefix=units)
    on.advance(1.5)
    assert on.used_blocks() == 68  # 65 prompt blocks (the cache's now) + 3 of A's own
    on.submit(1.5, 2, 1040, 100, prefix=units)
    assert (on.num_running, on.num_waiting) == (2, 0)
    assert on.used_blocks() == 68  # B's prefill owns no block: all 65 prompt blocks are cached
    evs = run_all(on)
    first_b = next(ev.t for ev in evs if ev.rid == 2 and ev.kind == "first_token")
    assert first_b == pytest.approx(1.5 + 0.001)  # 1039 tokens cached, the last one computed: 1 ms
    assert on.used_blocks() == 0 and on.cache is not None and on.cache.referenced_blocks == 0
    off = Engine(const(8, **timing), 100, 16, 8)
    off.submit(0.0, 1, 1040, 100, prefix=units)
    off.advance(1.5)
    off.submit(1.5, 2, 1040, 100, prefix=units)
    assert (off.num_running, off.num_waiting) == (1, 1)  # 68 + 65 > 100
    evs = run_all(off)
    # B is admitted when A ends (2.03 s) and prefills all 1040 tokens: first token at 2.03 + 1.04
    assert next(ev.t for ev in evs if ev.rid == 2 and ev.kind == "first_token") == pytest.approx(3.07)


def test_kv_accounting_matches_a_recount_under_random_traffic() -> None:
    from hypothesis import given, settings, strategies as st

    @settings(max_examples=60, deadline=None)
    @given(st.lists(st.tuples(st.floats(0, 2), st.integers(1, 4), st.integers(1, 3), st.integers(1, 600)),
                    min_size=1, max_size=25))
    def check(reqs: list[tuple[float, int, int, int]]) -> None:
        # requests over a few shared units; after every step the engine's block count equals an
        # independent recount (private blocks of each request + every referenced unit once) and never
        # exceeds the cache
        e = Engine(const(8, prefill_time_per_token_ms=0.5, itl_ms=5.0), 120, 16, 8, enable_prefix_caching=True)
        t = 0.0
        for rid, (dt, head, n_units, out) in enumerate(sorted(reqs)):
            t = max(t, dt)
            units = tuple((head * 10 + i, 256) for i in range(n_units)) + ((1000 + rid, 40),)
            e.submit(t, rid, 256 * n_units + 40, out, prefix=units)
            e.advance(t)
            recount(e)
        while e.next_event_time() != float("inf"):
            e.advance(e.next_event_time())
            recount(e)
        assert e.used_blocks() == 0 and e.cache.referenced_blocks == 0

    check()


def recount(e: Engine) -> None:
    cache = e.cache
    assert cache is not None
    held = {k for s in e.running.values() for k in s.held_keys}
    shared = sum(cache.blocks[k] for k in held)
    assert shared == cache.referenced_blocks
    private = 0
    for s in e.running.values():
        if s.state == 2:  # DECODE: blocks of prompt + generated, less its cached units
            private += (int(s.prompt + e.V - s.v0 + 1e-6) + 15) // 16 - sum(cache.blocks[k] for k in s.held_keys)
        else:
            private += s.held
    assert e.used_blocks() == private + shared <= 120
