"""WVA's configuration: the saturation-scaling config map as one pydantic model.

Upstream WVA keeps its thresholds in one config map (a global default entry
plus per-model overrides), not on each VariantAutoscaling resource. This model
mirrors that: top-level fields are the global defaults, ``model_overrides``
patches them per model ID. Every field carries a description and
``extra="forbid"`` rejects stale keys, so a typo in a scenario file is an
error instead of a silently ignored setting.

Defaults are upstream's: tau_kv 0.80, tau_q 5, gamma_kv 0.10, gamma_q 3,
MinNonSaturatedReplicasForScaleDown 2, a 30 s optimisation loop, a 100 ms
scale-from-zero loop, ``max_over_time[1m]`` metric windows and a 10 min
scale-to-zero retention period.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import Field, model_validator

from scalearena.contracts.limits import StrictSpec
from scalearena.contracts.tunable import Tunable, declared, tune
from scalearena.controllers.base import AutoscalerConfig


class _Spec(StrictSpec):
    """Extra keys forbidden, frozen, NaN/inf and numbers past their unit's limit refused."""


@dataclass(frozen=True)
class Thresholds:
    """The saturation thresholds in force for one model (defaults merged with its override)."""

    tau_kv: float
    tau_q: float
    gamma_kv: float
    gamma_q: float
    min_non_saturated: int

    def as_dict(self) -> dict[str, float]:
        return {
            "tau_kv": self.tau_kv,
            "tau_q": self.tau_q,
            "gamma_kv": self.gamma_kv,
            "gamma_q": self.gamma_q,
            "min_non_saturated": self.min_non_saturated,
        }


def _check_spare_triggers(tau_kv: float, tau_q: float, gamma_kv: float, gamma_q: float, where: str) -> None:
    # Spare capacity of a non-saturated replica lies in (0, tau]; a trigger at or above tau would
    # fire on every cycle and scale up forever.
    if gamma_kv >= tau_kv:
        raise ValueError(f"{where}: gamma_kv ({gamma_kv}) must be below tau_kv ({tau_kv})")
    if gamma_q >= tau_q:
        raise ValueError(f"{where}: gamma_q ({gamma_q}) must be below tau_q ({tau_q})")


class ModelOverride(_Spec):
    """Per-model entry of the config map; unset fields inherit the global defaults."""

    tau_kv: float | None = Field(default=None, gt=0, le=1, description="KV-cache saturation threshold.")
    tau_q: float | None = Field(default=None, gt=0, description="Waiting-queue saturation threshold.")
    gamma_kv: float | None = Field(default=None, ge=0, le=1, description="KV spare-capacity trigger.")
    gamma_q: float | None = Field(default=None, ge=0, description="Queue spare-capacity trigger.")
    min_non_saturated_for_scale_down: int | None = Field(
        default=None, ge=2, description="Non-saturated replicas required before a scale-down."
    )
    scale_to_zero: bool | None = Field(default=None, description="Enable scale-to-zero for this model.")
    retention_s: float | None = Field(
        default=None, gt=0, description="Scale-to-zero retention period for this model, seconds."
    )


class HeadroomSpec(_Spec):
    """Opt-in headroom rule: on a trigger, size the model for its load plus a buffer delta."""

    enabled: bool = Field(default=False, description="Use the headroom rule instead of +1 per cycle.")
    delta_kv: float = Field(
        default=0.3, ge=0, description="KV buffer on top of the summed KV load, in replica-KV fractions.",
        json_schema_extra=tune(0.0, 2.0),
    )
    delta_q: float = Field(default=2.0, ge=0, description="Queue buffer on top of the summed waiting requests.",
                           json_schema_extra=tune(0.0, 10.0))
    max_step: int = Field(default=4, ge=1, description="Most replicas added to a model in one decision.",
                          json_schema_extra=tune(1, 10))


class ScaleToZeroSpec(_Spec):
    """Scale-to-zero for idle models (per-model switch in ``model_overrides``)."""

    enabled: bool = Field(
        default=False, description="Send a model to 0 after a retention period without successful requests."
    )
    retention_s: float = Field(
        default=600.0, gt=0, description="Window over which zero successful requests means idle, seconds."
    )


class WVAConfig(AutoscalerConfig):
    kind: Literal["wva"] = Field(
        default="wva", description="llm-d Workload Variant Autoscaler (saturation policy, cost-aware variants)."
    )
    period_s: float = Field(default=30.0, gt=0, description="Optimisation loop period, seconds.")
    fast_period_s: float | None = Field(
        default=0.1, gt=0, description="Scale-from-zero loop period, seconds; null disables the fast loop."
    )
    # tune ranges: gamma_kv's top (0.45) stays below tau_kv's bottom (0.5) and gamma_q's (3) at tau_q's, so
    # almost every sampled pair passes the spare-trigger check below
    tau_kv: float = Field(default=0.80, gt=0, le=1, description="A replica is saturated at KV usage >= tau_kv.",
                          json_schema_extra=tune(0.5, 0.95))
    tau_q: float = Field(default=5.0, gt=0, description="A replica is saturated at waiting requests >= tau_q.",
                         json_schema_extra=tune(3.0, 20.0, log=True))
    gamma_kv: float = Field(
        default=0.10, ge=0, le=1, description="Scale up when the average spare KV (tau_kv - U_kv) < gamma_kv.",
        json_schema_extra=tune(0.02, 0.45),
    )
    gamma_q: float = Field(
        default=3.0, ge=0, description="Scale up when the average spare queue (tau_q - U_q) < gamma_q.",
        json_schema_extra=tune(0.5, 3.0),
    )
    min_non_saturated_for_scale_down: int = Field(
        default=2, ge=2, description="Scale down only with at least this many non-saturated replicas.",
        json_schema_extra=tune(2, 5),
    )
    model_overrides: dict[str, ModelOverride] = Field(
        default_factory=dict, description="Per-model threshold and scale-to-zero overrides, by model ID."
    )
    metric_window_s: float = Field(
        default=60.0, gt=0, description="max_over_time window for KV usage and waiting queue, seconds."
    )
    staleness_s: float = Field(
        default=60.0, gt=0, description="Pod samples older than this make the variant's metrics unavailable."
    )
    actuation: Literal["hpa", "direct"] = Field(
        default="hpa",
        description="hpa: publish wva_desired_replicas for an HPA to apply at its next sync after a scrape "
                    "(upstream's common path; direct only from 0 replicas); direct: patch the scale subresource "
                    "at once.",
    )
    mode: Literal["unconstrained", "constrained"] = Field(
        default="unconstrained",
        description="unconstrained: solve each model alone; constrained: greedy-by-saturation under a GPU budget.",
    )
    gpu_budget: int | None = Field(
        default=None,
        ge=0,
        description="Constrained mode: total GPUs across all types; null = per-type capacity from discovery.",
    )
    headroom: HeadroomSpec = Field(default_factory=HeadroomSpec, description="Opt-in headroom scale-up rule.")
    scale_to_zero: ScaleToZeroSpec = Field(
        default_factory=ScaleToZeroSpec, description="Scale-to-zero defaults for every model."
    )

    @model_validator(mode="after")
    def _spare_triggers_below_thresholds(self) -> WVAConfig:
        _check_spare_triggers(self.tau_kv, self.tau_q, self.gamma_kv, self.gamma_q, "wva")
        for model in self.model_overrides:
            t = self.thresholds(model)
            _check_spare_triggers(t.tau_kv, t.tau_q, t.gamma_kv, t.gamma_q, f"model_overrides.{model}")
        return self

    def tunables(self) -> list[Tunable]:
        """The thresholds; with the headroom rule on, its buffers and step too."""
        return declared(self) + (declared(self.headroom, "headroom.") if self.headroom.enabled else [])

    def thresholds(self, model: str) -> Thresholds:
        o = self.model_overrides.get(model) or ModelOverride()

        def pick(value: float | int | None, default: float | int) -> float | int:
            return default if value is None else value

        return Thresholds(
            tau_kv=float(pick(o.tau_kv, self.tau_kv)),
            tau_q=float(pick(o.tau_q, self.tau_q)),
            gamma_kv=float(pick(o.gamma_kv, self.gamma_kv)),
            gamma_q=float(pick(o.gamma_q, self.gamma_q)),
            min_non_saturated=int(pick(o.min_non_saturated_for_scale_down, self.min_non_saturated_for_scale_down)),
        )

    def scale_to_zero_for(self, model: str) -> tuple[bool, float]:
        """(enabled, retention_s) for one model."""
        o = self.model_overrides.get(model) or ModelOverride()
        enabled = self.scale_to_zero.enabled if o.scale_to_zero is None else o.scale_to_zero
        retention = self.scale_to_zero.retention_s if o.retention_s is None else o.retention_s
        return enabled, retention
