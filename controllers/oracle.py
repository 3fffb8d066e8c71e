"""``oracle``: hindsight provisioning — the reference for cost at full service.

The oracle reads the future arrival schedule (``ClusterView.forecast``), so
the gap between an autoscaler and the oracle is the price of not knowing it.
Time is cut into aligned buckets of ``window_s`` (30 s). For each bucket the
arrival rate and the requests' token lengths give, per variant, what one
replica can serve unsaturated (``oracle_capacity``: KV-limited slots, Little's
law); the model's demand is then handed out greedily, cheapest capacity
first (``order``: variantCost per request/s served by default, or plain
variantCost as WVA orders variants), each variant up to its max. A model
served prefill/decode-disaggregated is handed out twice, every request to
the prefill pool and to the decode pool, each sized for its half of the
work (``pools``, ``oracle_capacity``).

Cold start: a replica asked for now is ready ``startup_s`` later, and a
replica given back now cannot be had again sooner than that. So at time t
each variant runs the most replicas any bucket in [t - drain, t + startup_s +
period_s] needs: new replicas arrive in time for the demand they serve, no
replica is released that would be needed again before a new one could
start, and none is released under requests that would outlive its grace
period (drain = the mean service time minus ``termination_grace_s``, 0 for
short requests: a 2048-token decode of ~59 s outlives a 30 s grace). ``startup_s`` is the variant's (``VariantView.startup_s``) or
``default_startup_s``.

Limits: a greedy hand-out, not an integer optimum across variants; bucket
means, so a burst shorter than a bucket is averaged out; capacity is the
mean-value model in ``oracle_capacity``. The oracle reads no metrics, so a
metrics outage does not change what it does; without a forecast for a
model it holds that model's variants where they are.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field

from scalearena.contracts.tunable import tune
from scalearena.controllers.base import (
    ArrivalForecast,
    AutoscalerBase,
    AutoscalerConfig,
    ClusterView,
    Decision,
    Reason,
    VariantView,
    clamp,
)
from scalearena.controllers.oracle_capacity import SlotCapacity, slot_capacity


class OracleConfig(AutoscalerConfig):
    kind: Literal["oracle"] = Field(default="oracle", description="Hindsight provisioning from the forecast.")
    period_s: float = Field(default=10.0, gt=0, description="Decision period, seconds.")
    # at least 1 s: a bucket is a step of the plan (window_s 1e-9 planned 10^11 buckets and aborted, issue 31)
    window_s: float = Field(default=30.0, ge=1.0, description="Demand bucket: arrival rate averaged over this, s.")
    kv_target: float = Field(
        default=0.8, gt=0, le=1, description="KV share a replica may fill and stay unsaturated (WVA tau_kv).",
        json_schema_extra=tune(0.5, 0.95),
    )
    utilization: float = Field(
        default=1.0, gt=0, le=4, description="Share of a replica's unsaturated capacity planned to be busy (above 1: "
        "fewer replicas than the load needs, the cheap end of the oracle frontier).",
        json_schema_extra=tune(0.5, 1.0),
    )
    order: Literal["cost_per_capacity", "cost"] = Field(
        default="cost_per_capacity",
        description="Which variant is filled first: lowest cost per request/s served, or lowest variantCost.",
    )
    default_startup_s: float = Field(
        default=60.0, ge=0, description="Cold start assumed when a variant does not state its startup_s, s."
    )
    default_ttft_ms: float = Field(default=100.0, ge=0, description="TTFT when the latency model is unknown, ms.")
    default_itl_ms: float = Field(default=20.0, ge=0, description="ITL when the latency model is unknown, ms.")


_Alloc = dict[str, tuple[int, SlotCapacity | None]]
KUBERNETES_GRACE_S = 30.0  # a pod's terminationGracePeriodSeconds when its spec does not say


class Oracle(AutoscalerBase):
    kind: ClassVar[str] = "oracle"
    config: OracleConfig

    def __init__(self, config: OracleConfig) -> None:
        super().__init__(config)
        self._sorted: dict[str, tuple[ArrivalForecast, np.ndarray, np.ndarray, np.ndarray]] = {}
        self._alloc: dict[tuple[Any, ...], tuple[_Alloc, float]] = {}

    def _schedule(self, fc: ArrivalForecast) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The forecast in arrival order (a stable sort: ties keep schedule order; none when already in
        order, as a run's schedule and the plan stream's windows are), as float64 and int64 arrays."""
        hit = self._sorted.get(fc.model)
        if hit is None or hit[0] is not fc:
            arr = np.asarray(fc.arrival_s, dtype=np.float64)
            ins, outs = np.asarray(fc.input_tokens, dtype=np.int64), np.asarray(fc.output_tokens, dtype=np.int64)
            if not (arr[1:] >= arr[:-1]).all():
                order = arr.argsort(kind="stable")
                arr, ins, outs = arr[order], ins[order], outs[order]
            hit = (fc, arr, ins, outs)
            self._sorted[fc.model] = hit
        return hit[1], hit[2], hit[3]

    def _lead(self, v: VariantView) -> float:
        return self.config.default_startup_s if v.startup_s is None else float(v.startup_s)

    def decide(self, now: float, view: ClusterView) -> list[Decision]:
        forecasts = {f.model: f for f in view.forecast}
        out: dict[str, Decision] = {}
        for model, variants in view.by_model().items():
            fc = forecasts.get(model)
            for v in variants:
                if fc is None:
                    want = clamp(v.spec_replicas, v.min_replicas, v.max_replicas)
                    out[v.name] = Decision(v.name, v.spec_replicas, want, (Reason(
                        "no_forecast", f"oracle: no forecast for model {model}; holding {want}", {}),))
                else:
                    out[v.name] = self._provision(now, model, fc, variants, v)
        return [out[v.name] for v in view.variants]

    def _provision(self, now: float, model: str, fc: ArrivalForecast, variants: list[VariantView],
                   v: VariantView) -> Decision:
        w = self.config.window_s
        end = now + self._lead(v) + self.period_s
        b0, b1 = math.floor(max(0.0, now - self._drain(model, fc, variants, v, now)) / w), math.floor(end / w)
        best, best_b, best_rate, best_cap = 0, b0, 0.0, None
        for b in range(b0, b1 + 1):
            alloc, rate = self._allocate(model, fc, variants, b)
            n, cap = alloc[v.name]
            if n > best or (best_cap is None and cap is not None and n == best):
                best, best_b, best_rate, best_cap = n, b, rate, cap
        desired = clamp(best, v.min_replicas, v.max_replicas)
        vals: dict[str, Any] = {"horizon_start_s": now, "horizon_end_s": end, "bucket_start_s": best_b * w,
                                "arrival_rate_rps": best_rate, "replicas_needed": best}
        if best_cap is not None:
            vals.update(slots=best_cap.slots, kv_slots=best_cap.kv_slots, service_s=best_cap.service_s,
                        replica_rate_rps=best_cap.rate_rps, latency_model=best_cap.latency_kind)
        reasons = [Reason("oracle", f"oracle: most demanding bucket in [{now:g}, {end:g}] s starts at {best_b * w:g} s: "
                          f"{best_rate:.2f} req/s for the model -> {best} replicas of {v.name}", vals)]
        if desired != best:
            reasons.append(Reason("clamp", f"oracle: {best} clamped to [{v.min_replicas}, {v.max_replicas}]",
                                  {"min_replicas": v.min_replicas, "max_replicas": v.max_replicas}))
        return Decision(v.name, v.spec_replicas, desired, tuple(reasons))

    def _drain(self, model: str, fc: ArrivalForecast, variants: list[VariantView], v: VariantView, now: float) -> float:
        """How far back the replicas still serve what arrived: a request admitted s seconds ago runs for the
        window's mean service time, and a replica removed under it is killed once the grace period
        (``termination_grace_s``, Kubernetes' 30 s when unknown) runs out; so the buckets of the last
        service - grace seconds keep their replicas."""
        cap = self._allocate(model, fc, variants, math.floor(now / self.config.window_s))[0][v.name][1]
        grace = KUBERNETES_GRACE_S if v.termination_grace_s is None else v.termination_grace_s
        return 0.0 if cap is None else max(0.0, cap.service_s - grace)

    def capacity_plan(self, variants: Sequence[VariantView], forecast: Sequence[ArrivalForecast],
                      until_s: float) -> dict[str, Any] | None:
        """The oracle's schedule (reports/provisioning.py): per variant, the replicas each aligned window
        of ``window_s`` in [0, ``until_s``) needs ready — ``_allocate``'s hand-out for the window's
        arrivals, clamped to the variant's bounds — and each variant's floor (``min_replicas``) for the
        time after the plan. Its decisions run ahead of this by the cold start (``_provision``).
        None when a model of ``variants`` has no forecast."""
        fcs = {f.model: f for f in forecast}
        by_model: dict[str, list[VariantView]] = {}
        for v in variants:
            by_model.setdefault(v.model, []).append(v)
        if any(m not in fcs for m in by_model):
            return None
        n = max(1, math.ceil(until_s / self.config.window_s - 1e-9))
        plan: dict[str, list[int]] = {v.name: [] for v in variants}
        for model, vs in by_model.items():
            for b in range(n):
                for name, replicas in self.window_replicas(model, fcs[model], vs, b).items():
                    plan[name].append(replicas)
        return {"window_s": self.config.window_s, "replicas": plan, "floor": {v.name: v.min_replicas for v in variants}}

    def window_replicas(self, model: str, fc: ArrivalForecast, variants: list[VariantView], b: int) -> dict[str, int]:
        """One window of ``capacity_plan``: replicas per variant of ``model`` for the arrivals of ``fc``
        in window ``b`` (``fc`` may hold only that window's: harness.control.view.OraclePlanStream)."""
        alloc, _ = self._allocate(model, fc, variants, b)
        return {v.name: clamp(alloc[v.name][0], v.min_replicas, v.max_replicas) for v in variants}

    def _allocate(self, model: str, fc: ArrivalForecast, variants: list[VariantView], b: int) -> tuple[_Alloc, float]:
        """Replicas per variant for bucket ``b`` (memoised: the forecast and engines are fixed for a run)."""
        key = (model, b, tuple((v.name, v.cost, v.max_replicas) for v in variants))
        if key in self._alloc:
            return self._alloc[key]
        c, w = self.config, self.config.window_s
        arr, ins, outs = self._schedule(fc)
        lo, hi = (int(i) for i in arr.searchsorted((b * w, (b + 1) * w)))  # as bisect_left
        rate = (hi - lo) / w
        alloc: _Alloc = {v.name: (0, None) for v in variants}
        if hi > lo:
            for pool, role in pools(variants):
                caps = {v.name: slot_capacity(v.engine, ins[lo:hi], outs[lo:hi], c.kv_target, c.default_ttft_ms,
                                                 c.default_itl_ms, v.step_model, role) for v in pool}
                alloc.update(self._hand_out(pool, caps, rate))
        self._alloc[key] = (alloc, rate)
        return alloc, rate

    def _hand_out(self, pool: list[VariantView], caps: dict[str, SlotCapacity], rate: float) -> _Alloc:
        """``rate`` handed out over ``pool``, cheapest capacity first (``order``), each variant up to its max."""
        c, left = self.config, rate
        out: _Alloc = {}

        def rank(v: VariantView) -> tuple[float, float, str]:
            per = v.cost / (caps[v.name].rate_rps * c.utilization)
            return (per if c.order == "cost_per_capacity" else v.cost, v.cost, v.name)

        for v in sorted(pool, key=rank):
            mu = caps[v.name].rate_rps * c.utilization
            n = min(v.max_replicas, max(0, math.ceil(left / mu - 1e-9)))
            out[v.name] = (n, caps[v.name])
            left = max(0.0, left - n * mu)
        return out


def pools(variants: list[VariantView]) -> list[tuple[list[VariantView], str]]:
    """The pools one model's demand is handed out over, each with the role its replicas are sized for: with
    prefill and decode variants, every request is counted on both (the decode pool also takes ``both``
    variants, as llm-d's decode profile does); otherwise one pool of whole requests."""
    prefill = [v for v in variants if v.role == "prefill"]
    decode = [v for v in variants if v.role != "prefill"]
    if prefill and any(v.role == "decode" for v in decode):
        return [(prefill, "prefill"), (decode, "decode")]
    return [(variants, "both")]
