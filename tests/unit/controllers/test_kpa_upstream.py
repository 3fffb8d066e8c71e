"""Knative's autoscaler_test.go cases, ported onto controllers/kpa.py.

Source: knative/serving pkg/autoscaler/scaling/autoscaler_test.go (commit
3ec30c403cecdd287289e0bc96a232599414e45a), against autoscaler.go's Scale (commit
15413aba92771d321016fa471a1bea35b7cc96c2 and the ActivationScale branch of later versions).

Upstream injects the window averages (metricClient StableConcurrency / PanicConcurrency)
and the ready count (fakePodCounter); here they go to ``KPA.scale``, the step after the
windows, with the same state object across calls. Upstream's test DeciderSpec
(newTestAutoscaler): TargetValue = the first argument, PanicThreshold 2 (200 %),
MaxScaleUpRate 10, MaxScaleDownRate 10, StableWindow 60 s; our target_value is
target x target_utilization, so the tests set utilisation 1.0 and target = TargetValue.
The target-burst-capacity argument and the ExcessBurstCapacity / NumActivators results
are the activator's (not modelled: there is no activator in the request path) and are
not checked.

Not ported: Reachable=false (AutoscalerStableModeDecreaseNonReachable,
ScaleDownDelayNotReachable: one revision per variant, always reachable), the RPS metric
(MetricsWithRPS, StableModeIncreaseWithRPS), pod-counter errors (CantCountPods, NewFail),
the OpenTelemetry gauges (StartMetrics, Metrics) and PausingCollection.
"""
from __future__ import annotations

import pytest

from scalearena.controllers.kpa import KPA, KPAConfig, _State
from tests.unit.viewkit import variant, view


def knative(target: float, **kw) -> KPA:
    base = dict(target=target, target_utilization=1.0, panic_threshold_percentage=200.0,
                max_scale_up_rate=10.0, max_scale_down_rate=10.0, stable_window_s=60.0)
    base.update(kw)
    return KPA(KPAConfig(**base))


class Scaler:
    """One upstream autoscaler: a KPA, its per-revision state and the fake pod counter."""

    def __init__(self, kpa: KPA, ready: int = 1, created: float = 0.0) -> None:
        self.kpa, self.ready = kpa, ready
        self.state: _State = KPA.new_state(created, ready)

    def scale(self, now: float, stable: float, panic: float) -> int:
        return self.kpa.scale(now, self.state, stable, panic, self.ready)[0]


# TestAutoscalerScale: (label, target, stable, panic, ready, config overrides, prep, want)
SCALE_TABLE = [
    ("AutoscalerStableModeUnlimitedTBC", 181, 21.0, 26, 1, {}, None, 1),  # ceil(21 / 181) = 1
    ("Autoscaler0TBC", 10, 50.0, 49, 1, {}, None, 5),  # ceil(50 / 10) = 5; panic ceil(4.9) = 5 / 1 -> panic, max 5
    ("AutoscalerStableModeNoChange", 10, 50.0, 50, 1, {}, None, 5),
    # panicking since 5 s ago holding 5: stable ceil(50 / 1) = 50 > panic 30 -> the larger, 50
    ("AutoscalerPanicStableLargerThanPanic", 1, 50, 30, 5, {}, (-5, 5), 50),
    ("AutoscalerPanicStableLessThanPanic", 1, 20, 30, 5, {}, (-5, 5), 30),
    ("AutoscalerStableModeNoChangeAlreadyScaled", 10, 50.0, 50, 5, {}, None, 5),
    # up rate 1.1 on 2 ready: ceil(2.2) = 3 pods at most; ceil(3 / 1) = 3 fits
    ("AutoscalerStableModeIncreaseWithSmallScaleUpRate", 1, 3, 3.1, 2, {"max_scale_up_rate": 1.1}, None, 3),
    # down rate 1.1 on 100 ready: floor(100 / 1.1) = 90 pods at least
    ("AutoscalerStableModeDecreaseWithSmallScaleDownRate", 10, 1, 1, 100, {"max_scale_down_rate": 1.1}, None, 90),
    # panic ceil(100 / 10) = 10 / 1 ready >= 2 -> panic; max(5, 10) = 10
    ("AutoscalerPanicModeDoublePodCount", 10, 50, 100, 1, {}, None, 10),
]


@pytest.mark.parametrize("label,target,stable,panic,ready,over,prep,want", SCALE_TABLE,
                         ids=[r[0] for r in SCALE_TABLE])
def test_autoscaler_scale(label, target, stable, panic, ready, over, prep, want):
    s = Scaler(knative(target, **over))  # created with the fake counter's default 1 ready pod
    s.ready = ready
    now = 100.0
    if prep is not None:
        s.state.panic_since, s.state.max_panic_pods = now + prep[0], prep[1]
    assert s.scale(now, stable, panic) == want


def test_no_data_at_zero_no_autoscale():
    # AutoscalerNoDataAtZeroNoAutoscale: no data -> upstream's result is invalid (not applied);
    # here the decision keeps the current scale
    d = knative(10).decide(0, view(0, variant(spec=1, ready=1, metrics_available=False)))[0]
    assert d.desired_replicas == 1 and d.reasons[0].rule == "metrics_unavailable"


def test_no_data_no_autoscale():
    # TestAutoscalerNoDataNoAutoscale
    d = knative(10).decide(0, view(0, variant(spec=3, ready=3, metrics_available=False)))[0]
    assert d.desired_replicas == 3


def test_scale_down_delay():
    # TestAutoscalerScaleDownDelay: target 10, PanicThreshold 100 (x; ours caps at 1000 %, never
    # reached here: at most 4 pods / 1), ScaleDownDelay 5 min, no ready pods (counted as 1)
    s = Scaler(knative(10, panic_threshold_percentage=1000.0, scale_down_delay_s=300.0), ready=0)
    # simple
    assert s.scale(2, 40, 40) == 4
    assert s.scale(300, 0, 0) == 4  # 5 min at 0: the 4 recorded at 2 s is still in the window
    assert s.scale(302, 0, 0) == 0  # 5 min 2 s: scrolled out
    # gradual
    assert s.scale(540, 40, 40) == 4
    assert s.scale(600, 30, 30) == 4  # 4 still dominates
    assert s.scale(660, 0, 0) == 4
    assert s.scale(840, 0, 0) == 3  # the 4 scrolls out, the 3 of 10 min remains
    assert s.scale(900, 0, 0) == 0  # everything scrolled out


def test_scale_down_delay_zero():
    # TestAutoscalerScaleDownDelayZero: no delay -> the latest value, even within a tick
    s = Scaler(knative(10, panic_threshold_percentage=1000.0, scale_down_delay_s=0.0), ready=0)
    assert s.scale(0, 40, 40) == 4
    assert s.scale(0.5, 20, 20) == 2


def test_stable_mode_increase_with_concurrency_default():
    # TestAutoscalerStableModeIncreaseWithConcurrencyDefault
    s = Scaler(knative(10))
    assert s.scale(0, 50, 10) == 5
    assert s.scale(0, 100, 10) == 10


def test_unpanic_after_slow_increase():
    # TestAutoscalerUnpanicAfterSlowIncrease: target 1
    s = Scaler(knative(1))
    s.ready = 10
    assert s.scale(0, 11, 25) == 25  # ceil(25) / 10 = 2.5 >= 2: panic at 0
    assert s.state.panic_since == 0
    s.ready = 25 + 15  # half a stable window later, +1 pod per tick
    assert s.scale(30, 30, 41) == 41  # 41 / 40 < 2: not over, still panicking; max(30, 41)
    assert s.state.panic_since == 0  # not moved
    s.ready = 25 + 30
    assert s.scale(62, 50, 56) == 50  # 0 + 60 < 62: panic over -> the stable 50
    assert s.state.panic_since is None


def test_extend_panic_window():
    # TestAutoscalerExtendPanicWindow
    s = Scaler(knative(1))
    s.ready = 10
    assert s.scale(0, 11, 25) == 25
    s.ready = 40
    assert s.scale(30, 30, 80) == 80  # 80 / 40 = 2 >= 2: still over -> panic time moves
    assert s.state.panic_since == 30


def test_stable_mode_decrease():
    # TestAutoscalerStableModeDecrease: 8 ready (after creation at 1)
    s = Scaler(knative(10))
    s.ready = 8
    assert s.scale(0, 100, 100) == 10  # 10 / 8 < 2: stable
    assert s.scale(1, 50, 50) == 5  # floor(8 / 10) = 0 allows it


def test_stable_mode_no_traffic_scale_to_zero():
    # TestAutoscalerStableModeNoTrafficScaleToZero: the autoscaler wants 0 at once (the
    # reconciler's scale-to-zero grace is applied after it: test_kpa.py)
    s = Scaler(knative(10))
    assert s.scale(0, 1, 0) == 1
    assert s.scale(1, 0, 0) == 0


def test_activation_scale():
    # TestAutoscalerActivationScale: activation scale 2 applies only with demand
    s = Scaler(knative(10, activation_scale=2))
    assert s.scale(0, 0, 0) == 0
    assert s.scale(1, 1, 0) == 2


def test_panic_mode_exponential_track_and_stabilize():
    # TestAutoscalerPanicModeExponentialTrackAndStabilize: target 1, x6 per step under the x10 cap
    s = Scaler(knative(1))
    assert s.scale(0, 6, 6) == 6
    for ready, conc in ((6, 36), (36, 216), (216, 1296)):
        s.ready = ready
        assert s.scale(1, conc, conc) == conc
        assert s.state.panic_since == 1
    s.ready = 1296
    assert s.scale(2, 1296, 1296) == 1296


def test_panic_then_unpanic_scale_down():
    # TestAutoscalerPanicThenUnPanicScaleDown: target 10
    s = Scaler(knative(10))
    assert s.scale(0, 100, 100) == 10
    s.ready = 10
    assert s.scale(1, 100, 1000) == 100  # panic at 1
    assert s.scale(31, 1, 1) == 100  # traffic gone, still panicking: no scale-down
    assert s.scale(62, 1, 1) == 1  # 1 + 60 < 62: out of panic; floor(10 / 10) = 1


def test_rate_limit_scale_up():
    # TestAutoscalerRateLimitScaleUp: needs 100 pods, x10 per step
    s = Scaler(knative(10))
    assert s.scale(0, 1000, 1001) == 10
    s.ready = 10
    assert s.scale(0, 1000, 1001) == 100


def test_rate_limit_scale_down():
    # TestAutoscalerRateLimitScaleDown: needs 1 pod, /10 per step
    s = Scaler(knative(10))
    s.ready = 100
    assert s.scale(0, 1, 1) == 10
    s.ready = 10
    assert s.scale(0, 1, 1) == 1


def test_use_one_pod_as_minimum_if_endpoints_not_found():
    # TestAutoscalerUseOnePodAsMinimumIfEndpointsNotFound: 0 ready counts as 1 -> at most 10
    s = Scaler(knative(10))
    s.ready = 0
    assert s.scale(0, 1000, 888) == 10


def test_update_target():
    # TestAutoscalerUpdateTarget: a new DeciderSpec keeps the state
    s = Scaler(knative(10))
    assert s.scale(0, 100, 101) == 10
    s.ready = 10
    s.kpa.config = KPAConfig(**{**s.kpa.config.model_dump(), "target": 1.0})
    assert s.scale(0, 100, 101) == 100


@pytest.mark.parametrize("ready,panicking,max_panic", [(0, False, 0), (1, False, 1), (2, True, 2)])
def test_start_in_panic_mode(ready, panicking, max_panic):
    # TestStartInPanicMode: created over 1 ready pod -> panic, max panic pods = the ready count
    st = KPA.new_state(0.0, ready)
    assert (st.panic_since is not None) == panicking and st.max_panic_pods == max_panic


def test_start_in_panic_holds_the_scale_through_decide():
    # the same through decide: 4 ready at the first tick, nothing in flight -> held at 4 for the
    # stable window (upstream: "keeping at least the current scale until we accumulate data")
    k = knative(10)
    v = variant(spec=4, ready=4)
    assert k.decide(0, view(0, v))[0].desired_replicas == 4
    assert k.decide(60, view(60, v))[0].desired_replicas == 4
    assert k.decide(62, view(62, v))[0].desired_replicas == 1  # floor(4 / 10) = 0 -> min 1
