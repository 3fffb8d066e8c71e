"""Prefix caching in the engine (vLLM automatic prefix caching over hash chains; arithmetic in comments)."""
from __future__ import annotations

import pytest

from scalearena.harness.engine.core import Engine
from scalearena.harness.engine.prefix_cache import chain_keys
from scalearena.workloads.base import RequestSpec, prefix_units
from tests.unit.test_engine import const, run_all


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
