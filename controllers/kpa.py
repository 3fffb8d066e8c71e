"""PLACEHOLDER for `kpa` — to be replaced by the real policy."""
from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from .base import AutoscalerConfig
from .static import Static


class KPAConfig(AutoscalerConfig):
    kind: Literal["kpa"] = Field(default="kpa", description="placeholder")
    period_s: float = Field(default=2, gt=0, description="Decision period, seconds.")


class KPA(Static):
    kind: ClassVar[str] = "kpa"

    def __init__(self, config: KPAConfig) -> None:
        from .static import StaticConfig

        super().__init__(StaticConfig())
        self.config = config  # type: ignore[assignment]
