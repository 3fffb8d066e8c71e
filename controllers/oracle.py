"""PLACEHOLDER for `oracle` — to be replaced by the real policy."""
from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from .base import AutoscalerConfig
from .static import Static


class OracleConfig(AutoscalerConfig):
    kind: Literal["oracle"] = Field(default="oracle", description="placeholder")
    period_s: float = Field(default=10, gt=0, description="Decision period, seconds.")


class Oracle(Static):
    kind: ClassVar[str] = "oracle"

    def __init__(self, config: OracleConfig) -> None:
        from .static import StaticConfig

        super().__init__(StaticConfig())
        self.config = config  # type: ignore[assignment]
