"""PLACEHOLDER for `keda` — to be replaced by the real policy."""
from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from .base import AutoscalerConfig
from .static import Static


class KEDAConfig(AutoscalerConfig):
    kind: Literal["keda"] = Field(default="keda", description="placeholder")
    period_s: float = Field(default=30, gt=0, description="Decision period, seconds.")


class KEDA(Static):
    kind: ClassVar[str] = "keda"

    def __init__(self, config: KEDAConfig) -> None:
        from .static import StaticConfig

        super().__init__(StaticConfig())
        self.config = config  # type: ignore[assignment]
