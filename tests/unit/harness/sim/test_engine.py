"""Engine state machine: hand-worked cases (arithmetic in the comments)."""
from __future__ import annotations

import pytest

from scalearena.harness.sim.engine.core import Engine, SubmitResult
from tests.unit.enginekit import const, run_all


def test_single_request_ttft_and_e2e_by_formula() -> None:
    # time-to-first-token 0 -> TTFT = prefill-overhead + prompt x per-token = 10 + 1000 x 0.01 = 20 ms
    # e2e = TTFT + (100 - 1) x ITL = 0.020 + 99 x 0.020 = 2.000 s
    e = Engine(const(8, prefill_overhead_ms=10, prefill_time_per_token_ms=0.01, itl_ms=20), 1024, 16, 8)
    assert e.submit(0.0, 1, 1000, 100) is SubmitResult.ACCEPTED
    evs = run_all(e)
    assert [(x.kind, x.rid) for x in evs] == [("first_token", 1), ("finished", 1)]
    assert evs[0].t == pytest.approx(0.020)
    assert evs[1].t == pytest.approx(2.000)
    assert evs[1].tokens == 100


def test_time_to_first_token_set_overrides_prefill_terms() -> None:
    # llm-d-inference-sim: a non-zero time-to-first-token is used alone: TTFT = 150 ms
    # (prefill-overhead 10 and 1000 x 0.01 per token are ignored); e2e = 0.150 + 9 x 0.005 = 0.195 s
    e = Engine(const(8, ttft_ms=150, prefill_overhead_ms=10, prefill_time_per_token_ms=0.01, itl_ms=5), 1024)
    e.submit(0.0, 1, 1000, 10)
    evs = run_all(e)
    assert evs[0].t == pytest.approx(0.150)
    assert evs[1].t == pytest.approx(0.195)


def test_time_factor_under_load() -> None:
    # f = 3, max_num_seqs = 5. Two requests submitted at t=0.
    # first: nRunning=1 -> factor 1 -> TTFT 100 ms; second: nRunning=2 -> 1 + 2 x 1/4 = 1.5 -> 150 ms.
    # While both run the ITL is 10 ms x 1.5 = 15 ms. Request 1 decodes from 0.100: until 0.150 it has
    # made 50/15 = 3.333 tokens beyond the first; it needs 4 more for 5 tokens -> 0.150 + 0.667 x 15 ms
    # = 0.160. Then request 2 runs alone (factor 1, 10 ms): started decoding at 0.150, by 0.160 it made
    # 10/15 = 0.667 tokens; 3.333 left at 10 ms -> 0.160 + 0.0333 = 0.19333.
    e = Engine(const(5, ttft_ms=100, itl_ms=10, time_factor_under_load=3.0), 1024, 16, 5)
    e.submit(0.0, 1, 100, 5)
    e.submit(0.0, 2, 100, 5)
    evs = {(x.kind, x.rid): x.t for x in run_all(e)}
    assert evs[("first_token", 1)] == pytest.approx(0.100)
    assert evs[("first_token", 2)] == pytest.approx(0.150)
    assert evs[("finished", 1)] == pytest.approx(0.160)
    assert evs[("finished", 2)] == pytest.approx(0.160 + (4 - 10 / 15) * 0.010)


def test_paper_kv_setup_runs_three_and_queues_the_fourth() -> None:
    # 1024 blocks x 16 tokens; 5,120-token prompts need 5120 / 16 = 320 blocks each:
    # 3 x 320 = 960 <= 1024 fit, 4 x 320 = 1280 > 1024 -> the 4th waits.
    e = Engine(const(256, ttft_ms=100, itl_ms=10), 1024, 16, 256)
    for rid in range(4):
        assert e.submit(0.0, rid, 5120, 16) is SubmitResult.ACCEPTED
    m = e.metrics(0.0)
    assert (m.running, m.waiting) == (3, 1)
    assert m.kv_usage == pytest.approx(960 / 1024)
    # the 4th starts when the first three finish: 0.100 + 15 x 0.010 = 0.250; its TTFT ends 0.350
    evs = {(x.kind, x.rid): x.t for x in run_all(e)}
    assert evs[("first_token", 3)] == pytest.approx(0.350)


def test_preemption_by_recompute_sends_newest_to_front() -> None:
    # 10 blocks. Two 64-token prompts (4 blocks each) admitted; after their first token they hold
    # ceil(65/16) = 5 blocks each = 10. The 81st token of the first to need it (token 17 of output,
    # at 0.100 + 16 x 0.010 = 0.260) needs an 11th block -> the most recently admitted (rid 2) is
    # preempted with 17 tokens generated. rid 1 ends at 0.100 + 63 x 0.010 = 0.730; rid 2 re-admitted
    # (needs ceil(81/16) = 6 blocks), prefills again (100 ms) producing token 18 at 0.830, then 46 more
    # tokens: 0.830 + 0.460 = 1.290.
    e = Engine(const(8, ttft_ms=100, itl_ms=10), 10, 16, 8)
    e.submit(0.0, 1, 64, 64)
    e.submit(0.0, 2, 64, 64)
    evs = run_all(e)
    pre = [x for x in evs if x.kind == "preempted"]
    assert [(x.rid, x.tokens) for x in pre] == [(2, 17)]
    assert pre[0].t == pytest.approx(0.260)
    fin = {x.rid: x.t for x in evs if x.kind == "finished"}
    assert fin[1] == pytest.approx(0.730)
    assert fin[2] == pytest.approx(1.290)


def test_waiting_queue_limit_rejects_with_429() -> None:
    # max_num_seqs 1, queue limit 2: one runs, two wait, the 4th is rejected
    e = Engine(const(1, ttft_ms=100, itl_ms=10), 1024, 16, 1, max_waiting_queue=2)
    res = [e.submit(0.0, i, 10, 10) for i in range(4)]
    assert res == [SubmitResult.ACCEPTED] * 3 + [SubmitResult.REJECTED_FULL]


def test_default_waiting_queue_is_unbounded_like_vllm() -> None:
    # one sequence at a time, TTFT 10 ms and 1 output token: 1,500 requests at t=0 are all accepted (the old
    # llm-d-inference-sim default of 1000 would have rejected 1500 - 1 running - 1000 waiting = 499) and the
    # last finishes after 1,500 x 10 ms = 15 s
    e = Engine(const(1, ttft_ms=10), 1024, 16, 1)
    assert all(e.submit(0.0, i, 10, 1) is SubmitResult.ACCEPTED for i in range(1500))
    assert e.num_waiting == 1499
    done = [ev for ev in run_all(e, 5000) if ev.kind == "finished"]
    assert len(done) == 1500 and done[-1].t == pytest.approx(15.0)


def test_prompt_larger_than_cache_is_invalid() -> None:
    e = Engine(const(4, ttft_ms=1, itl_ms=1), 4, 16, 4)  # 64 tokens of KV
    assert e.submit(0.0, 1, 65, 1) is SubmitResult.REJECTED_INVALID


def test_prompt_plus_max_tokens_beyond_cache_is_too_long_and_never_stalls() -> None:
    # 4 blocks x 16 = 64 tokens of KV and no max_model_len: the limit defaults to 64.
    # 40 + 25 = 65 > 64 -> 400 at once (before: admitted, it outgrew the cache, was preempted and then
    # sat at the queue head for ever, stalling the request behind it). 40 + 24 = 64 fits exactly.
    e = Engine(const(4, ttft_ms=100, itl_ms=10), 4, 16, 4)
    assert e.max_model_len == 64
    assert e.submit(0.0, 1, 40, 25) is SubmitResult.REJECTED_INVALID
    assert e.submit(0.0, 2, 40, 24) is SubmitResult.ACCEPTED
    done = {ev.rid: ev.t for ev in run_all(e) if ev.kind == "finished"}
    # alone: TTFT 0.1 s then 23 more tokens at 10 ms = 0.33 s
    assert done == {2: pytest.approx(0.33)}


def test_explicit_max_model_len_counts_prompt_and_output() -> None:
    # max_model_len 100 on a 1024-token cache: 60 + 40 = 100 is accepted, 60 + 41 = 101 is not
    e = Engine(const(4, ttft_ms=1, itl_ms=1), 64, 16, 4, max_model_len=100)
    assert e.submit(0.0, 1, 60, 41) is SubmitResult.REJECTED_INVALID
    assert e.submit(0.0, 2, 60, 40) is SubmitResult.ACCEPTED
    # a max_model_len above the cache is capped by it (vLLM would refuse to start): 2 x 16 = 32 tokens
    assert Engine(const(4), 2, 16, 4, max_model_len=4096).max_model_len == 32


def test_streaming_tokens_abort_and_kill() -> None:
    # TTFT 100 ms then 10 ms per token: at 0.155 the request has 1 + floor(5.5) = 6 tokens
    e = Engine(const(4, ttft_ms=100, itl_ms=10), 1024, 16, 4)
    e.submit(0.0, 1, 10, 100)
    e.submit(0.0, 2, 10, 100)
    assert e.tokens_generated(1, 0.155) == 6
    assert e.abort(0.155, 1) == 6
    assert e.kill_all(0.2) == [(2, 11)]  # 1 + floor(10.0) tokens by 0.200
    assert e.next_event_time() == float("inf")
    assert e.metrics(0.3).running == 0


def test_metrics_busy_time_and_histograms() -> None:
    # one request, TTFT 100 ms, 10 tokens at 10 ms -> busy 0.190 s; 9 ITL observations of 10 ms
    e = Engine(const(4, ttft_ms=100, itl_ms=10), 1024, 16, 4)
    e.submit(0.0, 1, 10, 10)
    run_all(e)
    m = e.metrics(1.0)
    assert m.busy_s == pytest.approx(0.190)
    assert m.request_success_total == 1
    assert m.itl.count == pytest.approx(9)
    assert m.itl.sum == pytest.approx(0.090)
    assert m.ttft.count == 1 and m.e2e.sum == pytest.approx(0.190)
