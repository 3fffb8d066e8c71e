"""``frontier:`` of a suite file: which oracle-frontier runs back the report's regret (harness/sizing/frontier.py)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import click
from pydantic import Field, model_validator

from scalearena.contracts.limits import StrictSpec

FRONTIER_FILE = "frontier.json"  # OUT/frontier.json: the suite's frontier points
MAX_UTILIZATION = 4.0  # controllers/oracle.py OracleConfig.utilization's upper limit


class FrontierSpec(StrictSpec):
    """``frontier:`` in a suite file (``true`` for the defaults)."""

    enabled: bool = Field(default=False, description="Run the oracle frontier for every scenario, sweep point "
                          "and seed of the suite (simulator only; --frontier/--no-frontier override).")
    utilization: list[Annotated[float, Field(gt=0, le=MAX_UTILIZATION)]] = Field(
        default_factory=lambda: [2.0, 1.25, 1.0, 0.9, 0.75, 0.5], min_length=1,
        description="Oracle utilization settings to run (share of a replica's unsaturated capacity planned "
                    "busy, 0 < u <= 4; below 1: headroom, above 1: fewer replicas than the load needs).")
    floor: bool = Field(default=True, description="Also run the floor: every variant at its min_replicas "
                        "(the cheapest run there is; anchors the bound at low attainment).")

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        return {"enabled": data} if isinstance(data, bool) else data


def frontier_option(default: str) -> Callable[[Any], Any]:
    """``--frontier/--no-frontier`` of suite and tune (None when not given: ``default`` decides); here, not in
    frontier.py, so that the CLI can declare it without loading the run machinery."""
    return click.option("--frontier/--no-frontier", "with_frontier", default=None,
                        help="Run the oracle frontier, the bound of regret (extra simulator runs per scenario, "
                             f"sweep point and seed, cached); default: {default}.")
