"""``keda``: a KEDA ScaledObject with one ``prometheus`` trigger, and the HPA it generates.

KEDA splits the work: its own scale loop (every ``pollingInterval``, 30 s)
owns 0 <-> 1 — activate when the query exceeds ``activationThreshold``,
deactivate to 0 once no poll has been active for ``cooldownPeriod`` (300 s)
and ``minReplicaCount`` is 0 — while the generated HPA (External metric,
``AverageValue`` = threshold by default, minReplicas max(1, minReplicaCount))
owns 1 <-> N. That HPA is ``hpa.engine.HPAEngine``, the same code as the
``hpa`` autoscaler. Left unset, ``behavior`` is absent from the generated HPA,
so it runs the legacy path (at most max(2 x current, 4) replicas per sync,
300 s downscale stabilisation), not the autoscaling/v2 behavior defaults.

The query is one of ``signals.Signal``; the default, ``queue``, is the
paper's queue signal: the variant's summed ``vllm:num_requests_waiting`` plus
the gateway queue of its model (so a variant at 0 can activate), with
threshold 3 — the same target as the HPA baseline's average queue depth 3.

When the query fails: the trigger is in error, the HPA metric is invalid, so
nothing scales (no scale to zero either: an erroring trigger is not
"inactive"). With ``fallback`` set, once the consecutive failures exceed
``failure_threshold`` the HPA is fed ``replicas x threshold`` (so it asks for
``replicas``) and each poll sets the target to ``replicas`` directly, as
KEDA's ``doFallbackScaling`` does. Failures are counted per query, one query
per HPA sync. Replica bounds are the variant's ``min_replicas`` /
``max_replicas`` (minReplicaCount / maxReplicaCount).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from pydantic import Field, model_validator

from scalearena.contracts.errors import MetricsUnavailable
from scalearena.contracts.limits import StrictSpec

from .base import AutoscalerBase, AutoscalerConfig, ClusterView, Decision, Reason, VariantView, clamp
from .hpa.behavior import Behavior
from .hpa.engine import ExternalMetric, HPAEngine
from .signals import SIGNAL_QUERIES, Signal, signal_value


class Fallback(StrictSpec):

    failure_threshold: int = Field(ge=0, description="Fallback once consecutive failures exceed this.")
    replicas: int = Field(ge=0, description="Replicas to run while the trigger keeps failing.")


class KEDAConfig(AutoscalerConfig):
    kind: Literal["keda"] = Field(default="keda", description="KEDA ScaledObject, prometheus trigger.")
    period_s: float = Field(default=15.0, gt=0, description="Sync period of the generated HPA, seconds.")
    polling_interval_s: float = Field(default=30.0, gt=0, description="pollingInterval: KEDA scale loop, seconds.")
    cooldown_period_s: float = Field(
        default=300.0, ge=0, description="cooldownPeriod: inactive this long before scaling to 0, seconds."
    )
    query: Signal = Field(default="queue", description="What the prometheus query returns (controllers/signals.py).")
    metric_type: Literal["AverageValue", "Value"] = Field(
        default="AverageValue", description="AverageValue: desired = ceil(value / threshold); Value: total target."
    )
    threshold: float = Field(default=3.0, gt=0, description="Trigger threshold (the HPA target).")
    activation_threshold: float = Field(
        default=0.0, ge=0, description="activationThreshold: active only while value > this."
    )
    fallback: Fallback | None = Field(default=None, description="Replicas to hold while the trigger fails.")
    tolerance: float = Field(default=0.1, ge=0, lt=1, description="Generated HPA tolerance.")
    behavior: Behavior = Field(
        default_factory=Behavior,
        description="advanced.horizontalPodAutoscalerConfig.behavior; unset fields take HPA defaults.",
    )

    @model_validator(mode="after")
    def _fallback_needs_average(self) -> KEDAConfig:
        if self.fallback is not None and self.metric_type != "AverageValue":
            raise ValueError("fallback is only supported with metric_type AverageValue")
        return self


@dataclass
class _State:
    hpa: HPAEngine
    failures: int = 0
    next_poll: float | None = None
    last_active: float | None = None


class KEDA(AutoscalerBase):
    kind: ClassVar[str] = "keda"
    config: KEDAConfig

    def __init__(self, config: KEDAConfig) -> None:
        super().__init__(config)
        self._states: dict[str, _State] = {}
        c = config
        target = {"average_value": c.threshold} if c.metric_type == "AverageValue" else {"value": c.threshold}
        self._metric = ExternalMetric(type="External", signal=c.query, **target)

    def _state(self, name: str) -> _State:
        if name not in self._states:
            c = self.config
            behavior = None if c.behavior.is_unset() else c.behavior  # unset: no behavior on the HPA
            self._states[name] = _State(HPAEngine([self._metric], c.tolerance, behavior))
        return self._states[name]

    def decide(self, now: float, view: ClusterView) -> list[Decision]:
        return [self._decide(now, view, v) for v in view.variants]

    def _decide(self, now: float, view: ClusterView, v: VariantView) -> Decision:
        c, st, current = self.config, self._state(v.name), v.spec_replicas
        fb = c.fallback
        try:
            value: float | None = signal_value(view, v, c.query)
            st.failures = 0
        except MetricsUnavailable:
            value = None
            st.failures += 1
        in_fallback = value is None and fb is not None and st.failures > fb.failure_threshold
        q = {"query": SIGNAL_QUERIES[c.query], "value": value, "threshold": c.threshold,
             "activation_threshold": c.activation_threshold, "failures": st.failures}
        if value is None:
            trig = Reason("trigger_error", f"keda: query failed ({st.failures} in a row)"
                          + ("; fallback active" if in_fallback else ""), q)
        else:
            trig = Reason("trigger", f"keda: {c.query} = {value:g} (activation > {c.activation_threshold:g})", q)

        if st.next_poll is None or now >= st.next_poll - 1e-9:
            st.next_poll = now + c.polling_interval_s
            act = self._scale_loop(now, v, st, value, in_fallback)
            if act is not None:
                desired, reason = act
                return Decision(v.name, current, desired, (trig, reason))

        def external(_m: ExternalMetric) -> float:
            if value is not None:
                return value
            if in_fallback:
                assert fb is not None
                return fb.replicas * c.threshold
            raise MetricsUnavailable("keda trigger failing, no fallback")

        d = st.hpa.decide(now, view, v, max(1, v.min_replicas), v.max_replicas, external=external, who="keda-hpa")
        return Decision(v.name, current, d.desired_replicas, (trig, *d.reasons))

    def _scale_loop(self, now: float, v: VariantView, st: _State, value: float | None,
                    in_fallback: bool) -> tuple[int, Reason] | None:
        """KEDA's executor (scale_scaledobjects.go RequestScale): acts only on 0 <-> 1 and fallback."""
        c, current = self.config, v.spec_replicas
        active = value is not None and value > c.activation_threshold
        if active:
            st.last_active = now
        if current < v.min_replicas:
            return v.min_replicas, Reason("clamp", f"keda: {current} replicas below minReplicaCount "
                                          f"{v.min_replicas}", {"min_replicas": v.min_replicas})
        if active:
            if current == 0:
                want = clamp(max(v.min_replicas, 1), v.min_replicas, v.max_replicas)
                return want, Reason("keda_activate", f"keda: trigger active, scaling from 0 to {want}",
                                    {"replicas": want})
            return None
        if value is None:
            if in_fallback:
                assert c.fallback is not None
                want = clamp(c.fallback.replicas, v.min_replicas, v.max_replicas)
                return want, Reason("keda_fallback", f"keda: trigger failing beyond the threshold; "
                                    f"fallback to {want} replicas", {"fallback_replicas": c.fallback.replicas})
            return current, Reason("metrics_unavailable", f"keda: trigger failing; keeping {current} replicas",
                                   {"failures": st.failures})
        if current > 0 and v.min_replicas == 0:
            if st.last_active is None or st.last_active + c.cooldown_period_s < now:
                return 0, Reason("keda_deactivate", "keda: inactive for the cooldown period, scaling to 0",
                                 {"last_active_s": st.last_active, "cooldown_s": c.cooldown_period_s})
        return None
