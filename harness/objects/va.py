"""The project's VariantAutoscaling CR (manifests/autoscalers/wva/crd.yaml) read as the API server would.

The CRD's OpenAPI schema is the contract: ``modelID`` a string of 1..128 characters, ``variantCost`` a
decimal string (``^\\d+(\\.\\d+)?$``, default "10.0"), ``minReplicas`` an integer >= 0, ``maxReplicas`` an
integer >= 1. An API server refuses ``minReplicas: .inf``, ``true`` or ``1.5`` (the schema's integer
type), so they are refused here with the field named, as is ``maxReplicas`` below ``minReplicas`` (the
WVA controller would never be able to satisfy both) and a count past ``MAX_REPLICAS``.
"""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from scalearena.contracts.errors import UserError
from scalearena.contracts.limits import MAX_COST, MAX_REPLICAS
from scalearena.controllers.kubernetes import ObjectTarget
from scalearena.controllers.wva.controller import WVAConfig
from scalearena.harness.config.schema_help import validated
from scalearena.harness.objects.hpa import check_replica_range
from scalearena.harness.objects.load import Doc


class VASpec(BaseModel):
    model_config = ConfigDict(extra="allow")  # scaleTargetRef and fields WVA reads elsewhere are checked apart

    modelID: str | None = Field(default=None, min_length=1, max_length=128, strict=True)
    variantCost: str | None = Field(default=None, pattern=r"^\d+(\.\d+)?$", strict=True)
    minReplicas: int | None = Field(default=None, ge=0, le=MAX_REPLICAS, strict=True)
    maxReplicas: int | None = Field(default=None, ge=1, le=MAX_REPLICAS, strict=True)

    @model_validator(mode="after")
    def _bounds(self) -> VASpec:
        check_replica_range(self.minReplicas, self.maxReplicas)
        if self.variantCost is not None and not 0 < float(self.variantCost) <= MAX_COST:
            raise ValueError(f"variantCost {self.variantCost}: must be above 0 and at most {MAX_COST:g}")
        return self


class VAObject(BaseModel):
    model_config = ConfigDict(extra="allow")  # apiVersion, kind, metadata: read by load.py

    spec: VASpec = Field(default_factory=VASpec)


def variant_autoscaling(d: Doc, variant: str, model: str) -> ObjectTarget:
    """One variant under WVA with the CR's cost and bounds; the variants' CRs share one WVA (its thresholds
    are WVA's defaults)."""
    spec = validated(VAObject, d.data, d.where).spec
    if spec.modelID is not None and spec.modelID != model:
        raise UserError(f"spec.modelID: {spec.modelID!r}, but variant {variant!r} serves {model!r}", where=d.where)
    cost = None if spec.variantCost is None else float(spec.variantCost)
    return ObjectTarget(variant=variant, source=d.where, autoscaler=WVAConfig(name="wva"), cost=cost,
                        min_replicas=spec.minReplicas, max_replicas=spec.maxReplicas)

