"""Scheduled faults of a scenario (``faults:``): metrics outages, pod crashes, slow cold starts.

Kept apart from harness/config/scenario.py so the experiment schema stays one module of readable size;
scenario.py re-exports every name.
"""
from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from scalearena.harness.config.engine_spec import _Spec


class _Window(_Spec):
    """A fault active from start_s to end_s (an end before the start would never close it)."""

    start_s: float = Field(ge=0, description="Window start, seconds.")
    end_s: float = Field(gt=0, description="Window end, seconds; after start_s.")

    @model_validator(mode="after")
    def _ordered(self) -> _Window:
        if self.end_s <= self.start_s:
            raise ValueError(f"end_s {self.end_s:g} must be after start_s {self.start_s:g}")
        return self


class MetricsOutage(_Window):
    kind: Literal["metrics_outage"] = Field(description="The metrics backend is unreachable for a window.")


class PodCrash(_Spec):
    kind: Literal["pod_crash"] = Field(description="One ready pod dies at once; its requests fail as error.")
    at_s: float = Field(ge=0, description="When, seconds.")
    variant: str | None = Field(default=None, description="Variant whose pod crashes; null = first variant.")


class SlowColdStart(_Window):
    kind: Literal["slow_cold_start"] = Field(description="Pods created in the window start this much slower.")
    factor: float = Field(gt=1, description="Multiplier on startup_s.")


Fault = Annotated[MetricsOutage | PodCrash | SlowColdStart, Field(discriminator="kind")]
