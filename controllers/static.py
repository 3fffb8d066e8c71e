"""``static``: a fixed replica count per variant — the no-autoscaler baseline."""
from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field

from scalearena.contracts.limits import MAX_REPLICAS
from scalearena.contracts.tunable import tune
from scalearena.controllers.base import AutoscalerBase, AutoscalerConfig, ClusterView, Decision, Reason, clamp


class StaticConfig(AutoscalerConfig):
    kind: Literal["static"] = Field(default="static", description="Fixed replica count; never scales.")
    replicas: int | None = Field(
        default=None, ge=0, description="Replicas per variant; null keeps each variant's initial replicas.",
        json_schema_extra=tune(1, 20),
    )
    per_variant: dict[str, Annotated[int, Field(ge=0, le=MAX_REPLICAS)]] = Field(
        default_factory=dict, description="Replicas by variant name, overriding `replicas`."
    )
    period_s: float = Field(default=30.0, gt=0, description="How often the fixed target is re-asserted, seconds.")
    size: Literal["peak", "mean"] | None = Field(
        default=None, description="Size the fixed count before the run, by simulation: the fewest replicas meeting "
        "the SLO at the workload's peak (busiest 60 s) or mean rate (harness/sizing/static.py); replaces `replicas` "
        "and `per_variant`.")


class StaticPeakConfig(StaticConfig):
    kind: Literal["static-peak"] = Field(  # type: ignore[assignment]
        default="static-peak", description="Fixed count: the fewest replicas meeting the SLO at the peak rate.")
    size: Literal["peak", "mean"] | None = Field(default="peak", description="See static.")


class StaticMeanConfig(StaticConfig):
    kind: Literal["static-mean"] = Field(  # type: ignore[assignment]
        default="static-mean", description="Fixed count: the fewest replicas meeting the SLO at the mean rate.")
    size: Literal["peak", "mean"] | None = Field(default="mean", description="See static.")


class Static(AutoscalerBase):
    kind: ClassVar[str] = "static"
    config: StaticConfig

    def __init__(self, config: StaticConfig) -> None:
        super().__init__(config)
        self.kind = config.kind  # type: ignore[misc]  # static, static-peak or static-mean
        self._initial: dict[str, int] = {}

    def decide(self, now: float, view: ClusterView) -> list[Decision]:
        out = []
        for v in view.variants:
            self._initial.setdefault(v.name, v.spec_replicas)
            want = self.config.per_variant.get(v.name, self.config.replicas)
            if want is None:
                want = self._initial[v.name]
            desired = clamp(want, v.min_replicas, v.max_replicas)
            out.append(
                Decision(
                    variant=v.name,
                    current_replicas=v.spec_replicas,
                    desired_replicas=desired,
                    reasons=(Reason("static", f"fixed at {desired} replicas" + (
                        f", sized at the {self.config.size} rate (the run's derived settings)" if self.config.size
                        else ""), {"replicas": desired}),),
                )
            )
        return out
