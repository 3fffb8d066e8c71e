"""Constrained mode: greedy-by-saturation under a GPU budget, on hand-worked budgets."""
from __future__ import annotations

from scalearena.controllers.wva.controller import WVA, WVAConfig
from scalearena.controllers.wva.limiter import gpus_in_use

from .test_wva_views import NOW, by_variant, variant, view

SAT = (0.95, 0)
HOT = (0.75, 0)  # spare kv 0.05 -> normalised spare 0.05 / 0.8 = 0.0625


def constrained(**kw) -> WVAConfig:
    return WVAConfig(mode="constrained", **kw)


def test_budget_of_4_gpus_goes_to_the_model_closest_to_saturation_that_fits() -> None:
    # small: 1 GPU/replica, 1 replica (model m1, kv 0.75: spare 0.0625 of tau). big: 2 GPUs/replica,
    # 1 replica (model m2, saturated: spare 0). In use 1 x 1 + 1 x 2 = 3 of 4 -> 1 GPU free.
    # Order: m2 first (spare 0 < 0.0625) but +1 big needs 2 GPUs > 1 free -> cut short, limited.
    # Then m1: +1 small needs 1 GPU <= 1 free -> granted.
    v = view(variant("small", [HOT], model="m1", gpus=1), variant("big", [SAT], model="m2", gpus=2))
    d = by_variant(WVA(constrained(gpu_budget=4)).decide(NOW, v))
    assert d["big"].desired_replicas == 1 and d["big"].limited
    assert any(r.rule == "wva.limiter" for r in d["big"].reasons)
    assert d["small"].desired_replicas == 2 and not d["small"].limited
    assert d["small"].audit["limiter"]["order"] == ["m2", "m1"]


def test_budget_large_enough_grants_both() -> None:
    # Budget 6: 3 in use -> 3 free. big +1 (2 GPUs) -> 1 free; small +1 (1 GPU) -> 0 free.
    v = view(variant("small", [HOT], model="m1", gpus=1), variant("big", [SAT], model="m2", gpus=2))
    d = by_variant(WVA(constrained(gpu_budget=6)).decide(NOW, v))
    assert (d["big"].desired_replicas, d["small"].desired_replicas) == (2, 2)
    assert not d["big"].limited and not d["small"].limited
    assert d["big"].audit["limiter"]["pools"]["*"] == {"budget": 6, "in_use": 3, "free_after": 0}


def test_headroom_request_is_cut_to_whole_replicas_that_fit() -> None:
    # Headroom asks +2 (2 x kv 0.95: (1.9 + 0.3) / 0.7 -> 4 replicas). 2 GPUs/replica, budget 7,
    # in use 2 x 2 = 4 -> 3 free -> one whole replica (2 GPUs) fits, the second does not.
    v = view(variant("va", [SAT, SAT], gpus=2))
    d = by_variant(WVA(constrained(gpu_budget=7, headroom={"enabled": True})).decide(NOW, v))
    assert d["va"].desired_replicas == 3 and d["va"].limited
    assert "1 of 2 replicas" in [r for r in d["va"].reasons if r.rule == "wva.limiter"][0].message


def test_per_gpu_type_capacity_spills_to_the_next_cheapest_variant() -> None:
    # Discovery: 2 A100s, 8 H100s. a100 runs 2 replicas x 1 GPU -> A100 pool full.
    # Saturated model: +1 wanted on a100 (cheapest) -> no A100 free -> limited; spills to h100 (7 free).
    v = view(
        variant("a100", [SAT, SAT], gpu="A100", cost=1.0),
        variant("h100", [SAT], gpu="H100", cost=2.5),
        gpu_capacity={"A100": 2, "H100": 8},
    )
    d = by_variant(WVA(constrained()).decide(NOW, v))
    assert d["a100"].desired_replicas == 2 and d["a100"].limited
    assert d["h100"].desired_replicas == 2 and not d["h100"].limited


def test_scale_downs_and_holds_pass_through_the_limiter() -> None:
    # Idle model: 4 x kv 0.1 is a safe scale-down (see controller tests); budget 0 does not stop it.
    v = view(variant("a100", [(0.1, 0)] * 2), variant("h100", [(0.1, 0)] * 2, cost=2.5))
    d = by_variant(WVA(constrained(gpu_budget=0)).decide(NOW, v))
    assert d["h100"].desired_replicas == 1 and not d["h100"].limited


def test_no_budget_known_leaves_decisions_unconstrained() -> None:
    d = by_variant(WVA(constrained()).decide(NOW, view(variant("va", [SAT]))))
    assert d["va"].desired_replicas == 2 and "skipped" in d["va"].audit["limiter"]


def test_gpus_in_use_counts_pending_and_terminating_pods() -> None:
    # spec 3, ready 2, pending 1, terminating 1, 2 GPUs each: (max(3, 2 + 1) + 1) x 2 = 8.
    assert gpus_in_use(variant("va", [SAT, SAT], spec=3, pending=1, terminating=1, gpus=2)) == 8
