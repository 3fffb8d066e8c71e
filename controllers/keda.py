"""``keda``: a KEDA ScaledObject with ``prometheus`` triggers, and the HPA it generates.

KEDA splits the work: its own scale loop (every ``pollingInterval``, 30 s) owns activation
(0 or ``idleReplicaCount`` <-> ``minReplicaCount``) while the generated HPA (one External
metric per trigger, minReplicas max(1, minReplicaCount)) owns 1 <-> N. That HPA is
``hpa.engine.HPAEngine``, the same code as the ``hpa`` autoscaler: with several triggers it
takes the largest proposal. Left unset, ``behavior`` is absent from the generated HPA, so it runs
the legacy path (at most max(2 x current, 4) replicas per sync, 300 s downscale stabilisation).

The scale loop follows kedacore/keda ``pkg/scaling/executor/scale_scaledobjects.go``
``RequestScale`` (KEDA 2.18): the object is active when ANY trigger's value exceeds its
``activation_threshold`` (with ``scaling_modifiers``: when no trigger failed and the composite
value exceeds ``activation_target``), in error when any trigger failed.
- active: from 0 (or below minReplicaCount with ``idle_replica_count`` set) to
  max(minReplicaCount, 1), else record the activity time (not when some trigger failed);
- inactive: a failing trigger with ``fallback.replicas`` != 0, or without fallback, changes
  nothing (the HPA holds, or falls back); else above ``idle_replica_count``, or above 0 with
  minReplicaCount 0, scale to idleReplicaCount (else minReplicaCount) once the last activity is
  older than ``cooldown_period_s``, or, never active, once the object is older than
  ``initial_cooldown_period_s``; below minReplicaCount without idle mode, raise to it.
Comparisons are strict (``Before``) except the initial cooldown's: the object's creation time
is the first poll's and CreationTimestamp has whole seconds, truncated, so KEDA sees it as
already past at a first poll in the same second.

The policy is called at the faster of the two loops (``period_s``, the HPA's 15 s sync, and
``polling_interval_s``); each loop runs when it is due, so a 5 s poll activates between syncs.

Triggers (``keda_scaler``): a signal name or PromQL, read at each poll and each HPA sync; a failed read counts
toward ``fallback`` per trigger, as KEDA's health status per metric does. ``scaling_modifiers``
(``keda_formula``): one composite metric replaces the triggers in the generated HPA, as KEDA
does. The single-trigger fields (``query``, ``threshold``, ...) are shorthand for ``triggers``
with one signal trigger; the default is the paper's queue signal with threshold 3, the same
target as the HPA baseline's average queue depth 3.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Literal, get_args

from pydantic import Field, model_validator

from scalearena.contracts.errors import MetricsUnavailable
from scalearena.contracts.limits import StrictSpec
from scalearena.contracts.tunable import Tunable, around, declared, tune
from scalearena.controllers.base import (
    AutoscalerBase,
    AutoscalerConfig,
    ClusterView,
    Decision,
    Reason,
    VariantView,
    clamp,
)
from scalearena.controllers.hpa.behavior import Behavior
from scalearena.controllers.hpa.engine import ExternalMetric, HPAEngine
from scalearena.controllers.keda_formula import Formula, FormulaError, compile_formula
from scalearena.controllers.keda_scaler import Fallback, MetricType, Trigger, fallback_value, read_trigger
from scalearena.controllers.signals import Signal

__all__ = ["KEDA", "KEDAConfig", "Fallback", "Trigger", "ScalingModifiers"]

SHORTHAND = ("query", "metric_type", "threshold", "activation_threshold")


class ScalingModifiers(StrictSpec):
    formula: str = Field(min_length=1, description="expr-lang formula over the trigger names (controllers/keda_formula.py).")
    target: float = Field(gt=0, description="Target of the composite metric.")
    activation_target: float = Field(default=0.0, ge=0, description="Active while the composite value > this.")
    metric_type: MetricType = Field(default="AverageValue", description="Metric type of the composite metric.")


class KEDAConfig(AutoscalerConfig):
    kind: Literal["keda"] = Field(default="keda", description="KEDA ScaledObject, prometheus triggers.")
    period_s: float = Field(default=15.0, gt=0, description="Sync period of the generated HPA, seconds.")
    polling_interval_s: float = Field(default=30.0, gt=0, description="pollingInterval: KEDA scale loop, seconds.",
                                      json_schema_extra=tune(5.0, 60.0))
    cooldown_period_s: float = Field(
        default=300.0, ge=0, description="cooldownPeriod: inactive this long before scaling to 0, seconds.",
        json_schema_extra=tune(0.0, 900.0),
    )
    initial_cooldown_period_s: float = Field(
        default=0.0, ge=0, description="initialCooldownPeriod: no scale-in this long after creation if never active."
    )
    idle_replica_count: int | None = Field(
        default=None, ge=0, description="idleReplicaCount: replicas while inactive (below min_replicas); null: off."
    )
    query: Signal = Field(default="queue", description="Shorthand trigger: the signal read (controllers/signals.py).")
    metric_type: MetricType = Field(
        default="AverageValue", description="Shorthand trigger: AverageValue (ceil(value / threshold)) or Value."
    )
    threshold: float = Field(default=3.0, gt=0, description="Shorthand trigger: threshold (the HPA target).",
                             json_schema_extra=tune(0.5, 30.0, log=True))
    activation_threshold: float = Field(
        default=0.0, ge=0, description="Shorthand trigger: activationThreshold, active only while value > this."
    )
    triggers: list[Trigger] | None = Field(
        default=None, min_length=1, description="prometheus triggers (replace the shorthand fields); any active -> active."
    )
    fallback: Fallback | None = Field(default=None, description="Replicas to hold while a trigger fails.")
    scaling_modifiers: ScalingModifiers | None = Field(
        default=None, description="advanced.scalingModifiers: a formula over the triggers becomes the one HPA metric."
    )
    tolerance: float = Field(default=0.1, ge=0, lt=1, description="Generated HPA tolerance.",
                             json_schema_extra=tune(0.0, 0.5))
    behavior: Behavior = Field(
        default_factory=Behavior,
        description="advanced.horizontalPodAutoscalerConfig.behavior; unset fields take HPA defaults.",
    )

    @property
    def trigger_list(self) -> tuple[Trigger, ...]:
        """The triggers, the shorthand fields as one signal trigger named after its signal."""
        if self.triggers is not None:
            return tuple(self.triggers)
        return (Trigger(name=self.query, query=self.query, threshold=self.threshold,
                        activation_threshold=self.activation_threshold, metric_type=self.metric_type),)

    @property
    def trigger_labels(self) -> tuple[str, ...]:
        """Each trigger's label in decisions and signal counts: its name, else ``trigger<i>``."""
        return tuple(t.name or f"trigger{i}" for i, t in enumerate(self.trigger_list))

    def tunables(self) -> list[Tunable]:
        """Polling, cooldown, tolerance and each trigger's threshold (with scaling_modifiers: the composite
        target instead, the one metric the generated HPA sees)."""
        shorthand = self.triggers is None and self.scaling_modifiers is None
        out = [t for t in declared(self) if t.path != "threshold" or shorthand]
        if self.scaling_modifiers is not None:
            return out + [around("scaling_modifiers.target", self.scaling_modifiers.target,
                                 description="Target of the composite metric.")]
        return out + [around(f"triggers.{i}.threshold", t.threshold, description=f"threshold of trigger {t.name or i}")
                      for i, t in enumerate(self.triggers or ())]

    def formula(self) -> Formula | None:
        sm = self.scaling_modifiers
        if sm is None:
            return None
        return compile_formula(sm.formula, {t.name for t in self.trigger_list if t.name})

    @model_validator(mode="after")
    def _consistent(self) -> KEDAConfig:
        # a shorthand field at its default is no clash: a dumped config (suite.json, a re-validated
        # scenario) carries them all
        defaults = {f: type(self).model_fields[f].default for f in SHORTHAND}
        set_here = {f for f in self.model_fields_set & set(SHORTHAND) if getattr(self, f) != defaults[f]}
        if self.triggers is not None and (clash := sorted(set_here)):
            raise ValueError(f"set either triggers or the shorthand {', '.join(clash)}, not both")
        names = [t.name for t in self.trigger_list if t.name]
        if len(set(names)) != len(names):
            raise ValueError(f"trigger names must be unique: {names}")
        sm = self.scaling_modifiers
        if sm is not None:
            if len(names) != len(self.trigger_list):
                raise ValueError("scaling_modifiers needs every trigger named (the formula's variables)")
            try:
                self.formula()
            except FormulaError as e:
                raise ValueError(str(e)) from None
        if self.fallback is not None:
            if sm is not None and (sm.metric_type != "AverageValue" or sm.target != int(sm.target)):
                raise ValueError("fallback with scaling_modifiers needs metric_type AverageValue and a whole-number "
                                 "target (KEDA parses it with ParseInt)")
            if any(t.metric_type != "AverageValue" for t in self.trigger_list):  # KEDA's CheckFallbackValid
                raise ValueError("fallback can only be enabled for triggers with metric_type AverageValue (every "
                                 "trigger; KEDA's admission webhook refuses the object otherwise)")
        return self


@dataclass
class _State:
    hpa: HPAEngine
    failures: dict[str, int] = field(default_factory=dict)
    next_poll: float | None = None
    next_sync: float | None = None
    last_active: float | None = None
    created: float | None = None


@dataclass(frozen=True)
class _Reading:
    """One HPA sync's reads: per-trigger values (None: failed) and the composite, if any."""

    values: dict[str, float | None]
    composite: float | None
    error: bool
    active: bool
    unmatched: frozenset[str] = frozenset()  # triggers whose query matched no series (value 0 by ignoreNullValues)


class KEDA(AutoscalerBase):
    kind: ClassVar[str] = "keda"
    config: KEDAConfig

    def __init__(self, config: KEDAConfig) -> None:
        super().__init__(config)
        self.hpa_sync = config.polling_interval_s >= config.period_s  # decided at the generated HPA's syncs
        self._states: dict[str, _State] = {}
        self._triggers = config.trigger_list
        self._labels = config.trigger_labels
        self._formula = config.formula()
        sm = config.scaling_modifiers

        def metric(signal: str, metric_type: str, target: float) -> ExternalMetric:
            key = "average_value" if metric_type == "AverageValue" else "value"
            # the engine reads no signal here (``external`` answers); a PromQL trigger still needs one set
            sig = signal if signal in get_args(Signal) else "queue"
            return ExternalMetric(type="External", signal=sig, **{key: target})

        if sm is not None:  # the composite metric replaces the triggers in the generated HPA
            self._metrics: tuple[ExternalMetric, ...] = (metric("", sm.metric_type, sm.target),)
            self._metric_labels: tuple[str, ...] = ("composite-metric",)
        else:
            self._metrics = tuple(metric(t.query, t.metric_type, t.threshold) for t in self._triggers)
            self._metric_labels = tuple(f"external:{t.query}" if t.is_signal else f"external:{label}"
                                        for t, label in zip(self._triggers, self._labels, strict=True))

    def _state(self, name: str) -> _State:
        if name not in self._states:
            c = self.config
            behavior = None if c.behavior.is_unset() else c.behavior  # unset: no behavior on the HPA
            self._states[name] = _State(HPAEngine(self._metrics, c.tolerance, behavior, labels=self._metric_labels))
        return self._states[name]

    @property
    def period_s(self) -> float:
        """Called at the faster of the two loops: KEDA's poll and the generated HPA's sync."""
        return min(self.config.period_s, self.config.polling_interval_s)

    def decide(self, now: float, view: ClusterView) -> list[Decision]:
        out = [self._decide(now, view, v) for v in view.variants]
        return [d for d in out if d is not None]

    def _read(self, view: ClusterView, v: VariantView, st: _State, count: bool) -> tuple[_Reading, list[str]]:
        """Every trigger's value (None: failed). ``count``: an HPA sync, whose metric requests are what KEDA
        counts toward fallback (``GetMetricsWithFallback`` runs in GetScaledObjectMetrics only; the poll loop's
        ``getScaledObjectState`` reads the scalers without touching the health counters)."""
        values: dict[str, float | None] = {}
        errors, unmatched = [], set()
        for label, t in zip(self._labels, self._triggers, strict=True):
            try:
                values[label], matched = read_trigger(view, v, t)
                if not matched:
                    unmatched.add(label)
                if count:
                    st.failures[label] = 0
            except MetricsUnavailable as e:
                values[label] = None
                if count:
                    st.failures[label] = st.failures.get(label, 0) + 1
                errors.append(f"{label}: {e}")
            st.failures.setdefault(label, 0)
        error = any(x is None for x in values.values())
        if self._formula is None:
            active = any(x is not None and x > t.activation_threshold
                         for x, t in zip(values.values(), self._triggers, strict=True))
            return _Reading(values, None, error, active, frozenset(unmatched)), errors
        composite = None
        try:  # a failed trigger is left out of the formula's env, as KEDA does: expr reads it as nil (`x ?? 0`)
            composite = self._formula.evaluate(values)
        except (FormulaError, ArithmeticError) as e:
            errors.append(f"formula: {e}")
        assert self.config.scaling_modifiers is not None
        # getScaledObjectState: with a formula the object is active only when no trigger failed
        active = not error and composite is not None and composite > self.config.scaling_modifiers.activation_target
        return _Reading(values, composite, error or composite is None, active, frozenset(unmatched)), errors

    def _fallback_for(self, st: _State, index: int) -> bool:
        """Whether metric ``index`` of the generated HPA is in fallback (failures > failure_threshold)."""
        fb, sm = self.config.fallback, self.config.scaling_modifiers
        if fb is None:
            return False
        if sm is not None:  # the composite metric falls back when any AverageValue trigger does (isFallbackEnabled)
            return any(st.failures.get(label, 0) > fb.failure_threshold
                       for label, t in zip(self._labels, self._triggers, strict=True) if t.metric_type == "AverageValue")
        t = self._triggers[index]
        return t.metric_type == "AverageValue" and st.failures.get(self._labels[index], 0) > fb.failure_threshold

    def _decide(self, now: float, view: ClusterView, v: VariantView) -> Decision | None:
        c, st, current = self.config, self._state(v.name), v.spec_replicas
        if st.created is None:
            st.created = now
        poll_due = st.next_poll is None or now >= st.next_poll - 1e-9
        sync_due = st.next_sync is None or now >= st.next_sync - 1e-9
        if not (poll_due or sync_due):
            return None
        reading, errors = self._read(view, v, st, count=sync_due)
        fallbacks = [self._fallback_for(st, i) for i in range(len(self._metrics))]
        trig = self._trigger_reason(reading, errors, st, any(fallbacks))

        if poll_due:
            st.next_poll = now + c.polling_interval_s
            act = self._scale_loop(now, v, st, reading)
            if act is not None:
                desired, reason = act
                return Decision(v.name, current, desired, (trig, reason))
        if not sync_due:
            return None  # a poll that changed nothing, between two HPA syncs
        st.next_sync = now + c.period_s

        def external(m: ExternalMetric) -> float:
            i = next(k for k, x in enumerate(self._metrics) if x is m)
            value = reading.composite if self._formula is not None else reading.values[self._labels[i]]
            if fallbacks[i]:
                assert c.fallback is not None
                sm = c.scaling_modifiers
                target = sm.target if sm is not None else self._triggers[i].threshold
                return fallback_value(c.fallback, target, current)
            if value is None:
                raise MetricsUnavailable("keda trigger failing, no fallback")
            return value

        d = st.hpa.decide(now, view, v, max(1, v.min_replicas), v.max_replicas, external=external, who="keda-hpa")
        return Decision(v.name, current, d.desired_replicas, (trig, *d.reasons))

    def _trigger_reason(self, r: _Reading, errors: list[str], st: _State, in_fallback: bool) -> Reason:
        values = {"triggers": {k: {"query": t.query, "value": r.values[k], "threshold": t.threshold,
                                   "activation_threshold": t.activation_threshold, "failures": st.failures[k],
                                   "matched": k not in r.unmatched}
                               for k, t in zip(self._labels, self._triggers, strict=True)},
                  "composite": r.composite, "active": r.active, "fallback": in_fallback}
        if errors:
            worst = max(st.failures.values())
            return Reason("trigger_error", f"keda: query failed ({worst} in a row; " + "; ".join(errors) + ")"
                          + (f"; composite = {r.composite:g}" if r.composite is not None else "")
                          + ("; fallback active" if in_fallback else ""), values)
        shown = ", ".join(f"{k} = {x:g}" for k, x in r.values.items() if x is not None)
        if r.composite is not None:
            shown += f"; composite = {r.composite:g}"
        return Reason("trigger", f"keda: {shown} ({'active' if r.active else 'inactive'})", values)

    def _scale_loop(self, now: float, v: VariantView, st: _State, r: _Reading) -> tuple[int, Reason] | None:
        """KEDA's executor (``RequestScale``): activation, deactivation, minReplicaCount."""
        c, current, lo = self.config, v.spec_replicas, v.min_replicas
        idle, fb = c.idle_replica_count, c.fallback
        if r.active:
            if (idle is not None and current < lo) or current == 0:
                st.last_active = now
                want = clamp(max(lo, 1), lo, v.max_replicas)
                return want, Reason("keda_activate", f"keda: trigger active, scaling from {current} to {want}",
                                    {"replicas": want})
            if not r.error:
                st.last_active = now
            return None
        if r.error and (fb is None or fb.replicas != 0):
            return None  # the HPA keeps the count (metrics invalid) or falls back
        if (idle is not None and current > idle) or (current > 0 and lo == 0):
            if (st.last_active is None and st.created is not None and st.created + c.initial_cooldown_period_s <= now) \
                    or (st.last_active is not None and st.last_active + c.cooldown_period_s < now):
                want = idle if idle is not None else lo
                return want, Reason("keda_deactivate", f"keda: inactive for the cooldown period, scaling to {want}",
                                    {"last_active_s": st.last_active, "cooldown_s": c.cooldown_period_s,
                                     "idle_replica_count": idle})
            return None
        if idle is None and current < lo:
            return lo, Reason("clamp", f"keda: {current} replicas below minReplicaCount {lo}", {"min_replicas": lo})
        return None
