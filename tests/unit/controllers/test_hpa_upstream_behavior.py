"""HPA behavior cases ported from Kubernetes' own tests (facts only: inputs and expected outputs; our code).

Source: kubernetes/kubernetes pkg/controller/podautoscaler/horizontal_test.go (master @ 003e862):
TestScalingWithRules (``convertDesiredReplicasWithBehaviorRate``: rate limits with past scale events),
TestNormalizeDesiredReplicasWithBehavior (``stabilizeRecommendationWithBehaviors``), TestNormalizeDesiredReplicas
(the legacy ``stabilizeRecommendation``), TestConvertDesiredReplicasWithRules (the legacy limits),
TestCalculateScaleUpLimitWithScalingRules / TestCalculateScaleDownLimitWithBehaviors.

Past events are placed as upstream's ``generateEventsUniformDistribution(events, 120)`` places them: the 120 s
before now split into one segment per event, each event in the middle of its segment, the first one oldest
([1, 5, 9] -> 100 s, 60 s and 20 s ago; four events -> 105, 75, 45, 15 s ago; one -> 60 s ago).
``generateScalingRules(pods, podsPeriod, percent, percentPeriod, window)`` is ``rules`` below (select Max).
Upstream's test harness sets ``scaleUpLimitFactor = 8`` in ``init()``; the legacy cases here use the
controller's real factor 2.
"""
from __future__ import annotations

import pytest

from scalearena.controllers.hpa.behavior import (
    BehaviorState,
    ScalingPolicy,
    ScalingRules,
    limit_rate,
    normalize_legacy,
    resolve,
    scale_down_limit,
    scale_up_limit,
    stabilize,
)

NOW = 10_000.0


def rules(pods: int = 0, pods_period: int = 0, percent: int = 0, percent_period: int = 0,
          window: int | None = None, select: str | None = None) -> ScalingRules:
    policies = []
    if pods:
        policies.append(ScalingPolicy(type="Pods", value=pods, period_seconds=pods_period))
    if percent:
        policies.append(ScalingPolicy(type="Percent", value=percent, period_seconds=percent_period))
    return ScalingRules(stabilization_window_seconds=window, select_policy=select or "Max", policies=policies or None)


def uniform(changes: list[int], period_s: float = 120.0) -> list[tuple[float, int]]:
    seg = period_s / len(changes)
    return [(NOW - (period_s - seg * (i + 1) + seg / 2), c) for i, c in enumerate(changes)]


# (upstream case name, current, desired, min, max, scaleUp rules, scaleDown rules, up events, down events,
#  expected replicas, expected condition)
SCALING_WITH_RULES = [
    ("prenormalized desired replicas within range", 5, 7, 3, 8, None, None, [], [], 7, "DesiredWithinRange"),
    ("prenormalized desired replicas < minReplicas", 3, 1, 2, 8, None, None, [], [], 2, "TooFewReplicas"),
    ("prenormalized desired replicas within range when minReplicas is 0", 1, 0, 0, 10, None, None, [], [], 0,
     "DesiredWithinRange"),
    ("maxReplicas is the limit because maxReplicas < scaleUpLimit", 20, 1000, 1, 10, None, None, [], [], 10,
     "TooManyReplicas"),
    ("desired replica count is more than the maximum replica count", 100, 1000, 100, 150, None, None, [], [], 150,
     "TooManyReplicas"),
    # 1 % of 3 -> ceil(3 x 1.01) = 4
    ("scaleUpLimit is the limit because scaleUpLimit < maxReplicas with user policies", 3, 1000, 1, 2000,
     rules(percent=1, percent_period=60, window=0), None, [], [], 4, "ScaleUpLimit"),
    ("scaleDownLimit is the limit because scaleDownLimit > minReplicas with user defined policies", 1000, 3, 3,
     2000, None, rules(pods=20, pods_period=60, window=0), [], [], 980, "ScaleDownLimit"),
    # defaults: max(10 + 4, 10 x 2) = 20
    ("scaleUp with default behavior", 10, 50, 1, 1000, None, None, [], [], 20, "ScaleUpLimit"),
    ("scaleUp with pods policy larger than percent policy", 10, 500, 1, 1000,
     rules(100, 60, 100, 60, 0), None, [], [], 110, "ScaleUpLimit"),
    ("scaleUp with percent policy larger than pods policy", 10, 500, 1, 1000,
     rules(2, 60, 100, 60, 0), None, [], [], 20, "ScaleUpLimit"),
    ("scaleUp with spec MaxReplicas limitation with large pod policy", 10, 50, 1, 1000,
     rules(100, 60, window=0), None, [], [], 50, "DesiredWithinRange"),
    ("scaleUp with spec MaxReplicas limitation with large percent policy", 10, 50, 1, 1000,
     rules(10000, 60, window=0), None, [], [], 50, "DesiredWithinRange"),
    ("scaleUp with pod policy limitation", 10, 50, 1, 1000, rules(30, 60, window=0), None, [], [], 40,
     "ScaleUpLimit"),
    ("scaleUp with percent policy limitation", 10, 50, 1, 1000, rules(percent=200, percent_period=60, window=0),
     None, [], [], 30, "ScaleUpLimit"),
    # Pods: 100 - 20 = 80; Percent 1: int(100 x 0.99) = 99; Max select -> the larger change, 80
    ("scaleDown with percent policy larger than pod policy", 100, 2, 1, 1000, None, rules(20, 60, 1, 60, 300),
     [], [], 80, "ScaleDownLimit"),
    ("scaleDown with pod policy larger than percent policy", 100, 2, 1, 1000, None, rules(2, 60, 1, 60, 300),
     [], [], 98, "ScaleDownLimit"),
    ("scaleDown with spec MinReplicas=nil limitation with large pod policy", 10, 0, 1, 1000, None,
     rules(100, 60, window=300), [], [], 1, "TooFewReplicas"),
    ("scaleDown with spec MinReplicas limitation with large percent policy", 10, 2, 5, 1000, None,
     rules(percent=100, percent_period=60, window=300), [], [], 5, "TooFewReplicas"),
    ("scaleDown with pod policy limitation", 10, 2, 1, 1000, None, rules(5, 60, window=300), [], [], 5,
     "ScaleDownLimit"),
    ("scaleDown with percent policy limitation", 10, 5, 1, 1000, None,
     rules(percent=50, percent_period=60, window=300), [], [], 5, "DesiredWithinRange"),
    # 100 - (1 + 5 + 9) + 300 = 385 > max 200
    ("scaleUp with spec MaxReplicas limitation with large pod policy and events", 100, 500, 1, 200,
     rules(300, 60, window=0), None, uniform([1, 5, 9]), [], 200, "TooManyReplicas"),
    ("scaleUp with spec MaxReplicas limitation with large percent policy and events", 100, 500, 1, 200,
     rules(percent=10000, percent_period=60, window=0), None, uniform([1, 5, 9]), [], 200, "TooManyReplicas"),
    # 120 s ago there were 100 - 15 = 85; + 5 = 90 < 100: no scale-up until the events age out
    ("scaleUp with currentReplicas limitation with rate.PeriodSeconds with a lot of recent scale up events", 100,
     500, 1, 1000, rules(5, 120, window=0), None, uniform([1, 5, 9]), [], 100, "ScaleUpLimit"),
    ("scaleUp with pod policy and previous scale up events", 100, 500, 1, 1000, rules(150, 120, window=0), None,
     uniform([1, 5, 9]), [], 235, "ScaleUpLimit"),  # 100 - 15 + 150
    ("scaleUp with percent policy and previous scale up events", 100, 500, 1, 1000,
     rules(percent=200, percent_period=120, window=0), None, uniform([1, 5, 9]), [], 255, "ScaleUpLimit"),  # 85 x 3
    # period start 6 - 4 + 2 = 4; + 300 % -> 16
    ("scaleUp with percent policy and previous scale up and down events", 6, 24, 1, 1000,
     rules(percent=300, percent_period=300, window=0), None, uniform([4]), uniform([2]), 16, "ScaleUpLimit"),
    ("scaleDown with default policy and previous events", 10, 5, 1, 1000, None, None, [], uniform([1, 5, 9]), 5,
     "DesiredWithinRange"),
    ("scaleDown with spec MinReplicas=nil limitation with large pod policy and previous events", 100, 0, 1, 1000,
     None, rules(115, 120, window=300), [], uniform([1, 5, 9]), 1, "TooFewReplicas"),
    ("scaleDown with spec MinReplicas limitation with large pod policy and previous events", 100, 0, 5, 1000,
     None, rules(130, 120, window=300), [], uniform([1, 5, 9]), 5, "TooFewReplicas"),
    ("scaleDown with spec MinReplicas limitation with large percent policy and previous events", 100, 2, 5, 1000,
     None, rules(percent=100, percent_period=120, window=300), [], uniform([1, 5, 9]), 5, "TooFewReplicas"),
    ("scaleDown with pod policy limitation and previous events", 100, 2, 1, 1000, None, rules(5, 120, window=300),
     [], uniform([1, 5, 9]), 100, "ScaleDownLimit"),  # 100 + 15 - 5 = 110 > 100: keep 100
    ("scaleDown with percent policy limitation and previous events", 100, 0, 1, 1000, None,
     rules(percent=50, percent_period=120, window=300), [], uniform([2, 4, 6]), 56, "ScaleDownLimit"),  # 112 / 2
    # period start 10 - 2 + 4 = 12; int(12 x 0.5) = 6
    ("scaleDown with percent policy and previous scale up and down events", 10, 1, 1, 1000, None,
     rules(percent=50, percent_period=180, window=0), uniform([2]), uniform([4]), 6, "ScaleDownLimit"),
    ("scaleDown with previous events preventing further scale down", 100, 0, 1, 1000, None,
     rules(percent=10, percent_period=120, window=300), [], uniform([10, 10, 10]), 100, "ScaleDownLimit"),
    ("scaleDown with with previous events still allowing more scale down", 10, 5, 1, 1000, None,
     rules(percent=1000, percent_period=120, window=300), [], uniform([10, 10, 10]), 5, "DesiredWithinRange"),
    ("check 'outdated' flag for events for one behavior for up", 100, 200, 1, 1000, rules(1000, 60, window=0),
     None, uniform([8, 12, 9, 11]), [], 200, "DesiredWithinRange"),
    ("check that events were not marked 'outdated' for two different policies in the behavior for up", 100, 200,
     1, 1000, rules(1000, 120, 100, 60, 0), None, uniform([8, 12, 9, 11]), [], 200, "DesiredWithinRange"),
    ("check that events were marked 'outdated' for two different policies in the behavior for up", 100, 200, 1,
     1000, rules(1000, 30, 100, 60, 0), None, uniform([8, 12, 9, 11]), [], 200, "DesiredWithinRange"),
    ("check 'outdated' flag for events for one behavior for down", 100, 5, 1, 1000, None,
     rules(1000, 60, window=300), [], uniform([8, 12, 9, 11]), 5, "DesiredWithinRange"),
    ("check that events were not marked 'outdated' for two different policies in the behavior for down", 100, 5,
     1, 1000, None, rules(1000, 120, 100, 60, 300), [], uniform([8, 12, 9, 11]), 5, "DesiredWithinRange"),
    ("check that events were marked 'outdated' for two different policies in the behavior for down", 100, 5, 1,
     1000, None, rules(1000, 30, 100, 60, 300), [], uniform([8, 12, 9, 11]), 5, "DesiredWithinRange"),
]
CONDITION = {"rate_limit": ("ScaleUpLimit", "ScaleDownLimit"), "clamp": ("TooManyReplicas", "TooFewReplicas")}


@pytest.mark.parametrize(("name", "current", "desired", "lo", "hi", "up", "down", "up_events", "down_events",
                          "expected", "condition"), SCALING_WITH_RULES, ids=[c[0] for c in SCALING_WITH_RULES])
def test_scaling_with_rules(name, current, desired, lo, hi, up, down, up_events, down_events, expected, condition):
    st = BehaviorState(up_events=list(up_events), down_events=list(down_events), seeded=True)
    up_rules = resolve(up or ScalingRules(), up=True)
    down_rules = resolve(down or ScalingRules(), up=False)
    got, reasons = limit_rate(NOW, st, up_rules, down_rules, current, desired, lo, hi, [])
    assert got == expected
    rules_fired = [r.rule for r in reasons]
    if condition == "DesiredWithinRange":
        assert rules_fired == []
    else:
        (rule,) = rules_fired
        assert condition in CONDITION[rule]


# (upstream case, past recommendations (value, seconds ago), current, desired, up window, down window, expected)
STABILIZE_WITH_BEHAVIORS = [
    ("empty recommendations for scaling down", [], 100, 5, 0, 0, 5),
    ("simple scale down stabilization", [(4, 120), (5, 60)], 100, 3, 0, 180, 5),
    ("simple scale up stabilization", [(4, 120), (5, 60)], 1, 7, 300, 0, 4),
    ("no scale down stabilization", [(1, 120), (2, 60)], 100, 3, 300, 0, 3),
    ("no scale up stabilization", [(4, 120), (5, 60)], 1, 3, 0, 300, 3),
    ("no scale down stabilization, reuse recommendation element", [(10, 600), (9, 540)], 100, 3, 0, 0, 3),
    ("no scale up stabilization, reuse recommendation element", [(10, 600), (9, 540)], 1, 100, 0, 0, 100),
    ("scale down stabilization, reuse one of obsolete recommendation element",
     [(10, 600), (4, 60), (5, 120), (9, 540)], 100, 3, 0, 180, 5),
    ("scale up stabilization, reuse one of obsolete recommendation element",
     [(10, 6000), (6, 60), (5, 120), (9, 180)], 1, 100, 300, 0, 5),
    ("scale up and down stabilization, do not scale up when prenormalized rec goes down",
     [(2, 6000), (3, 180)], 2, 1, 300, 300, 2),
    ("scale up and down stabilization, do not scale down when prenormalized rec goes up",
     [(2, 6000), (1, 180)], 2, 3, 300, 300, 2),
]


@pytest.mark.parametrize(("name", "recs", "current", "desired", "up_window", "down_window", "expected"),
                         STABILIZE_WITH_BEHAVIORS, ids=[c[0] for c in STABILIZE_WITH_BEHAVIORS])
def test_stabilize_recommendation_with_behaviors(name, recs, current, desired, up_window, down_window, expected):
    st = BehaviorState(recommendations=[(NOW - ago, r) for r, ago in recs], seeded=True)
    up = resolve(ScalingRules(stabilization_window_seconds=up_window), up=True)
    down = resolve(ScalingRules(stabilization_window_seconds=down_window), up=False)
    got, _ = stabilize(NOW, st, up, down, current, desired)
    assert got == expected
    assert (NOW, desired) in st.recommendations  # the unstabilised recommendation is recorded
    # upstream reuses an obsolete slot of its log instead of appending; the log's length is its bookkeeping,
    # what matters is that nothing older than both windows is kept
    keep = max(up_window, down_window)
    assert all(t > NOW - keep or t == NOW for t, _ in st.recommendations)


# TestNormalizeDesiredReplicas: the legacy path (no behavior), 5 min downscale window, never scaling up past
# the legacy limit here (max 1000)
LEGACY_STABILIZE = [
    ("empty log", [], 5, 5),
    ("stabilize", [(4, 120), (5, 60)], 3, 5),
    ("no stabilize", [(1, 120), (2, 60)], 3, 3),
    ("no stabilize - old recommendations", [(10, 600), (9, 540)], 3, 3),
    ("stabilize - old recommendations", [(10, 600), (4, 60), (5, 120), (9, 540)], 3, 5),
]


@pytest.mark.parametrize(("name", "recs", "desired", "expected"), LEGACY_STABILIZE, ids=[c[0] for c in LEGACY_STABILIZE])
def test_legacy_stabilize_recommendation(name, recs, desired, expected):
    st = BehaviorState(recommendations=[(NOW - ago, r) for r, ago in recs], seeded=True)
    # current 5 (the test's recommendations decide; 5 sits inside the legacy limit max(2 x 5, 4) = 10)
    got, _ = normalize_legacy(NOW, st, 300.0, 5, desired, 1, 1000)
    assert got == expected


@pytest.mark.parametrize(("name", "current", "desired", "lo", "hi", "expected", "rule"), [
    ("prenormalized desired replicas within range", 5, 7, 3, 8, 7, None),
    ("prenormalized desired replicas < minReplicas", 3, 1, 2, 8, 2, "clamp"),
    ("prenormalized desired zeroed replicas within range", 1, 0, 0, 10, 0, None),
    ("maxReplicas is the limit because maxReplicas < scaleUpLimit", 20, 1000, 1, 10, 10, "clamp"),
    # calculateScaleUpLimit(3) = max(2 x 3, 4) = 6 with the controller's factor 2 (the test sets it to 8: 24)
    ("scaleUpLimit is the limit because scaleUpLimit < maxReplicas", 3, 1000, 1, 2000, 6, "rate_limit"),
])
def test_convert_desired_replicas_with_rules(name, current, desired, lo, hi, expected, rule):
    st = BehaviorState(seeded=True)
    got, reasons = normalize_legacy(NOW, st, 0.0, current, desired, lo, hi)
    assert got == expected
    assert [r.rule for r in reasons if r.rule != "stabilisation"] == ([rule] if rule else [])


def test_calculate_scale_up_limit_with_scaling_rules():
    # select Min over Pods 2 (1 + 2 = 3) and Percent 50 (ceil(1 x 1.5) = 2) -> 2
    r = resolve(rules(2, 60, 50, 60, window=300, select="Min"), up=True)
    assert scale_up_limit(1, BehaviorState(), r, NOW) == 2


def test_calculate_scale_down_limit_with_behaviors():
    # select Min over Pods 2 (5 - 2 = 3) and Percent 50 (int(5 x 0.5) = 2): the smaller change, 3
    r = resolve(rules(2, 60, 50, 60, window=300, select="Min"), up=False)
    assert scale_down_limit(5, BehaviorState(), r, NOW) == 3
