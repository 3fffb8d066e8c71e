"""Verdict, regret and Pareto front (reports/verdict.py) and the seed statistics (reports/stats.py),
on toy numbers worked out by hand in the comments."""
from __future__ import annotations

import math

import pytest
from scipy import stats as sps

from scalearena.reports.stats import compare_seeds, difference, estimate, t_quantile, welch
from scalearena.reports.verdict import Frontier, Point, decide, meets, pareto_front, regret

# A 3-autoscaler toy suite with the oracle as bound; cost in GPU-hours.
ORACLE = Point("oracle", 2.0, 2.0, 0.97, bound=True)
A = Point("a", 3.0, 3.0, 0.96)  # meets 0.95
B = Point("b", 2.5, 2.5, 0.90)  # cheaper but misses
C = Point("c", 4.0, 4.0, 0.99)  # meets, dearer than a
TOY = [ORACLE, A, B, C]


def test_verdict_picks_the_cheapest_deployable_point_meeting_the_target() -> None:
    v = decide(TOY, 0.95)
    # meeting 0.95: a (3.0) and c (4.0); b misses (0.90); the oracle (2.0) is a bound, never picked
    assert v.pick == A and v.runner_up == C
    assert v.bound == ORACLE
    assert [p.name for p in v.meeting] == ["a", "c"]


def test_with_one_oracle_run_only_regret_is_na_outside_its_attainment() -> None:
    v = decide(TOY, 0.95)
    # one hindsight point (0.97, 2.0 GPU-h) and no floor: below 0.97 nothing says how cheap a system could be,
    # above it nothing was reached -> n/a with the reason, never a negative number
    assert {n: r.status for n, r in v.regret.items()} == {"a": "below", "b": "below", "c": "beyond"}
    assert "oracle" not in v.regret and all(r.gpu_hours is None for r in v.regret.values())
    assert v.regret["c"].text() == "n/a: attainment above the bound's best (97.0%)"
    # exactly at the oracle's attainment the bound is the oracle: 3.0 - 2.0 = 1.0
    assert regret(Point("x", 3.0, 3.0, 0.97), Frontier((ORACLE,))).gpu_hours == pytest.approx(1.0)


def test_a_lower_target_changes_the_pick_and_none_may_meet_it() -> None:
    assert decide(TOY, 0.90).pick == B  # b's 0.90 meets 0.90 exactly and is cheapest (2.5)
    v = decide(TOY, 0.995)
    assert v.pick is None and v.runner_up is None
    assert v.best_attainment == C  # the closest to the target: 0.99


def test_incomplete_runs_and_unknown_costs_never_meet() -> None:
    crashed = Point("d", 1.0, 1.0, 0.99, complete=False)
    assert not meets(crashed, 0.95)
    assert decide([*TOY, crashed], 0.95).pick == A
    assert decide([Point("e", None, 1.0, 0.99), A], 0.95).pick == A


def test_pareto_front_drops_dominated_and_bound_points() -> None:
    e = Point("e", 3.5, 3.5, 0.95)  # a is cheaper (3.0 <= 3.5) and better (0.96 >= 0.95): dominated
    tie = Point("f", 3.0, 3.0, 0.96)  # equal to a in both: neither dominates the other
    front = pareto_front([*TOY, e, tie])
    assert [p.name for p in front] == ["b", "a", "f", "c"]  # cheapest first; oracle is a bound, not on it


def test_estimate_mean_and_t_interval() -> None:
    # 1..5: mean 3, s = sqrt(2.5) = 1.5811, se = 0.70711, t(0.975, 4) = 2.7764 -> half width 1.9632
    e = estimate([1, 2, 3, 4, 5])
    assert e.mean == 3.0 and e.n == 5
    assert e.half_width == pytest.approx(1.9632, abs=1e-4)
    assert e.fmt(".1f") == "3.0 ± 2.0" and e.excludes_zero()
    one = estimate([2.0, None, float("nan")])
    assert one.n == 1 and math.isnan(one.half_width) and one.fmt() == "2.00" and not one.excludes_zero()
    assert estimate([]).fmt() == "n/a"


def test_t_quantile_df2_closed_form() -> None:
    # df = 2: t_u = (2u - 1) / sqrt(2 u (1 - u)); u = 0.975 -> 0.95 / sqrt(0.04875) = 4.30265
    assert t_quantile(2) == pytest.approx(0.95 / math.sqrt(2 * 0.975 * 0.025), rel=1e-9)


def test_welch_p_value_by_hand() -> None:
    # a = [0, 2], b = [3, 5]: means 1 and 4, variances 2 and 2; se = sqrt(2/2 + 2/2) = sqrt 2,
    # t = -3 / sqrt 2, Welch df = (1 + 1)^2 / (1/1 + 1/1) = 2. For df 2 the two-sided p-value is
    # 1 - |t| / sqrt(t^2 + 2) = 1 - sqrt(4.5 / 6.5) = 1 - 3 / sqrt(13) = 0.167950
    assert welch([0, 2], [3, 5]) == pytest.approx(1 - 3 / math.sqrt(13), rel=1e-9)
    # the CI of the difference: -3 +- t(0.975, 2) * sqrt 2 = -3 +- 6.08490
    d = difference([0, 2], [3, 5])
    assert d.mean == -3.0 and d.half_width == pytest.approx(4.302653 * math.sqrt(2), rel=1e-6)
    assert not d.excludes_zero()  # p 0.168: noise can explain it


def test_welch_interval_agrees_with_scipy_on_unequal_samples() -> None:
    a, b = [10.1, 9.8, 10.4, 10.0, 9.9], [11.0, 12.1, 10.7]
    res = sps.ttest_ind(a, b, equal_var=False)
    ci = res.confidence_interval(0.95)
    d = difference(a, b)
    assert d.low == pytest.approx(ci.low, rel=1e-9) and d.high == pytest.approx(ci.high, rel=1e-9)
    assert welch(a, b) == pytest.approx(res.pvalue, rel=1e-12)


def test_paired_difference_when_both_sides_ran_the_same_seeds() -> None:
    # per-seed differences 1, 2, 3 (seeds 1..3, b listed in another order): mean 2, s = 1,
    # se = 1 / sqrt 3 = 0.57735, t(0.975, 2) = 4.30265 -> half width 2.48414
    d = difference([10, 12, 14], [11, 9, 10], seeds_a=[1, 2, 3], seeds_b=[3, 1, 2])
    assert d.mean == pytest.approx(2.0) and d.half_width == pytest.approx(2.48414, abs=1e-5)


def test_degenerate_samples() -> None:
    assert welch([1.0], [2.0, 3.0]) is None  # one seed: the test needs two a side
    assert welch([1.0, 1.0], [1.0, 1.0]) == 1.0  # no spread, same mean
    assert welch([1.0, 1.0], [2.0, 2.0]) == 0.0  # no spread, different means: not noise
    assert difference([1.0, 1.0], [2.0, 2.0]).half_width == 0.0


def test_compare_seeds_pairs_only_the_same_seeds_each_once() -> None:
    a, b = [3.0, 5.0, 4.0], [1.0, 2.0, 3.0]
    # same seeds: per-seed differences 2, 3, 1: mean 2, sd 1, t = 2 / (1/sqrt 3) = 3.464 on df 2;
    # two-sided p at df 2 is 1 - |t| / sqrt(t^2 + 2) = 1 - 3.464 / 3.742 = 0.0742
    c = compare_seeds(a, b, [1, 2, 3], [1, 2, 3])
    assert c.paired and c.test == "paired t" and c.diff.mean == pytest.approx(2.0)
    assert c.p_value == pytest.approx(0.0742, abs=1e-3)
    # other seeds (or one run without a seed, or a seed twice): Welch. Both variances 1: se = sqrt(2/3) = 0.8165,
    # t = 2.449, df = (2/3)^2 / (2 x (1/3)^2 / 2) = 4; df 4: F(t) = 1/2 + 3/8 x 1.549 x (1 - 2.4/12) = 0.9648,
    # p = 2 x (1 - 0.9648) = 0.0704
    for sa, sb in (([1, 2, 3], [4, 5, 6]), ([1, 2, None], [1, 2, 3]), ([1, 1, 2], [1, 1, 2])):
        w = compare_seeds(a, b, sa, sb)
        assert not w.paired and w.test == "Welch t" and w.diff.mean == pytest.approx(2.0)
        assert w.p_value == pytest.approx(0.0704, abs=1e-3)
