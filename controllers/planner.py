"""``planner``: an SLA planner in the style of NVIDIA Dynamo's (ai-dynamo/dynamo docs/components/planner,
components/src/dynamo/planner: core/throughput_scaling.py, core/load_scaling.py, core/budget.py).

Throughput mode, every ``throughput_adjustment_interval_s`` (180 s): observe the interval's request
count and mean ISL / OSL per model (controllers/traffic.py), feed each series to its predictor
(controllers/predictors.py), and size the model's variants for the predicted load:

    replicas = max(ceil(predicted requests / interval / per-replica rate at the targets), min_endpoint)

the per-replica rate coming from the variant's swept latency profile (``VariantView.profile``,
built by the harness from the scenario's latency model; controllers/planner_capacity.py) at the
largest batch that meets both targets and leaves the replica room for the next arrival: below
max_num_seqs, the KV cache (``kv_fill``) and the gateway's KV admission threshold
(``VariantView.admission``), the demand handed to the lowest cost per request/s first, then cut to
the GPU budget.

Load mode (``enable_load_scaling``), every ``load_adjustment_interval_s`` (5 s): per ready pod,
estimate a new arrival's TTFT and the batch's ITL from its observed load (at the mean ISL / OSL of
the last throughput interval, or in load-only mode of the last minute's traffic; ``default_isl`` /
``default_osl`` only until a length has been observed); +1 replica when every
pod's TTFT (or every pod's ITL) exceeds its target, -1 when every pod is below
``load_scaling_down_sensitivity`` % of both, one step at a time and none while a change is still
under way (pending pods, or fewer ready than desired). With both modes the throughput result is a
floor under the load result, as in Dynamo.

Before the first full interval, and while no traffic has been seen, the planner holds. When the
metrics cannot be read it holds. Decisions carry the observation, the prediction (and which
predictor made it, with the fallback reason when the chosen one lacked history), the predictor's
error so far (mean absolute percentage error of the request-count forecasts), the capacity per
replica and the replicas per variant. A model with prefill / decode variants (``VariantView.role``)
has each pool sized on its own (controllers/planner_pd.py); the load mode treats every variant as a
pool of its own. Limits: Dynamo's correction factors (observed / expected latency) are not applied.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from scalearena.contracts.errors import MetricsUnavailable
from scalearena.contracts.limits import StrictSpec
from scalearena.contracts.tunable import Tunable, declared, tune
from scalearena.controllers.base import (
    AutoscalerBase,
    AutoscalerConfig,
    ClusterView,
    Decision,
    Reason,
    VariantView,
    clamp,
)
from scalearena.controllers.planner_capacity import BatchCapacity, batch_capacity, hand_out, load_estimates
from scalearena.controllers.planner_pd import hand_out_pd, is_pd, pd_capacities
from scalearena.controllers.predictors import Forecast, LoadPredictor, PredictorConfig
from scalearena.controllers.traffic import Traffic, backlog, observe

LENGTH_WINDOW_S = 60.0  # load-only mode: the mean ISL / OSL of the last minute's traffic


class WarmupPoint(StrictSpec):
    """One adjustment interval of history (Dynamo's ``load_predictor_warmup_trace``, pre-aggregated)."""

    requests: float = Field(ge=0, description="Requests in the interval.")
    isl: float | None = Field(default=None, gt=0, description="Mean prompt tokens (null: no request).")
    osl: float | None = Field(default=None, gt=0, description="Mean output tokens (null: no request).")


class WarmupTrace(StrictSpec):
    """A request trace whose history warm-starts the predictors (Dynamo's ``load_predictor_warmup_trace``):
    the harness reads it when the scenario loads (workloads/traces/intervals.py: the trace's requests
    grouped into adjustment intervals, their count and mean ISL / OSL) into ``points``; the planner
    itself reads no file."""

    path: str = Field(description="Trace file; relative paths are against the scenario file.")
    format: Literal["azure", "mooncake", "burstgpt"] = Field(description="Trace format (as workload traces).")
    time_scale: float = Field(default=1.0, gt=0, le=1e6, description="Trace seconds per run second, as in "
                              "a trace replay (2: the history runs twice as fast).")
    start_s: float = Field(default=0.0, ge=0, description="Trace time (s since its first row) the history starts.")
    window_s: float | None = Field(default=None, gt=0, description="Trace seconds of history; null: to the end.")
    points: list[WarmupPoint] = Field(default_factory=list, description="Filled in by the harness from the file "
                                      "(one per adjustment interval); not written by hand.")


class PlannerConfig(AutoscalerConfig):
    kind: Literal["planner"] = Field(default="planner", description="Dynamo-style SLA planner.")
    enable_throughput_scaling: bool = Field(default=True, description="Predictive sizing from forecast load.")
    enable_load_scaling: bool = Field(default=False, description="Reactive +/-1 on observed per-pod load.")
    throughput_adjustment_interval_s: float = Field(
        default=180.0, gt=0, le=86_400, description="Seconds between throughput decisions (Dynamo: 180).",
        json_schema_extra=tune(15.0, 600.0, log=True))
    load_adjustment_interval_s: float = Field(
        default=5.0, gt=0, le=3600, description="Seconds between load decisions (Dynamo: 5).")
    ttft_ms: float = Field(default=500.0, gt=0, description="TTFT target, ms (Dynamo: 500).")
    itl_ms: float = Field(default=50.0, gt=0, description="ITL target, ms (Dynamo: 50).")
    kv_fill: float = Field(
        default=1.0, gt=0, le=1, description="Planning KV fill: the planned batch plus the next prompt stay within "
        "this fraction of the KV cache; below 1 it leaves room for the batch's length fluctuation (Dynamo's "
        "load-based planner counts a decode engine full at KV usage 0.9, decode_kv_scale_up_threshold). The "
        "router's admission threshold bounds the batch as well (planner_capacity.py).",
        json_schema_extra=tune(0.5, 1.0))
    min_endpoint: int = Field(default=1, ge=0, le=10_000, description="Fewest replicas per model (Dynamo: 1).")
    max_gpu_budget: int | None = Field(
        default=None, ge=1, le=1_000_000, description="Most GPUs per model; null: the pool's GPUs where known, "
        "else unbounded (Dynamo's default 8 is one node; the scenario states the pool).")
    load_scaling_down_sensitivity: float = Field(
        default=80.0, ge=0, le=100, description="Scale down when every pod is below this % of both targets.",
        json_schema_extra=tune(0.0, 100.0))
    predictor: PredictorConfig = Field(default_factory=PredictorConfig, description="Load predictor.")
    traffic_source: Literal["gateway", "engine"] = Field(
        default="gateway", description="gateway: the EPP's request counter (engine counters where absent); "
        "engine: vLLM completions + backlog growth.")
    default_isl: float = Field(default=3000.0, gt=0, description="Mean prompt tokens until one is observed (Dynamo: 3000).")
    default_osl: float = Field(default=150.0, gt=0, description="Mean output tokens until observed (Dynamo: 150).")
    warmup: list[WarmupPoint] = Field(
        default_factory=list, description="History fed to the predictors before the run, one point per interval.")
    warmup_trace: WarmupTrace | None = Field(
        default=None, description="Warm start from a trace file instead: its per-interval history.")

    @model_validator(mode="after")
    def _one_warmup(self) -> PlannerConfig:
        if self.warmup and self.warmup_trace is not None:
            raise ValueError("warmup and warmup_trace: give one history, not both")
        return self

    def history(self) -> list[WarmupPoint]:
        """The warm-start points: ``warmup``, or those the harness read from ``warmup_trace``."""
        if self.warmup_trace is not None:
            return list(self.warmup_trace.points)
        return list(self.warmup)

    def tunables(self) -> list[Tunable]:
        """The interval, the scale-down sensitivity, and the predictor (its kind and log1p)."""
        return declared(self) + declared(self.predictor, "predictor.")

    @property
    def period(self) -> float:
        if self.enable_load_scaling:
            return min(self.load_adjustment_interval_s, self.throughput_adjustment_interval_s)
        return self.throughput_adjustment_interval_s


@dataclass
class _Model:
    """Per-model state: predictors, the last throughput targets, the forecast errors."""

    req: LoadPredictor
    isl: LoadPredictor
    osl: LoadPredictor
    last_tick: float | None = None
    backlog: float | None = None
    target: dict[str, int] = field(default_factory=dict)
    audit: dict[str, Any] = field(default_factory=dict)
    pending_forecast: float | None = None
    errors: list[float] = field(default_factory=list)  # |predicted - observed| / observed per interval
    lengths: tuple[float, float] | None = None  # load mode's last observed mean ISL / OSL


class Planner(AutoscalerBase):
    kind: ClassVar[str] = "planner"
    config: PlannerConfig

    def __init__(self, config: PlannerConfig) -> None:
        super().__init__(config)
        self._models: dict[str, _Model] = {}
        if not (config.enable_throughput_scaling or config.enable_load_scaling):
            raise ValueError("planner: enable throughput or load scaling (or both)")
        if config.warmup_trace is not None and not config.warmup_trace.points:
            raise ValueError(f"planner: warmup_trace {config.warmup_trace.path} was not read; load the scenario "
                             "through the harness (scalearena run / suite / validate), which fills its points")

    @property
    def period_s(self) -> float:
        return self.config.period

    def _state(self, model: str) -> _Model:
        if model not in self._models:
            c, step = self.config, self.config.throughput_adjustment_interval_s
            st = _Model(LoadPredictor(c.predictor, step), LoadPredictor(c.predictor, step),
                        LoadPredictor(c.predictor, step))
            for w in c.history():
                st.req.add(w.requests)
                if w.isl is not None and w.osl is not None:
                    st.isl.add(w.isl)
                    st.osl.add(w.osl)
            self._models[model] = st
        return self._models[model]

    def decide(self, now: float, view: ClusterView) -> list[Decision]:
        out: dict[str, Decision] = {}
        for model, variants in view.by_model().items():
            for d in self._decide_model(now, view, model, variants):
                out[d.variant] = d
        return [out[v.name] for v in view.variants]

    def _decide_model(self, now: float, view: ClusterView, model: str, variants: list[VariantView]) -> list[Decision]:
        c, st = self.config, self._state(model)
        if not all(v.metrics_available for v in variants):
            return [_hold(v, "metrics_unavailable", "planner: metrics unreadable; holding") for v in variants]
        reasons: list[Reason] = []
        if c.enable_throughput_scaling and (st.last_tick is None or now >= st.last_tick + c.throughput_adjustment_interval_s - 1e-9):
            try:
                self._throughput(now, view, model, variants, st, reasons)
            except MetricsUnavailable as e:
                return [_hold(v, "metrics_unavailable", f"planner: {e}; holding") for v in variants]
        lengths = self._lengths(view, model, st) if c.enable_load_scaling else None
        out = []
        for v in variants:
            want = st.target.get(v.name, v.spec_replicas) if c.enable_throughput_scaling else v.spec_replicas
            rs = list(reasons)
            if not rs and c.enable_throughput_scaling:
                rs = [Reason("throughput_hold", f"planner: between throughput intervals; target {want}",
                             {"target": want, **st.audit})]
            if c.enable_load_scaling:
                assert lengths is not None
                want = max(self._load(v, lengths, rs), st.target.get(v.name, 0) if c.enable_throughput_scaling else 0)
            final = clamp(want, v.min_replicas, v.max_replicas)
            if final != want:
                rs.append(Reason("clamp", f"planner: {want} clamped to [{v.min_replicas}, {v.max_replicas}]", {}))
            out.append(Decision(v.name, v.spec_replicas, final, tuple(rs)))
        return out

    def _throughput(self, now: float, view: ClusterView, model: str, variants: list[VariantView], st: _Model,
                    reasons: list[Reason]) -> None:
        c = self.config
        first = st.last_tick is None
        window = c.throughput_adjustment_interval_s if first else now - st.last_tick  # type: ignore[operator]
        st.last_tick = now
        if first and not st.req.values:  # nothing observed yet: start measuring now
            st.backlog = backlog(view, model)
            reasons.append(Reason("warming_up", "planner: first interval starts; no traffic observed yet", {}))
            return
        traffic = observe(view, model, window, c.traffic_source, st.backlog)
        st.backlog = backlog(view, model)
        self._learn(st, traffic)
        if not st.req.values:
            reasons.append(Reason("no_traffic", "planner: no traffic seen yet; holding", {"observed_requests": 0.0}))
            return
        f_req, f_isl, f_osl = st.req.predict(), st.isl.predict(), st.osl.predict()
        st.pending_forecast = f_req.value
        isl = f_isl.value if st.isl.values else c.default_isl
        osl = f_osl.value if st.osl.values else c.default_osl
        demand = f_req.value / c.throughput_adjustment_interval_s
        self._size(view, variants, st, demand, isl, osl, traffic, (f_req, f_isl, f_osl), reasons)

    def _learn(self, st: _Model, t: Traffic) -> None:
        if st.pending_forecast is not None and t.requests > 0:
            st.errors.append(abs(st.pending_forecast - t.requests) / t.requests)
        st.req.add(t.requests)
        if t.isl is not None:
            st.isl.add(t.isl)
        if t.osl is not None:
            st.osl.add(t.osl)
        st.audit = {"observed_requests": t.requests, "observed_isl": t.isl, "observed_osl": t.osl,
                    "traffic_source": t.source}

    def _size(self, view: ClusterView, variants: list[VariantView], st: _Model, demand: float, isl: float,
              osl: float, t: Traffic, fc: tuple[Forecast, Forecast, Forecast], reasons: list[Reason]) -> None:
        c = self.config
        caps: dict[str, BatchCapacity] = {}
        for v in variants:
            if v.profile is None:
                reasons.append(Reason("no_profile", f"planner: no latency profile for {v.name}; holding", {}))
                st.target = {u.name: u.spec_replicas for u in variants}
                return
            caps[v.name] = batch_capacity(v.profile, isl, osl, c.ttft_ms / 1000, c.itl_ms / 1000, c.kv_fill,
                                            v.admission)
        pd = is_pd(variants)
        if pd:
            caps = pd_capacities(variants, isl, osl, c.ttft_ms / 1000, c.itl_ms / 1000, c.kv_fill)
        budget = c.max_gpu_budget
        if budget is None and view.gpu_capacity:
            budget = sum(view.gpu_capacity.get(g, 0) for g in {v.gpu for v in variants})
        want, notes = (hand_out_pd if pd else hand_out)(demand, variants, caps, c.min_endpoint, budget)
        st.target = want
        mape = sum(st.errors) / len(st.errors) if st.errors else None
        fallbacks = {n: f.fallback for n, f in zip(("requests", "isl", "osl"), fc, strict=True) if f.fallback}
        vals: dict[str, Any] = {**st.audit, "pools": "prefill/decode" if pd else "aggregated",
                                "predicted_requests": fc[0].value, "predicted_isl": isl,
                                "predicted_osl": osl, "predictor": fc[0].used, "predictor_mape": mape,
                                "demand_rps": demand, "gpu_budget": budget, "replicas": dict(want),
                                "capacity": {v.name: _capacity_values(caps[v.name], v) for v in variants}}
        st.audit = {k: vals[k] for k in ("predicted_requests", "predictor", "predictor_mape", "demand_rps")}
        if fallbacks:
            vals["fallback"] = fallbacks
            reasons.append(Reason("predictor_fallback", "planner: " + "; ".join(f"{k}: {m}, using constant"
                                                                               for k, m in fallbacks.items()), fallbacks))
        per = ", ".join(f"{n} {k.rate_rps:.2f} req/s " + (f"(prefill {k.ttft_s:.3f} s)" if k.bound == "prefill" else
                                                             f"at batch {k.batch} ({k.bound})") for n, k in caps.items())
        reasons.insert(0, Reason("throughput", f"planner: observed {t.requests:g} requests, predicted "
                                 f"{fc[0].value:.1f} ({fc[0].used}) -> {demand:.2f} req/s; per replica {per} -> "
                                 + ", ".join(f"{n} {k}" for n, k in want.items())
                                 + (f" ({'; '.join(notes)})" if notes else ""), vals))

    def _lengths(self, view: ClusterView, model: str, st: _Model) -> tuple[float, float, str]:
        """Mean ISL / OSL for the load estimates: the throughput intervals' latest when that mode has
        measured one, else the model's traffic of the last ``LENGTH_WINDOW_S`` (the last such reading kept
        while nothing new arrives or the metrics cannot answer), else ``default_isl`` / ``default_osl``."""
        if st.isl.values and st.osl.values:
            return st.isl.last(), st.osl.last(), "throughput"
        try:
            t = observe(view, model, LENGTH_WINDOW_S, self.config.traffic_source, None)
            if t.isl and t.osl:
                st.lengths = (t.isl, t.osl)
        except MetricsUnavailable:
            pass
        if st.lengths is not None:
            return st.lengths[0], st.lengths[1], "observed"
        return self.config.default_isl, self.config.default_osl, "default"

    def _load(self, v: VariantView, lengths: tuple[float, float, str], reasons: list[Reason]) -> int:
        c, n = self.config, v.spec_replicas
        if v.profile is None or not v.pods:
            reasons.append(Reason("load_hold", "planner: no pod samples or profile for load scaling", {}))
            return n
        if v.pending > 0 or v.ready < n:
            reasons.append(Reason("load_in_progress", f"planner: {v.pending} pending, {v.ready}/{n} ready; "
                                  "observing only", {}))
            return n
        isl, osl, source = lengths
        ttfts, itls = load_estimates(v.profile, v, isl, osl)
        t_sla, i_sla, k = c.ttft_ms / 1000, c.itl_ms / 1000, c.load_scaling_down_sensitivity / 100
        vals = {"est_ttft_s": ttfts, "est_itl_s": itls, "ttft_target_s": t_sla, "itl_target_s": i_sla,
                "isl": isl, "osl": osl, "lengths_from": source}
        if all(x > t_sla for x in ttfts) or all(x > i_sla for x in itls):
            want = n + 1
        elif all(x < t_sla * k for x in ttfts) and all(x < i_sla * k for x in itls):
            want = n - 1
        else:
            want = n
        reasons.append(Reason("load", f"planner: per-pod TTFT est max {max(ttfts):.3f} s, ITL est max "
                              f"{max(itls) * 1000:.1f} ms vs {c.ttft_ms:g} ms / {c.itl_ms:g} ms -> {want}", vals))
        return max(0, want)


def _capacity_values(k: BatchCapacity, v: VariantView) -> dict[str, Any]:
    """A variant's capacity as the decision records it, with the queue room above the planned batch: how
    many may wait on a full replica before the router counts it saturated or the engine answers 429."""
    rooms = [q for q in (v.admission.queue_threshold if v.admission else None, v.engine.get("max_waiting_queue"))
             if q is not None]
    return {"batch": k.batch, "rate_rps": k.rate_rps, "ttft_s": k.ttft_s, "itl_s": k.itl_s, "batch_max": k.batch_max,
            "meets_sla": k.meets_sla, "bound": k.bound, "limits": dict(k.limits),
            "queue_room": min(rooms) if rooms else None}


def _hold(v: VariantView, rule: str, msg: str) -> Decision:
    want = clamp(v.spec_replicas, v.min_replicas, v.max_replicas)
    return Decision(v.name, v.spec_replicas, want, (Reason(rule, f"{msg} {want}", {}),))


__all__ = ["Planner", "PlannerConfig", "WarmupPoint", "WarmupTrace"]
