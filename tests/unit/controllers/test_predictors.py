"""Load predictors: hand-worked constant / Kalman values, library fits on known series, fallbacks."""
from __future__ import annotations

import math

import pytest

from scalearena.controllers.predictors import LoadPredictor, PredictorConfig


def pred(kind, values, step=60.0, **kw):
    p = LoadPredictor(PredictorConfig(kind=kind, **kw), step)
    for v in values:
        p.add(v)
    return p


def test_constant_is_the_last_value_and_leading_zeros_are_skipped():
    p = pred("constant", [0, 0, 3, 0, 5])
    assert p.values == [3, 0, 5]  # zeros before traffic dropped, later zeros kept
    assert p.predict().value == 5 and p.predict().used == "constant"


def test_kalman_one_step_by_hand():
    # x0 = [10, 0], P0 = 1000 I. Predict: P = F P F' + Q = [[2001, 1000], [1000, 1000.1]].
    # Update with z = 20: S = 2001 + 10 = 2011, K = [2001/2011, 1000/2011], residual 10:
    # level = 10 + 10 x 2001/2011 = 19.9503, trend = 10 x 1000/2011 = 4.9727; one step ahead = 24.923,
    # two steps = level + 2 x trend = 29.896
    p = pred("kalman", [10, 20], min_points=2)
    assert p.predict(1).value == pytest.approx(10 + 10 * 2001 / 2011 + 10 * 1000 / 2011)
    assert p.predict(2).value == pytest.approx(10 + 10 * 2001 / 2011 + 20 * 1000 / 2011)


def test_too_little_history_falls_back_to_constant_with_the_reason():
    f = pred("arima", [4, 5, 6]).predict()
    assert (f.value, f.used, f.fallback) == (6, "constant", "arima needs 5 points, has 3")
    f = pred("seasonal_naive", [1, 2, 3], season_length=4).predict()
    assert f.fallback == "seasonal_naive needs 4 points, has 3"


def test_a_flat_series_forecasts_its_value():
    assert pred("arima", [7.0] * 6).predict().value == 7.0


def test_arima_follows_a_linear_trend():
    # y = 10, 12, ..., 38 (15 points, slope 2): auto-ARIMA picks a drift model; the next value is 40
    f = pred("arima", [10 + 2 * k for k in range(15)]).predict()
    assert f.used == "arima" and f.value == pytest.approx(40.0, abs=1.0)


def test_seasonal_naive_repeats_the_last_season():
    # season of 4 points (season_s 240 / step 60); the value one season before the next point is 30
    day = [10, 20, 30, 40]
    f = pred("seasonal_naive", day * 3, season_s=240).predict()
    assert (f.value, f.used) == (10, "seasonal_naive")
    assert pred("seasonal_naive", day * 3 + [11], season_s=240).predict().value == 20


def test_log1p_space_round_trips():
    p = pred("kalman", [math.e - 1, math.e - 1], min_points=2, log1p=True)
    assert p.predict().value == pytest.approx(math.e - 1)  # level 1.0 in log1p space, no trend


def test_refit_schedule_reuses_the_fitted_model_between_refits():
    p = pred("arima", [10 + 2 * k for k in range(6)], refit_every=3)
    p.predict()
    fitted = p._model
    p.add(22)
    p.predict()
    assert p._model is fitted  # 1 new point < 3: forward, no refit
    p.add(24)
    p.add(26)
    p.predict()
    assert p._model is not fitted


def test_prophet_without_the_package_is_refused_at_config_time(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == "prophet" else real(n, *a))
    with pytest.raises(ValueError, match="scalearena\\[prophet\\]"):
        PredictorConfig(kind="prophet")
