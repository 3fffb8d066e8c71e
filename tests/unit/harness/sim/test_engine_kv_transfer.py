"""Engine sides of prefill/decode disaggregation (harness/sim/engine/kv_transfer.py), worked by hand."""
from __future__ import annotations

import pytest

from scalearena.harness.sim.engine.catalog import gpu_spec, model_shape
from scalearena.harness.sim.engine.core import Engine, SubmitResult
from scalearena.harness.sim.engine.latency import ConstantModel, RooflineModel, RooflineParams
from tests.unit import enginekit
from tests.unit.enginekit import run_all


def const(max_num_seqs: int = 8, **kw: float) -> ConstantModel:  # these tests run 8-sequence engines
    return enginekit.const(max_num_seqs, **kw)




def test_prefill_side_keeps_the_prompt_kv_until_released() -> None:
    # TTFT = 10 + 1000 x 0.01 = 20 ms; max_tokens 1, so the request finishes at its first token;
    # its 1000 prompt tokens = ceil(1000 / 16) = 63 blocks stay allocated: kv 63 / 1024, none running
    e = Engine(const(prefill_overhead_ms=10, prefill_time_per_token_ms=0.01), 1024, 16, 8)
    assert e.submit(0.0, 1, 1000, 1, do_remote_decode=True) is SubmitResult.ACCEPTED
    evs = e.advance(0.1)  # (not run_all: the kept KV's abort timeout is an event too, at 480.02)
    assert [(x.kind, x.t) for x in evs] == [("first_token", pytest.approx(0.020)), ("finished", pytest.approx(0.020))]
    m = e.metrics(0.5)
    assert (m.running, m.waiting, m.kv_usage) == (0, 0, pytest.approx(63 / 1024))
    assert e.load(0.5) == (0, 0, pytest.approx(63 / 1024))
    assert e.holds_kv(1)
    assert e.release_kv(0.5, 1) is True
    assert e.kv_usage(0.5) == 0.0 and not e.holds_kv(1)
    assert e.release_kv(0.6, 1) is False  # a second release (or one after expiry) does nothing


def test_kept_kv_blocks_the_next_prompt_until_the_decode_side_reads_it() -> None:
    # 100 blocks; each 1000-token prompt needs 63: the second waits while the first's 63 are kept,
    # and is admitted at the release (t = 1.0), first token 20 ms later
    e = Engine(const(prefill_overhead_ms=10, prefill_time_per_token_ms=0.01), 100, 16, 8)
    e.submit(0.0, 1, 1000, 1, do_remote_decode=True)
    e.advance(0.1)
    e.submit(0.1, 2, 1000, 1, do_remote_decode=True)
    assert e.metrics(0.5).waiting == 1
    e.release_kv(1.0, 1)
    evs = run_all(e)
    assert evs[0] == ("first_token", 2, pytest.approx(1.020), 1)


def test_kept_kv_is_freed_at_the_abort_timeout() -> None:
    # vLLM frees a prefill's blocks VLLM_NIXL_ABORT_REQUEST_TIMEOUT after it finished when no decode
    # side reads them: here 10 s after the first token at 0.020 -> 10.020
    e = Engine(const(prefill_overhead_ms=10, prefill_time_per_token_ms=0.01), 1024, 16, 8, kv_hold_timeout_s=10.0)
    e.submit(0.0, 1, 1000, 1, do_remote_decode=True)
    e.advance(1.0)
    assert e.next_event_time() == pytest.approx(10.020)
    e.advance(10.019)
    assert e.holds_kv(1)
    e.advance(10.020)
    assert not e.holds_kv(1) and e.kv_usage(10.020) == 0.0


def test_decode_side_waits_for_the_kv_then_streams() -> None:
    # admitted at 0: 63 blocks held, reported waiting (vLLM: WAITING_FOR_REMOTE_KVS), a kv_pull of the
    # whole 1000-token prompt; the KV lands at 0.3 -> first token at 0.3 (constant model:
    # llm-d-inference-sim's remote-prefill TTFT is the transfer alone), then 99 x 20 ms -> 2.28 s
    e = Engine(const(prefill_overhead_ms=10, prefill_time_per_token_ms=0.01, itl_ms=20), 1024, 16, 8)
    e.submit(0.0, 7, 1000, 100, do_remote_prefill=True)
    assert e.advance(0.0) == [("kv_pull", 7, 0.0, 1000)]
    m = e.metrics(0.1)
    assert (m.running, m.waiting, m.kv_usage) == (0, 1, pytest.approx(63 / 1024))
    assert e.next_event_time() == float("inf")  # nothing happens until the KV arrives
    assert e.kv_loaded(0.3, 7) is True
    evs = run_all(e)
    assert [(x.kind, x.t) for x in evs] == [("first_token", pytest.approx(0.3)), ("finished", pytest.approx(2.28))]
    assert e.kv_loaded(3.0, 7) is False


def test_decode_side_pulls_only_what_its_prefix_cache_lacks() -> None:
    # a first (local) request caches its 512-token unit = 32 full blocks; the second, remote, request
    # with the same unit pulls 1000 - 512 = 488 tokens
    e = Engine(const(prefill_overhead_ms=10, prefill_time_per_token_ms=0.01, itl_ms=1), 1024, 16, 8,
               enable_prefix_caching=True)
    units = ((11, 512), (12, 488))
    e.submit(0.0, 1, 1000, 2, prefix=units)
    run_all(e)
    e.submit(1.0, 2, 1000, 2, prefix=((11, 512), (13, 488)), do_remote_prefill=True)
    assert e.advance(1.0) == [("kv_pull", 2, 1.0, 488)]


def test_roofline_decode_side_computes_one_prompt_token_after_the_load() -> None:
    # vLLM recomputes the last prompt token (num_computed_tokens = prompt - 1): one step of 1 token
    # over 999 tokens of context. Plain roofline (efficiencies 1, no overhead), llama3-8b, H100-SXM:
    # memory-bound, weights 16,059,990,016 B / 3.35e12 B/s = 4.794 ms (+0.5 us of attention FLOPs:
    # 4 x 32 x 32 x 128 x 1000 pairs / 989e12); a local 1000-token prefill would take
    # 2 x 8.03e9 x 1000 / 989e12 = 16.2 ms of matmuls alone
    m = RooflineModel(gpu_spec("H100-SXM"), model_shape("llama3-8b"), 1, RooflineParams(1.0, 1.0, 0.0))
    e = Engine(m, 10_000, 16, 8)
    e.submit(0.0, 1, 1000, 1, do_remote_prefill=True)
    e.advance(0.0)
    e.kv_loaded(0.5, 1)
    (first, done) = run_all(e)
    assert first.kind == "first_token" and first.t - 0.5 == pytest.approx(4.7946e-3, rel=1e-3)
    assert done.kind == "finished"


def test_a_loading_request_is_never_the_preemption_victim() -> None:
    # 10 blocks of 16 tokens. A (local, 16-token prompt, 100 out) decodes; B (remote, 48-token prompt =
    # 3 blocks) is admitted after it and waits for its KV. A needs a 8th block at 16 + 97 = 113 tokens:
    # 7 + 3 + 1 = 11 > 10, so a request is preempted; B (the newest) is loading, so A is the victim
    e = Engine(const(itl_ms=10, ttft_ms=10), 10, 16, 8)
    e.submit(0.0, 1, 16, 100)
    e.submit(0.0, 2, 48, 5, do_remote_prefill=True)
    evs = e.advance(5.0)
    assert ("preempted", 1) in [(x.kind, x.rid) for x in evs]
    m = e.metrics(5.0)
    assert (m.running, m.waiting) == (0, 2)  # A back in the queue, B still loading
    e.kv_loaded(5.0, 2)
    kinds = [(x.kind, x.rid) for x in run_all(e)]
    assert kinds[:2] == [("first_token", 2), ("finished", 2)] and kinds[-1] == ("finished", 1)


def test_abort_while_loading_and_kill_free_everything() -> None:
    e = Engine(const(ttft_ms=10, itl_ms=10), 1024, 16, 8)
    e.submit(0.0, 1, 1000, 10, do_remote_prefill=True)
    e.submit(0.0, 2, 1000, 1, do_remote_decode=True)
    e.advance(1.0)  # 1 loading (63 blocks), 2 prefilled and kept (63 blocks)
    assert e.kv_usage(1.0) == pytest.approx(126 / 1024)
    assert e.abort(1.0, 1) == 0
    assert e.kv_usage(1.0) == pytest.approx(63 / 1024) and e.metrics(1.0).waiting == 0
    assert e.kill_all(1.0) == []
    assert e.kv_usage(1.0) == 0.0 and not e.holds_kv(2)
