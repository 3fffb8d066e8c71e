"""Closed loop on a toy model: replicas follow a load staircase and settle without flapping.

Toy cluster: the model's KV load L (in replica-KV fractions) spreads evenly, so each of N replicas
reports kv = min(1, L / N), queue 0. Decisions apply at once and new pods are ready by the next
30 s cycle, so the model is never in transition when WVA looks.
"""
from __future__ import annotations

from hypothesis import given, settings, strategies as st

from scalearena.controllers.wva.controller import WVA, WVAConfig

from .test_wva_views import variant, view


def run(loads: list[float], start: int = 1) -> list[int]:
    wva = WVA(WVAConfig())
    n, out = start, []
    for i, load in enumerate(loads):
        now = 30.0 * i
        kv = min(1.0, load / n)
        (d,) = wva.decide(now, view(variant("va", [(kv, 0)] * n, min_replicas=1, ts=now), now=now))
        n = d.desired_replicas
        out.append(n)
    return out


def test_staircase_up_then_down_settles_at_hand_worked_counts() -> None:
    # L 0.5, N 1: kv 0.5, spare 0.3 >= 0.1 -> hold (1 non-saturated < 2: no scale-down)          -> 1
    # L 1.5: N1 kv 1.0 saturated -> 2; N2 kv 0.75 spare 0.05 -> 3; N3 kv 0.5 spare 0.3, after removal
    #        0.5 x 3/2 = 0.75 -> spare 0.05 < 0.1 -> hold                                          -> 2, 3, 3
    # L 3.0: N3 kv 1.0 -> 4; N4 kv 0.75 -> 5; N5 kv 0.6 spare 0.2, after 0.6 x 5/4 = 0.75 -> hold -> 4, 5, 5
    # L 1.0: N5 kv 0.2, after 0.25 -> 4; kv 0.25, after 0.333 -> 3; kv 0.333, after 0.5 (spare 0.3) -> 2;
    #        N2 kv 0.5, after 1.0 -> spare -0.2 -> hold                                          -> 4, 3, 2, 2
    loads = [0.5, 1.5, 1.5, 1.5, 3.0, 3.0, 3.0, 1.0, 1.0, 1.0, 1.0]
    assert run(loads) == [1, 2, 3, 3, 4, 5, 5, 4, 3, 2, 2]


def test_steady_load_never_oscillates() -> None:
    # L 2.0 from N 1: kv 1.0 -> 2; kv 1.0 -> 3; kv 0.667 spare 0.133 -> hold; after removal 1.0 -> blocked.
    assert run([2.0] * 12) == [2, 3] + [3] * 10


pod_st = st.tuples(st.floats(0, 1), st.integers(0, 12).map(float))


@settings(max_examples=100, deadline=None)
@given(
    pods=st.lists(st.lists(pod_st, max_size=6), min_size=1, max_size=3),
    costs=st.lists(st.sampled_from([1.0, 2.5, 10.0]), min_size=3, max_size=3),
    maxes=st.lists(st.integers(1, 8), min_size=3, max_size=3),
)
def test_plus_one_rule_stays_in_bounds_and_moves_at_most_one_replica(pods, costs, maxes) -> None:
    vs = [
        variant(f"v{i}", p[: maxes[i]], cost=costs[i], max_replicas=maxes[i], min_replicas=min(1, len(p)))
        for i, p in enumerate(pods)
    ]
    decisions = WVA(WVAConfig()).decide(0.0, view(*vs, now=0.0))
    assert len(decisions) == len(vs)
    moved = 0
    for d, v in zip(sorted(decisions, key=lambda d: d.variant), vs, strict=True):
        assert v.min_replicas <= d.desired_replicas <= v.max_replicas and d.reasons
        moved += abs(d.desired_replicas - d.current_replicas)
    assert moved <= 1  # one model, one +1 or -1 per cycle (keep-one also adds exactly 1)
