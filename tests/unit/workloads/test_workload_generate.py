"""build_requests / iter_requests: ordering, ids, seeding and stream independence."""
from __future__ import annotations

import copy
from typing import Any

import pytest

from scalearena.harness.config.scenario import Scenario, scenario_from_data
from scalearena.workloads.arrivals import arrival_times
from scalearena.workloads.base import RequestSpec
from scalearena.workloads.generate import (
    ARRIVALS,
    INPUT_TOKENS,
    OUTPUT_TOKENS,
    PREFIX_GROUPS,
    WorkloadStats,
    build_requests,
    iter_drafts,
    iter_requests,
    stream_rng,
)
from scalearena.workloads.lengths import token_lengths

POISSON = {"kind": "poisson", "rate_rps": 5}
BN_IN = {"kind": "bounded_normal", "min": 10, "max": 8192, "mean": 4096, "sd": 2048}
BN_OUT = {"kind": "bounded_normal", "min": 10, "max": 2048, "mean": 1024, "sd": 512}


def make(base: dict[str, Any], workload: Any, duration_s: float = 60, seed: int = 7, **extra: Any) -> Scenario:
    d = copy.deepcopy(base)
    d.update(workload=workload, duration_s=duration_s, seed=seed, **extra)
    return scenario_from_data(d, "test.yaml")


def wl(arrivals: dict = POISSON, inp: dict = BN_IN, out: dict = BN_OUT, **kw: Any) -> dict[str, Any]:
    return {"arrivals": arrivals, "input_tokens": inp, "output_tokens": out, **kw}


def test_ids_order_and_range(scenario_dict: dict[str, Any]) -> None:
    reqs = build_requests(make(scenario_dict, wl()))
    assert [r.request_id for r in reqs] == list(range(len(reqs)))
    assert all(a.arrival_s <= b.arrival_s for a, b in zip(reqs, reqs[1:], strict=False))
    assert reqs[0].arrival_s >= 0 and reqs[-1].arrival_s < 60
    assert {r.model for r in reqs} == {"m"}  # null model -> the first variant's


def test_iter_equals_build_and_same_seed_is_identical(scenario_dict: dict[str, Any]) -> None:
    sc = make(scenario_dict, wl())
    assert list(iter_requests(sc)) == build_requests(sc) == build_requests(make(scenario_dict, wl()))


def test_different_seed_differs(scenario_dict: dict[str, Any]) -> None:
    a = build_requests(make(scenario_dict, wl(), seed=1))
    b = build_requests(make(scenario_dict, wl(), seed=2))
    assert [r.arrival_s for r in a] != [r.arrival_s for r in b]


def test_changing_output_lengths_moves_nothing_else(scenario_dict: dict[str, Any]) -> None:
    a = build_requests(make(scenario_dict, wl()))
    b = build_requests(make(scenario_dict, wl(out={"kind": "uniform", "min": 1, "max": 50})))
    assert [(r.arrival_s, r.input_tokens) for r in a] == [(r.arrival_s, r.input_tokens) for r in b]
    assert [r.output_tokens for r in a] != [r.output_tokens for r in b]


def test_changing_arrivals_keeps_length_sequence(scenario_dict: dict[str, Any]) -> None:
    a = build_requests(make(scenario_dict, wl()))
    b = build_requests(make(scenario_dict, wl(arrivals={"kind": "constant", "rate_rps": 3})))
    n = min(len(a), len(b))
    # the i-th request draws the i-th input and output length whatever the arrival process
    assert [(r.input_tokens, r.output_tokens) for r in a[:n]] == [(r.input_tokens, r.output_tokens) for r in b[:n]]


def test_shared_prefix_moves_nothing_else(scenario_dict: dict[str, Any]) -> None:
    plain = build_requests(make(scenario_dict, wl(), duration_s=600))
    sp = {"groups": 4, "prefix_tokens": 512, "fraction": 0.5}
    pref = build_requests(make(scenario_dict, wl(shared_prefix=sp), duration_s=600))
    key = [(r.arrival_s, r.input_tokens, r.output_tokens) for r in plain]
    assert key == [(r.arrival_s, r.input_tokens, r.output_tokens) for r in pref]
    groups = [r.prefix_group for r in pref]
    assert set(groups) == {-1, 0, 1, 2, 3}
    # ~3000 requests, half carry a prefix: sd of the share sqrt(.25/3000) = 0.009; allow 0.05
    assert abs(sum(g >= 0 for g in groups) / len(groups) - 0.5) < 0.05
    for r in pref:
        assert r.prefix_tokens == (min(512, r.input_tokens) if r.prefix_group >= 0 else 0)


@pytest.mark.parametrize("arrivals", [
    {"kind": "poisson", "rate_rps": 40},  # chunks of 4,096 arrivals, as the lengths'
    {"kind": "stepped", "steps": [{"duration_s": 70, "rate_rps": 30}, {"duration_s": 100, "rate_rps": 50}]},
    {"kind": "onoff", "on_rate_rps": 80, "off_rate_rps": 5, "mean_on_s": 20, "mean_off_s": 20},  # a chunk per burst
])
def test_a_chunk_of_arrivals_takes_the_next_lengths_as_one_request_at_a_time(
        scenario_dict: dict[str, Any], arrivals: dict[str, Any]) -> None:
    # 8,000 to 14,000 requests in 300 s: the arrival chunks (a step's or a burst's, up to 4,096) and the
    # length and prefix chunks (4,096 each) end at different requests; a request still takes the i-th
    # draw of every stream
    sp = {"groups": 3, "prefix_tokens": 2000, "fraction": 0.7}
    w = wl(arrivals, out={"kind": "uniform", "min": 1, "max": 50}, shared_prefix=sp)
    sc = make(scenario_dict, w, duration_s=300, seed=11)
    times = arrival_times(sc.workloads[0].arrivals, 300, stream_rng(11, 0, ARRIVALS))
    ins = token_lengths(sc.workloads[0].input_tokens, stream_rng(11, 0, INPUT_TOKENS))
    outs = token_lengths(sc.workloads[0].output_tokens, stream_rng(11, 0, OUTPUT_TOKENS))
    rng = stream_rng(11, 0, PREFIX_GROUPS)
    groups: list[int] = []
    expected = []
    for i, (t, n_in, n_out) in enumerate(zip(times, ins, outs, strict=False)):
        if not groups:  # a uniform and a group draw per request, 4,096 at a time
            carry, group = rng.random(4096) < 0.7, rng.integers(0, 3, size=4096)
            groups = [int(g) if c else -1 for c, g in zip(carry, group, strict=True)][::-1]
        g = groups.pop()
        expected.append(RequestSpec(i, "m", t, n_in, n_out, g, min(2000, n_in) if g >= 0 else 0))
    stats = WorkloadStats()
    assert list(iter_requests(sc, stats)) == expected
    assert stats.requests == [len(expected)] and len(expected) > 2 * 4096
    assert [RequestSpec(i, *d) for i, d in enumerate(iter_drafts(sc))] == expected  # the merge path's drafts


def test_several_models_merge_in_arrival_then_model_order(scenario_dict: dict[str, Any]) -> None:
    variants = scenario_dict["cluster"]["variants"]
    other = copy.deepcopy(variants[0]) | {"name": "vb", "model": "b"}
    scenario_dict["cluster"]["variants"] = [variants[0], other]
    fixed = {"kind": "fixed", "value": 100}
    w_a = wl(arrivals={"kind": "constant", "rate_rps": 1}, inp=fixed, out=fixed, model="m")
    w_b = wl(arrivals={"kind": "constant", "rate_rps": 2}, inp=fixed, out=fixed, model="b")
    stats = WorkloadStats()
    reqs = build_requests(make(scenario_dict, [w_b, w_a], duration_s=3), stats)
    # m at 0,1,2; b at 0,0.5,...,2.5; ties at equal times ordered by model name ("b" < "m")
    assert [(r.arrival_s, r.model) for r in reqs] == [
        (0.0, "b"), (0.0, "m"), (0.5, "b"), (1.0, "b"), (1.0, "m"), (1.5, "b"),
        (2.0, "b"), (2.0, "m"), (2.5, "b"),
    ]
    assert [r.request_id for r in reqs] == list(range(9))
    assert stats.requests == [6, 3]


def test_adding_a_workload_leaves_the_first_unchanged(scenario_dict: dict[str, Any]) -> None:
    variants = scenario_dict["cluster"]["variants"]
    scenario_dict["cluster"]["variants"] = [variants[0], copy.deepcopy(variants[0]) | {"name": "vb", "model": "b"}]
    alone = build_requests(make(scenario_dict, [wl(model="m")]))
    both = build_requests(make(scenario_dict, [wl(model="m"), wl(model="b")]))
    key = lambda rs: [(r.arrival_s, r.input_tokens, r.output_tokens) for r in rs if r.model == "m"]  # noqa: E731
    assert key(alone) == key(both)


def test_empirical_file_missing_is_user_error(scenario_dict: dict[str, Any]) -> None:
    from scalearena.contracts.errors import UserError

    sc = make(scenario_dict, wl(inp={"kind": "empirical", "path": "/nonexistent.csv", "column": "x"}))
    with pytest.raises(UserError, match="/nonexistent.csv"):
        build_requests(sc)


def test_trace_workload_reports_clipping_and_keeps_trace_lengths(scenario_dict: dict[str, Any]) -> None:
    from pathlib import Path

    azure = str(Path(__file__).resolve().parents[3] / "workloads" / "data" / "azure_code_2023_sample.csv")
    arrivals = {"kind": "trace", "path": azure, "format": "azure", "max_model_len": 4096}
    stats = WorkloadStats()
    reqs = build_requests(make(scenario_dict, {"arrivals": arrivals}, duration_s=1), stats)
    # rows before 18:17:04.9799600 (1 s after the first): first row 4808 + 10 > 4096 -> clipped
    assert reqs[0].arrival_s == 0.0 and (reqs[0].input_tokens, reqs[0].output_tokens) == (4095, 1)
    assert reqs[1].arrival_s == 0.052 and (reqs[1].input_tokens, reqs[1].output_tokens) == (3180, 8)
    assert stats.clipped == stats.traces[0].clipped >= 1
    assert stats.traces[0].emitted == len(reqs) == stats.requests[0]
    # a token distribution given beside a trace replaces the trace's own lengths
    fixed = {"kind": "fixed", "value": 64}
    over = build_requests(make(scenario_dict, {"arrivals": arrivals, "input_tokens": fixed}, duration_s=1))
    assert [r.arrival_s for r in over] == [r.arrival_s for r in reqs]
    assert {r.input_tokens for r in over} == {64}


def test_trace_path_relative_to_the_scenario_file(tmp_path, scenario_dict: dict[str, Any]) -> None:
    import yaml

    from scalearena.harness.config.scenario import load_scenario

    (tmp_path / "traces").mkdir()
    (tmp_path / "traces" / "t.jsonl").write_text(
        '{"timestamp": 0, "input_length": 10, "output_length": 2, "hash_ids": [3]}\n'
        '{"timestamp": 250, "input_length": 20, "output_length": 4, "hash_ids": [3, 4]}\n'
    )
    scenario_dict["workload"] = {"arrivals": {"kind": "trace", "format": "mooncake", "path": "traces/t.jsonl"}}
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump(scenario_dict))
    reqs = build_requests(load_scenario(f))
    # 250 ms -> 0.25 s; both share the first hash id 3, carried as the chain (no prefix group)
    assert [(r.arrival_s, r.prefix_group, r.hash_ids) for r in reqs] == [(0.0, -1, (3,)), (0.25, -1, (3, 4))]


def test_tenant_and_priority_tag_a_workloads_requests(scenario_dict: dict[str, Any]) -> None:
    """Two workloads on one model, two flows for the router's flow control; an untagged one stays ("", 0)
    and adding tags moves no arrival (the same seed streams)."""
    plain = build_requests(make(scenario_dict, [wl(), wl()]))
    tagged = build_requests(make(scenario_dict, [wl(tenant="chat", priority=1), wl(tenant="batch")]))
    assert [(r.arrival_s, r.input_tokens) for r in plain] == [(r.arrival_s, r.input_tokens) for r in tagged]
    assert {(r.tenant, r.priority) for r in plain} == {("", 0)}
    assert {(r.tenant, r.priority) for r in tagged} == {("chat", 1), ("batch", 0)}
    from scalearena.workloads.load_handoff import request_headers, spec_from_json, spec_to_json

    r = next(r for r in tagged if r.tenant == "chat")
    assert spec_from_json(spec_to_json(r)) == r  # the schedule hand-off keeps the tags
    assert request_headers(r) == {"x-request-id": str(r.request_id), "x-gateway-inference-fairness-id": "chat",
                                  "x-scalearena-priority": "1"}
