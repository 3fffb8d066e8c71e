"""Load predictors: the next interval's value of a traffic series (request count, mean ISL / OSL).

The family and its parameters follow NVIDIA Dynamo's planner (ai-dynamo/dynamo
components/src/dynamo/planner/core/load/predictors.py, planner_config defaults):

- ``constant``: next = last observed value.
- ``arima``: auto-ARIMA, here statsforecast's ``AutoARIMA`` (Dynamo uses pmdarima's auto_arima);
  at least 5 points; a series with one distinct value predicts that value (auto-ARIMA would
  return 0); optional log1p space.
- ``kalman``: a local-linear-trend Kalman filter (filterpy ``KalmanFilter``, state [level, trend],
  F = [[1, 1], [0, 1]], H = [1, 0], Q = diag(q_level, q_trend), R = r, P0 = 1000 I), Dynamo's
  defaults q_level 1.0, q_trend 0.1, r 10.0, at least 5 points.
- ``prophet``: Meta's Prophet on the last ``prophet_window_size`` (50) points, timestamps one
  step apart; an optional extra (``pip install 'scalearena[prophet]'``), refused at config time
  when it is not installed.
- ``seasonal_naive`` (scalearena's addition for diurnal traffic): statsforecast's
  ``SeasonalNaive``: the value one season earlier; needs a full season of history (a warm-start
  trace supplies it).

Leading zeros (the idle period before traffic starts) are skipped, as Dynamo does. A predictor
with less history than it needs answers with ``constant`` and says why (``Forecast.fallback``);
a fit that fails does the same. Fitting is refit on a schedule: auto-ARIMA and Prophet are fit
again every ``refit_every`` new points and in between the fitted model is applied to the grown
series (statsforecast ``forward``; Prophet predicts the next timestamp with its fitted model),
which keeps a decision to ~0.6-1.6 ms between refits (an ARIMA fit: 0.5-1.0 s on 57-360 points;
Kalman 0.05-0.1 ms a decision; measured by benchmarks/predictors.py on a 2-core machine).
Fitting is deterministic (Prophet gets a fixed Stan seed).

Written here: only the buffering, the fallback rule and the h-step Kalman prediction (F^h x);
every fit is the library's.
"""
from __future__ import annotations

import importlib.util
import logging
import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from pydantic import Field, model_validator

from scalearena.contracts.limits import StrictSpec
from scalearena.contracts.tunable import tune_choices

PredictorKind = Literal["constant", "arima", "kalman", "prophet", "seasonal_naive"]


class PredictorConfig(StrictSpec):
    """How the next interval's load is forecast (Dynamo's ``load_predictor`` settings)."""

    kind: PredictorKind = Field(default="arima", description="constant | arima | kalman | prophet | "
                                "seasonal_naive (Dynamo's default: arima).",
                                json_schema_extra=tune_choices("constant", "arima", "kalman"))
    log1p: bool = Field(default=False, description="load_predictor_log1p: fit in log1p space.",
                        json_schema_extra=tune_choices(False, True))
    min_points: int = Field(default=5, ge=1, le=10_000, description="Points before arima / kalman / prophet "
                            "forecast (Dynamo: 5, kalman_min_points 5); fewer -> constant.")
    refit_every: int = Field(default=5, ge=1, le=10_000, description="Refit arima / prophet every this many "
                             "new points; in between the fitted model is applied to the new data.")
    kalman_q_level: float = Field(default=1.0, gt=0, description="Kalman process noise of the level.")
    kalman_q_trend: float = Field(default=0.1, gt=0, description="Kalman process noise of the trend.")
    kalman_r: float = Field(default=10.0, gt=0, description="Kalman measurement noise.")
    prophet_window_size: int = Field(default=50, ge=2, le=10_000, description="Prophet fits the last this "
                                     "many points.")
    season_length: int | None = Field(default=None, ge=2, le=100_000, description="seasonal_naive: points per "
                                      "season; null: season_s / the step.")
    season_s: float = Field(default=86_400.0, gt=0, description="seasonal_naive: season length in seconds "
                            "(a day; a day compressed into an hour: 3600).")

    @model_validator(mode="after")
    def _prophet_installed(self) -> PredictorConfig:
        if self.kind == "prophet" and importlib.util.find_spec("prophet") is None:
            raise ValueError("predictor prophet needs the optional Prophet package: "
                             "pip install 'scalearena[prophet]' (or choose arima, kalman, constant, seasonal_naive)")
        return self


@dataclass(frozen=True)
class Forecast:
    value: float  # the predicted value h steps ahead (>= 0)
    used: str  # the predictor that produced it
    fallback: str | None = None  # why the chosen predictor was not used (None: it was)


class LoadPredictor:
    """One series' predictor; ``step_s`` is the spacing of its points (the adjustment interval)."""

    def __init__(self, config: PredictorConfig, step_s: float) -> None:
        self.c, self.step_s = config, step_s
        self.values: list[float] = []  # raw values, leading zeros skipped
        self._model: Any = None
        self._fit_at = 0  # len(values) at the last fit
        self._kf: Any = None

    def add(self, value: float) -> None:
        v = value if math.isfinite(value) else 0.0
        if v == 0.0 and not any(self.values):
            return  # the idle period before traffic (Dynamo's leading-zero skip)
        self.values.append(max(0.0, v))
        if self.c.kind == "kalman":
            self._kalman_update(self._space(self.values[-1]))

    def _space(self, v: float) -> float:
        return math.log1p(v) if self.c.log1p else v

    def _back(self, v: float) -> float:
        return max(0.0, math.expm1(v) if self.c.log1p else v)

    def last(self) -> float:
        return self.values[-1] if self.values else 0.0

    def predict(self, h: int = 1) -> Forecast:
        kind, n = self.c.kind, len(self.values)
        if kind == "constant":
            return Forecast(self.last(), "constant")
        need = self._needs()
        if n < need:
            return Forecast(self.last(), "constant", f"{kind} needs {need} points, has {n}")
        if kind != "kalman" and len(set(self.values)) == 1:
            return Forecast(self.values[0], kind)  # a flat series: its value (auto-ARIMA would say 0)
        try:
            return Forecast(self._predict(kind, h), kind)
        except Exception as e:  # a library fit that fails must not stop the run: say so and hold the last value
            return Forecast(self.last(), "constant", f"{kind} fit failed: {type(e).__name__}: {e}"[:200])

    def _needs(self) -> int:
        if self.c.kind == "seasonal_naive":
            return self.season_length()
        return self.c.min_points

    def season_length(self) -> int:
        return self.c.season_length or max(2, round(self.c.season_s / self.step_s))

    def _predict(self, kind: str, h: int) -> float:
        if kind == "kalman":
            assert self._kf is not None
            x = np.linalg.matrix_power(self._kf.F, h) @ self._kf.x
            return self._back(float(x[0, 0]))
        y = np.array([self._space(v) for v in self.values], dtype=float)
        if kind == "seasonal_naive":
            from statsforecast.models import SeasonalNaive

            out = SeasonalNaive(season_length=self.season_length()).forecast(y=y, h=h)["mean"]
            return self._back(float(out[-1]))
        if kind == "arima":
            return self._back(self._arima(y, h))
        return self._back(self._prophet(y, h))

    def _refit_due(self) -> bool:
        return self._model is None or len(self.values) - self._fit_at >= self.c.refit_every

    def _arima(self, y: np.ndarray, h: int) -> float:
        from statsforecast.models import AutoARIMA

        if self._refit_due():
            self._model, self._fit_at = AutoARIMA().fit(y), len(self.values)
            return float(self._model.predict(h=h)["mean"][-1])
        return float(self._model.forward(y=y, h=h)["mean"][-1])

    def _prophet(self, y: np.ndarray, h: int) -> float:
        import pandas as pd

        w = self.c.prophet_window_size
        start = pd.Timestamp("2024-01-01")
        ds = [start + pd.Timedelta(seconds=self.step_s * k) for k in range(len(y))]
        if self._refit_due():
            from prophet import Prophet

            for name in ("prophet", "cmdstanpy"):
                logging.getLogger(name).setLevel(logging.WARNING)
            model = Prophet()
            model.fit(pd.DataFrame({"ds": ds[-w:], "y": y[-w:]}), seed=1)
            self._model, self._fit_at = model, len(self.values)
        future = pd.DataFrame({"ds": [start + pd.Timedelta(seconds=self.step_s * (len(y) - 1 + h))]})
        return float(self._model.predict(future)["yhat"].iloc[0])

    def _kalman_update(self, z: float) -> None:
        from filterpy.kalman import KalmanFilter

        if self._kf is None:
            kf = KalmanFilter(dim_x=2, dim_z=1)
            kf.x = np.array([[z], [0.0]])
            kf.F = np.array([[1.0, 1.0], [0.0, 1.0]])
            kf.H = np.array([[1.0, 0.0]])
            kf.P *= 1000.0
            kf.R = np.array([[self.c.kalman_r]])
            kf.Q = np.diag([self.c.kalman_q_level, self.c.kalman_q_trend])
            self._kf = kf
            return
        self._kf.predict()
        self._kf.update(np.array([[z]]))
