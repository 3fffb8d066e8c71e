"""``static``: a fixed replica count per variant — the no-autoscaler baseline."""
from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from scalearena.contracts.tunable import tune

from .base import AutoscalerBase, AutoscalerConfig, ClusterView, Decision, Reason, clamp


class StaticConfig(AutoscalerConfig):
    kind: Literal["static"] = Field(default="static", description="Fixed replica count; never scales.")
    replicas: int | None = Field(
        default=None, ge=0, description="Replicas per variant; null keeps each variant's initial replicas.",
        json_schema_extra=tune(1, 20),
    )
    per_variant: dict[str, int] = Field(
        default_factory=dict, description="Replicas by variant name, overriding `replicas`."
    )
    period_s: float = Field(default=30.0, gt=0, description="How often the fixed target is re-asserted, seconds.")


class Static(AutoscalerBase):
    kind: ClassVar[str] = "static"
    config: StaticConfig

    def __init__(self, config: StaticConfig) -> None:
        super().__init__(config)
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
                    reasons=(Reason("static", f"fixed at {desired} replicas", {"replicas": desired}),),
                )
            )
        return out
