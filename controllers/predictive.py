"""``predictive``: any reactive autoscaler fed the load forecast one cold start ahead.

The WVA paper names forecasting as the cure for reactive lag on bursts (its future work); AIBrix
(#1418) and llm-d-autoscaling (#1071) users ask for it. This wrapper keeps the inner policy's own
control law and changes only what it sees: every ``interval_s`` it observes each model's arrival
rate (controllers/traffic.py), feeds it to a load predictor (controllers/predictors.py), and asks
for the rate ``horizon`` ahead, the horizon being one cold start (the variant's ``startup_s``, else
``default_startup_s``) plus one decision period: a replica asked for now is ready when that load
arrives. The inner policy then decides on a view whose load signals are scaled by

    r = clamp(predicted rate / observed rate, min_ratio, max_ratio)

(pods' waiting and running requests, KV usage and GPU busy fraction, the gateway queue, and the
windowed per-pod reads ``pod_max_over_time`` / ``pod_avg_over_time`` of those metrics).

Why a ratio: a reactive policy's signals are load per replica; at a fixed replica count they grow
with the arrival rate (Little's law: in flight = rate x service time), so scaling them by the
expected growth shows the policy the state it would see at that load, and its own targets,
tolerances and stabilisation then act on it unchanged, so the comparison with the same policy
without the wrapper isolates the forecast. Limits, stated: queues grow faster than linearly near
saturation, so r understates a queue's growth there; KV usage and GPU utilisation may exceed 1 in
the scaled view (a signal, not a state); PromQL an inner policy sends itself (``view.metrics.query``:
HPA External metrics written as PromQL, KEDA PromQL triggers, user objects) is passed through
unscaled; ``min_ratio`` 1 (the default) anticipates rises only and leaves scale-down to the inner
policy's own pace (a forecast dip would otherwise release replicas that the next burst needs).
Without traffic data yet, or while the metrics cannot be read, r is 1 (the inner policy as is).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from scalearena.contracts.errors import MetricsUnavailable
from scalearena.contracts.tunable import Tunable, declared, tune
from scalearena.controllers.base import (
    AutoscalerBase,
    AutoscalerConfig,
    ClusterView,
    Decision,
    PodMetrics,
    Reason,
    policies,
)
from scalearena.controllers.predictors import LoadPredictor, PredictorConfig
from scalearena.controllers.traffic import backlog, observe

_SCALED = {"vllm:kv_cache_usage_perc", "vllm:num_requests_waiting", "vllm:num_requests_running", "gpu_utilization"}


class PredictiveConfig(AutoscalerConfig):
    kind: Literal["predictive"] = Field(default="predictive", description="A reactive autoscaler fed the forecast.")
    inner: dict[str, Any] = Field(default_factory=lambda: {"kind": "hpa"},
                                  description="The reactive autoscaler's config (any registered kind but predictive).")
    predictor: PredictorConfig = Field(default_factory=lambda: PredictorConfig(kind="kalman"),
                                       description="Forecast of the arrival rate (default: Kalman, ~1 ms a step).")
    interval_s: float = Field(default=30.0, gt=0, le=3600, description="Seconds between observations of the rate.",
                              json_schema_extra=tune(5.0, 300.0, log=True))
    default_startup_s: float = Field(default=60.0, ge=0, le=3600,
                                     description="Cold start when a variant does not state its startup_s, s.")
    min_ratio: float = Field(default=1.0, gt=0, le=1, description="Lowest predicted / observed ratio applied.")
    max_ratio: float = Field(default=4.0, ge=1, le=100, description="Highest predicted / observed ratio applied.",
                             json_schema_extra=tune(1.0, 10.0))
    traffic_source: Literal["gateway", "engine"] = Field(default="gateway", description="Where the rate is read "
                                                         "(controllers/traffic.py).")

    def tunables(self) -> list[Tunable]:
        """The observation interval, the ratio cap and the predictor kind (the inner policy's are its own)."""
        return declared(self) + declared(self.predictor, "predictor.")

    @model_validator(mode="after")
    def _inner_valid(self) -> PredictiveConfig:
        kind = self.inner.get("kind")
        if kind == "predictive":
            raise ValueError("inner: a predictive autoscaler cannot wrap another predictive one")
        policies().config_of(str(kind)).model_validate(self.inner)
        return self


class ScaledMetrics:
    """The inner policy's MetricsReader: windowed load reads scaled by ``ratio``, everything else as is."""

    def __init__(self, inner: Any, ratio: float) -> None:
        self._inner, self.ratio = inner, ratio

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def pod_max_over_time(self, variant: str, metric: str, window_s: float) -> dict[str, float]:
        out = self._inner.pod_max_over_time(variant, metric, window_s)
        return {k: v * self.ratio for k, v in out.items()} if metric in _SCALED else out

    def pod_avg_over_time(self, variant: str, metric: str, window_s: float) -> dict[str, float]:
        out = self._inner.pod_avg_over_time(variant, metric, window_s)
        return {k: v * self.ratio for k, v in out.items()} if metric in _SCALED else out


def scaled_pod(p: PodMetrics, r: float) -> PodMetrics:
    return replace(p, kv_usage=p.kv_usage * r, waiting=round(p.waiting * r), running=round(p.running * r),
                   gpu_util=None if p.gpu_util is None else p.gpu_util * r)


@dataclass
class _Model:
    predictor: LoadPredictor
    last_tick: float | None = None
    backlog: float | None = None
    observed_rps: float = 0.0
    values: dict[str, Any] = field(default_factory=dict)
    observations: int = 0  # rates fed to the predictor
    pending: dict[int, float] = field(default_factory=dict)  # observation number -> the rate forecast for it
    errors: list[float] = field(default_factory=list)  # |forecast - observed| / observed, per forecast checked


class Predictive(AutoscalerBase):
    kind: ClassVar[str] = "predictive"
    config: PredictiveConfig

    def __init__(self, config: PredictiveConfig) -> None:
        super().__init__(config)
        registry = policies()
        self.inner = registry.build(registry.config_of(config.inner["kind"]).model_validate(config.inner))
        self._models: dict[str, _Model] = {}

    @property
    def period_s(self) -> float:
        return self.inner.period_s

    @property
    def fast_period_s(self) -> float | None:  # type: ignore[override]
        return self.inner.fast_period_s

    def decide_fast(self, now: float, view: ClusterView) -> list[Decision]:
        return self.inner.decide_fast(now, view)

    def decide(self, now: float, view: ClusterView) -> list[Decision]:
        ratios = {m: self._ratio(now, view, m, vs) for m, vs in view.by_model().items()}
        r_of = {v.name: ratios[v.model] for v in view.variants}
        variants = tuple(replace(v, pods=tuple(scaled_pod(p, r_of[v.name]) for p in v.pods)) for v in view.variants)
        queue = {m: round(q * ratios.get(m, 1.0)) for m, q in view.router_queue.items()}
        # one ratio per view: with several models the windowed reads take the largest (conservative for scale-up)
        metrics = ScaledMetrics(view.metrics, max(ratios.values(), default=1.0))
        scaled = replace(view, variants=variants, router_queue=queue, metrics=metrics)
        out = []
        for d in self.inner.decide(now, scaled):
            st = self._models[view.variant(d.variant).model]
            r = r_of[d.variant]
            lead = Reason("predictive", f"predictive: observed {st.observed_rps:.2f} req/s, forecast "
                          f"{st.values.get('predicted_rps', st.observed_rps):.2f} req/s "
                          f"{st.values.get('horizon_s', 0):g} s ahead -> load signals x {r:.2f}"
                          + (f" (forecast MAPE {mape:.3f} over {st.values['forecasts_checked']})"
                             if (mape := st.values.get("predictor_mape")) is not None else ""),
                          {**st.values, "ratio": r})
            out.append(replace(d, reasons=(lead, *d.reasons)))
        return out

    def _ratio(self, now: float, view: ClusterView, model: str, variants: list[Any]) -> float:
        c = self.config
        st = self._models.setdefault(model, _Model(LoadPredictor(c.predictor, c.interval_s)))
        lead = max((c.default_startup_s if v.startup_s is None else float(v.startup_s)) for v in variants)
        horizon = lead + self.period_s
        if st.last_tick is None or now >= st.last_tick + c.interval_s - 1e-9:
            if not all(v.metrics_available for v in variants):
                st.values = {"note": "metrics unavailable: ratio 1"}
                return 1.0
            try:
                if st.last_tick is not None:
                    t = observe(view, model, now - st.last_tick, c.traffic_source, st.backlog)
                    st.observed_rps = t.requests / (now - st.last_tick)
                    st.predictor.add(st.observed_rps)
                    st.observations += 1
                    forecast = st.pending.pop(st.observations, None)
                    if forecast is not None and st.observed_rps > 0:
                        st.errors.append(abs(forecast - st.observed_rps) / st.observed_rps)
                st.backlog = backlog(view, model)
            except MetricsUnavailable:
                st.values = {"note": "metrics unavailable: ratio 1"}
                return 1.0
            st.last_tick = now
            steps = max(1, math.ceil(horizon / c.interval_s))
            f = st.predictor.predict(steps)
            if st.observations:  # the forecast is for the interval `steps` observations on: checked then
                st.pending[st.observations + steps] = f.value
            mape = sum(st.errors) / len(st.errors) if st.errors else None
            st.values = {"observed_rps": st.observed_rps, "predicted_rps": f.value, "horizon_s": horizon,
                         "predictor": f.used, "predictor_mape": mape, "forecasts_checked": len(st.errors),
                         **({"fallback": f.fallback} if f.fallback else {})}
        if st.observed_rps <= 0 or "predicted_rps" not in st.values:
            return 1.0
        return min(c.max_ratio, max(c.min_ratio, st.values["predicted_rps"] / st.observed_rps))
