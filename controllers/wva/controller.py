"""PLACEHOLDER for `wva` — to be replaced by the real policy."""
from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from ..base import AutoscalerConfig
from ..static import Static, StaticConfig


class WVAConfig(AutoscalerConfig):
    kind: Literal["wva"] = Field(default="wva", description="placeholder")
    period_s: float = Field(default=30.0, gt=0, description="Optimisation loop period, seconds.")


class WVA(Static):
    kind: ClassVar[str] = "wva"

    def __init__(self, config: WVAConfig) -> None:
        super().__init__(StaticConfig())
        self.config = config  # type: ignore[assignment]
