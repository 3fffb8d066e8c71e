"""``predictive``: the inner policy's signals scaled by the forecast ratio, and nothing else changed."""
from __future__ import annotations

import pytest
from pydantic import ValidationError

from scalearena.controllers.hpa import HPA, HPAConfig
from scalearena.controllers.predictive import Predictive, PredictiveConfig, ScaledMetrics, scaled_pod
from scalearena.controllers.predictors import PredictorConfig
from tests.unit.controllers.test_planner import GatewayMetrics
from tests.unit.viewkit import FakeMetrics, pod, variant, view


def rate_metrics(requests):
    return GatewayMetrics({"inference_objective_request_total": requests})


def test_scaled_pod_and_windowed_reads():
    p = scaled_pod(pod(0, kv=0.3, waiting=3, running=4, gpu=0.5), 1.5)
    # 0.3 x 1.5 = 0.45, round(4.5) = 4 (banker's), round(6.0) = 6, 0.75
    assert (p.kv_usage, p.waiting, p.running, p.gpu_util) == (pytest.approx(0.45), 4, 6, 0.75)

    class Reader(FakeMetrics):
        def pod_max_over_time(self, variant, metric, window_s):
            return {"p0": 2.0}

    m = ScaledMetrics(Reader(), 2.0)
    assert m.pod_max_over_time("v", "vllm:num_requests_waiting", 60) == {"p0": 4.0}
    assert m.pod_max_over_time("v", "vllm:cache_config_info", 60) == {"p0": 2.0}  # not a load metric


def test_rising_rate_scales_hpa_signals_one_cold_start_ahead():
    cfg = PredictiveConfig(inner={"kind": "hpa"}, interval_s=30, predictor=PredictorConfig(kind="kalman", min_points=2))
    w = Predictive(cfg)
    v = variant(spec=2, pods=[pod(0, waiting=3, kv=0.5), pod(1, waiting=3, kv=0.5)], startup_s=30)
    w.decide(0.0, view(0.0, v, metrics=rate_metrics(0)))  # first observation point: the backlog baseline
    w.decide(30.0, view(30.0, v, metrics=rate_metrics(60)))  # 2 req/s: one point, Kalman needs 2 -> ratio 1
    (d,) = w.decide(60.0, view(60.0, v, metrics=rate_metrics(120)))  # 4 req/s
    lead = d.reasons[0]
    assert lead.rule == "predictive"
    # horizon = startup 30 + HPA period 15 = 45 s -> ceil(45/30) = 2 steps. Kalman after 2 then 4:
    # level = 2 + 2 x 2001/2011 = 3.990, trend = 2 x 1000/2011 = 0.9945; 2 steps: 3.990 + 1.989 = 5.979
    level, trend = 2 + 2 * 2001 / 2011, 2 * 1000 / 2011
    assert lead.values["predicted_rps"] == pytest.approx(level + 2 * trend)
    assert lead.values["ratio"] == pytest.approx((level + 2 * trend) / 4)
    # the HPA sees waiting round(3 x 1.495) = 4 per pod: 4/3 = 1.33 -> ceil(2 x 1.33) = 3 (plain HPA: 3/3 = 1, holds 2)
    plain = HPA(HPAConfig()).decide(60.0, view(60.0, v))[0]
    assert plain.desired_replicas == 2 and d.desired_replicas == 3


def test_falling_rate_does_not_scale_down_ahead_by_default():
    w = Predictive(PredictiveConfig(interval_s=30, predictor=PredictorConfig(kind="constant")))
    v = variant(spec=2, pods=[pod(0, waiting=3), pod(1, waiting=3)])
    for t, req in ((0, 0), (30, 120), (60, 30)):
        (d,) = w.decide(float(t), view(float(t), v, metrics=rate_metrics(req)))
    assert d.reasons[0].values["ratio"] == 1.0  # constant forecast = observed; and min_ratio 1 floors any dip


def test_decisions_carry_the_forecast_error_of_the_horizon_they_forecast():
    # constant predictor, 30 s intervals, horizon startup 30 + HPA period 15 = 45 s -> 2 steps: the forecast made
    # after observation k is the rate of observation k + 2
    w = Predictive(PredictiveConfig(interval_s=30, predictor=PredictorConfig(kind="constant")))
    v = variant(spec=2, pods=[pod(0, waiting=3), pod(1, waiting=3)], startup_s=30)
    # requests per interval 60, 120, 90, 150 -> observed 2, 4, 3, 5 req/s
    for t, req in ((0, 0), (30, 60), (60, 120), (90, 90)):
        (d,) = w.decide(float(t), view(float(t), v, metrics=rate_metrics(req)))
    # obs 3 = 3 req/s against the forecast made after obs 1 (2 req/s): |2 - 3| / 3 = 0.3333
    assert d.reasons[0].values["predictor_mape"] == pytest.approx(1 / 3)
    (d,) = w.decide(120.0, view(120.0, v, metrics=rate_metrics(150)))
    # obs 4 = 5 against 4 (made after obs 2): 0.2; MAPE (1/3 + 0.2) / 2 = 0.26667
    lead = d.reasons[0]
    assert lead.values["predictor_mape"] == pytest.approx((1 / 3 + 0.2) / 2)
    assert lead.values["forecasts_checked"] == 2 and "forecast MAPE 0.267 over 2" in lead.message


def test_inner_config_is_validated_and_no_nesting():
    with pytest.raises(ValidationError):
        PredictiveConfig(inner={"kind": "hpa", "tolerance": 5})
    with pytest.raises(ValidationError):
        PredictiveConfig(inner={"kind": "predictive"})
    assert Predictive(PredictiveConfig(inner={"kind": "wva"})).period_s == 30.0
