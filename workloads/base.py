"""What a workload produces: a time-ordered stream of request specs.

The same stream drives every backend: the simulator consumes it as an arrival
list, the Locust user (local / kind / cluster) as an open-loop send schedule.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RequestSpec:
    request_id: int  # unique within a run, increasing with arrival time
    model: str  # logical model the request targets
    arrival_s: float  # scheduled send time, seconds from the start of the run
    input_tokens: int
    output_tokens: int
    prefix_group: int = -1  # shared-prefix group (-1: none); the router's prefix-cache affinity key
    prefix_tokens: int = 0  # tokens of the prompt that belong to the shared prefix
    hash_ids: tuple[int, ...] = ()  # Mooncake-style block hashes of the prompt, when a trace provides them
