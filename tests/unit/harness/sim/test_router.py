"""Router scoring and admission with fake engines (fixed load snapshots)."""
from __future__ import annotations

from scalearena.harness.config.scenario import RouterSpec
from scalearena.harness.sim.engine.prefix_cache import chain_keys
from scalearena.harness.sim.router import RoutedPod, Router
from scalearena.workloads.base import RequestSpec


class FakeEngine:
    def __init__(self, waiting: int, kv: float) -> None:
        self.waiting, self.kv, self.reads = waiting, kv, 0

    def load(self, now: float) -> tuple[int, int, float]:
        self.reads += 1
        return self.waiting, 1, self.kv


def req(rid: int = 0, group: int = -1, prefix: int = 0, inp: int = 1000) -> RequestSpec:
    return RequestSpec(rid, "m", 0.0, inp, 10, prefix_group=group, prefix_tokens=prefix)


def router(**kw) -> Router:
    return Router(RouterSpec.model_validate(kw), seed=0)


def add(r: Router, name: str, waiting: int, kv: float) -> RoutedPod:
    p = RoutedPod(name, FakeEngine(waiting, kv))
    r.add_pod("m", p)
    return p


def test_queue_and_kv_scores_pick_least_loaded() -> None:
    # weights queue 1, kv 1. a: q=4 kv=0.5 -> (4-4)/4 + 0.5 = 0.5; b: q=0 kv=0.6 -> 1 + 0.4 = 1.4;
    # c: q=2 kv=0.1 -> 0.5 + 0.9 = 1.4 -> tie b/c; kv weight 2 breaks it: b 1 + 0.8 = 1.8, c 0.5 + 1.8 = 2.3
    r = router(scorers={"queue": 1, "kv_cache": 2, "prefix_cache": 0})
    add(r, "a", 4, 0.5)
    add(r, "b", 0, 0.6)
    add(r, "c", 2, 0.1)
    assert r.route(0.0, req()).pod.name == "c"


def test_equal_queues_score_one_and_ties_are_seeded() -> None:
    picks = []
    for _ in range(2):
        r = router(scorers={"queue": 1, "kv_cache": 1, "prefix_cache": 0}, refresh_s=0.001)
        for n in "abc":
            add(r, n, 0, 0.2)
        picks.append([r.route(i * 0.01, req(i)).pod.name for i in range(30)])
    assert picks[0] == picks[1]  # deterministic
    assert set(picks[0]) == {"a", "b", "c"}  # ties spread, not always the first pod


def test_admission_rejects_only_when_every_pod_saturated() -> None:
    r = router(admission={"kind": "saturation", "kv_threshold": 0.8, "queue_threshold": 5})
    a = add(r, "a", 5, 0.1)  # saturated by queue
    b = add(r, "b", 0, 0.85)  # saturated by KV
    assert r.route(0.0, req()).kind == "reject"
    b.engine.kv = 0.79
    assert r.route(1.0, req()).kind == "pod"  # new refresh slot sees b below the threshold
    assert a.engine.reads == 2


def test_admission_none_never_rejects() -> None:
    r = router(admission={"kind": "none"})
    add(r, "a", 50, 1.0)
    assert r.route(0.0, req()).kind == "pod"


def test_no_ready_pod_means_gateway_queue() -> None:
    assert router().route(0.0, req()).kind == "queue"


def test_snapshot_is_reused_within_refresh_interval() -> None:
    r = router(refresh_s=0.05)
    a = add(r, "a", 0, 0.0)
    for i in range(5):
        r.route(0.01 * i, req(i))  # 0.00 .. 0.04: one slot
    assert a.engine.reads == 1
    r.route(0.05, req(9))
    assert a.engine.reads == 2


def test_prefix_affinity_follows_the_group() -> None:
    # queue weight 1, kv 1, prefix 1. Both pods idle: the first request of group 7 lands on one of them;
    # later requests of group 7 get +1 x (800 / 1000) = 0.8 there, so they stick to it.
    r = router(scorers={"queue": 1, "kv_cache": 1, "prefix_cache": 1}, refresh_s=0.001)
    add(r, "a", 0, 0.0)
    add(r, "b", 0, 0.0)
    first = r.route(0.0, req(0, group=7, prefix=800)).pod.name
    later = {r.route(0.01 * i, req(i, group=7, prefix=800)).pod.name for i in range(1, 20)}
    assert later == {first}


def test_removed_pod_is_never_picked_and_loses_prefixes() -> None:
    r = router(scorers={"queue": 1, "kv_cache": 1, "prefix_cache": 1})
    a = add(r, "a", 0, 0.0)
    b = add(r, "b", 3, 0.5)
    assert r.route(0.0, req(0, group=1, prefix=500)).pod is a
    r.remove_pod("m", a)
    assert r.route(0.0, req(1, group=1, prefix=500)).pod is b
    assert not a.prefixes


def test_mooncake_chains_score_the_matched_share_of_the_prompt() -> None:
    # pod a was sent hash ids [1, 2, 3] (3 x 512 tokens). A request [1, 2, 9] of 1536 tokens matches the
    # chain 1, 2 there: 1024 / 1536 = 2/3 -> a scores queue 1 + kv 1 + 2/3; b (idle, nothing) scores 2.0
    # only if its queue is as good: give a one waiting more so its base is 0 + 1 = 1; 1 + 2/3 < 2 -> b.
    # With prefix weight 3: 1 + 3 x 2/3 = 3 > 2 -> a.
    def build(w: float) -> tuple[Router, RoutedPod, RoutedPod]:
        r = router(scorers={"queue": 1, "kv_cache": 1, "prefix_cache": w}, admission={"kind": "none"})
        a, b = add(r, "a", 0, 0.0), add(r, "b", 0, 0.0)
        r._remember(a, *chain_keys(((1, 512), (2, 512), (3, 512)), 1))
        a.engine.waiting = 1
        return r, a, b

    m = RequestSpec(1, "m", 0.0, 1536, 10, hash_ids=(1, 2, 9))
    r, a, b = build(1.0)
    assert r.route(0.0, m).pod is b
    r, a, b = build(3.0)
    assert r.route(0.0, m).pod is a
    # only a chain counts: [7, 2, 3] shares blocks 2 and 3 by id but not the prefix -> nothing matched
    r, a, b = build(1.0)
    assert Router._matched(a, *chain_keys(((7, 512), (2, 512), (3, 512)), 1)) == 0
    assert Router._matched(a, *chain_keys(((1, 512), (2, 512), (9, 512)), 1)) == 1024


def test_prefix_index_forgets_least_recently_routed_beyond_its_capacity() -> None:
    # capacity 64 blocks of 16 tokens; each group prefix is 512 tokens = 32 blocks: two fit, the third
    # evicts the least recently routed (group 0, not touched since group 1 was sent)
    r = router(scorers={"queue": 1, "kv_cache": 1, "prefix_cache": 1})
    a = RoutedPod("a", FakeEngine(0, 0.0), block_size=16, capacity_blocks=64)
    r.add_pod("m", a)
    for g in range(3):
        r.route(0.0, req(g, group=g, prefix=512))
    assert a.indexed_blocks == 64
    held = {k for k in a.prefixes}
    assert chain_keys(((-2 - 0, 512),), 1)[0][0] not in held
    assert {chain_keys(((-2 - g, 512),), 1)[0][0] for g in (1, 2)} <= held
