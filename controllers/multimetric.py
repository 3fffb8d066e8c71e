"""PLACEHOLDER for `multimetric` — to be replaced by the real policy."""
from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from .base import AutoscalerConfig
from .static import Static


class MultiMetricConfig(AutoscalerConfig):
    kind: Literal["multimetric"] = Field(default="multimetric", description="placeholder")
    period_s: float = Field(default=5, gt=0, description="Decision period, seconds.")


class MultiMetric(Static):
    kind: ClassVar[str] = "multimetric"

    def __init__(self, config: MultiMetricConfig) -> None:
        from .static import StaticConfig

        super().__init__(StaticConfig())
        self.config = config  # type: ignore[assignment]
