"""Cases ported from upstream's own tests (facts only: inputs and expected outputs; our code).

Kubernetes pkg/controller/podautoscaler/replica_calculator_test.go: the custom-metric ("CM") cases,
whose quantities are milli-units (``levels`` 20000 = 20.0). Pods are counted as upstream's test
harness builds them: ``currentReplicas`` pods (or one per ``podReadiness`` entry), those without a
level are missing; for Pods metrics readiness does not matter (only CPU checks it), phase Pending
makes a pod unready. Each row names its upstream test.
"""
from __future__ import annotations

import pytest

from scalearena.controllers.hpa.replicas import (
    external_average_replicas,
    external_value_replicas,
    pods_metric_replicas,
)

TOL = 0.1  # defaultTestingTolerance

# (upstream test, current, levels (milli), target (milli), missing, unready, expected)
PODS_CASES = [
    # 20000+10000+30000 / 3 = 20000 vs 15000 -> 1.333 x 3 = 4
    ("TestReplicaCalcScaleUpCM", 3, [20000, 10000, 30000], 15000, 0, 0, 4),
    # the not-Ready (Running) pod still counts with its sample: avg 30000 / 15000 = 2 x 3 = 6
    ("TestReplicaCalcScaleUpCMUnreadyHotCpuNoLessScale", 3, [50000, 10000, 30000], 15000, 0, 0, 6),
    # avg 95000 // 3 = 31666 / 15000 = 2.111 x 3 = 6.33 -> 7
    ("TestReplicaCalcScaleUpCMUnreadyHotCpuScaleWouldScaleDown", 3, [50000, 15000, 30000], 15000, 0, 0, 7),
    # avg 62000 // 3 = 20666 / 20000 = 1.033: inside the 0.1 tolerance -> keep 3
    ("TestReplicaCalcToleranceCM", 3, [20000, 21000, 21000], 20000, 0, 0, 3),
    # 12000 / 20000 = 0.6 x 5 = 3
    ("TestReplicaCalcScaleDownCM", 5, [12000] * 5, 20000, 0, 0, 3),
    # 5 pods, 3 levels averaging exactly the target: ratio 1.0, the 2 missing are not filled -> 5
    ("TestPlainMetricReplicaCalcMissingMetricsNoChangeEq", 5, [20000, 19000, 21000], 20000, 2, 0, 5),
    # 3 running pods (one surge), 2 levels: 10000 / 17000 < 1, the missing one counts 17000:
    # (10000+10000+17000)/3 = 12333 -> 0.7255 x 3 = 2.18 -> 3 > current 2 on a scale-down -> keep 2
    ("TestReplicaCalcDuringRollingUpdateWithMaxSurgeCM", 2, [10000, 10000], 17000, 1, 0, 2),
]


@pytest.mark.parametrize(("name", "current", "levels", "target", "missing", "unready", "expected"), PODS_CASES,
                         ids=[c[0] for c in PODS_CASES])
def test_pods_metric_cases(name, current, levels, target, missing, unready, expected):
    p = pods_metric_replicas(current, [x / 1000 for x in levels], target / 1000, missing, unready, TOL, TOL)
    assert p.replicas == expected, name


def test_external_value_ignores_unready_pods():
    # TestReplicaCalcScaleUpCMExternalIgnoresUnreadyPods: current 3, 1 ready pod, 8600 / 4400 = 1.954
    # x 1 ready -> 2 ("would expect 6 if we didn't ignore unready pods")
    assert external_value_replicas(3, 1, 8.6, 4.4, TOL, TOL).replicas == 2


def test_external_value_tolerance():
    # TestReplicaCalcToleranceCMExternal: 8600 / 8888 = 0.9676, inside tolerance -> keep 3
    assert external_value_replicas(3, 3, 8.6, 8.888, TOL, TOL).replicas == 3


def test_external_value_scale_down():
    # TestReplicaCalcScaleDownCMExternal: current 5, all ready, 8600 / 14334 = 0.59997 x 5 = 2.9999 -> 3
    assert external_value_replicas(5, 5, 8.6, 14.334, TOL, TOL).replicas == 3


@pytest.mark.parametrize(("name", "current", "total", "per_pod", "expected"), [
    # ceil(8600 / 2150) = 4; ratio 8600 / (2150 x 3) = 1.333 is outside tolerance
    ("TestReplicaCalcScaleUpPerPodCMExternal", 3, 8600, 2150, 4),
    # ceil(8600 / 2867) = ceil(2.9996) = 3; ratio 8600 / (2867 x 5) = 0.6 outside tolerance
    ("TestReplicaCalcScaleDownPerPodCMExternal", 5, 8600, 2867, 3),
    # ratio 8600 / (2900 x 3) = 0.9885, inside tolerance -> keep 3
    ("TestReplicaCalcTolerancePerPodCMExternal", 3, 8600, 2900, 3),
])
def test_external_average_value_cases(name, current, total, per_pod, expected):
    assert external_average_replicas(current, total / 1000, per_pod / 1000, TOL, TOL).replicas == expected, name
