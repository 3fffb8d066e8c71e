"""PLACEHOLDER for `hpa` — to be replaced by the real policy."""
from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from .base import AutoscalerConfig
from .static import Static


class HPAConfig(AutoscalerConfig):
    kind: Literal["hpa"] = Field(default="hpa", description="placeholder")
    period_s: float = Field(default=15, gt=0, description="Decision period, seconds.")


class HPA(Static):
    kind: ClassVar[str] = "hpa"

    def __init__(self, config: HPAConfig) -> None:
        from .static import StaticConfig

        super().__init__(StaticConfig())
        self.config = config  # type: ignore[assignment]
