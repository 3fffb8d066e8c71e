"""What a workload produces: a time-ordered stream of request specs.

The same stream drives every backend: the simulator consumes it as an arrival
list, the Locust user (local / kind / cluster) as an open-loop send schedule.
"""
from __future__ import annotations

from typing import NamedTuple


class RequestSpec(NamedTuple):
    """One request of the run's stream. A named tuple, not a frozen dataclass: a run builds one per
    request, and a frozen dataclass's ``__init__`` (one ``object.__setattr__`` per field) took
    2.7 us of the 3.3 us per request that generation costs (16 ms of a 6,024-request paper run)."""

    request_id: int  # unique within a run, increasing with arrival time
    model: str  # logical model the request targets
    arrival_s: float  # scheduled send time, seconds from the start of the run
    input_tokens: int
    output_tokens: int
    prefix_group: int = -1  # shared-prefix group (-1: none); the router's prefix-cache affinity key
    prefix_tokens: int = 0  # tokens of the prompt that belong to the shared prefix
    hash_ids: tuple[int, ...] = ()  # Mooncake-style block hashes of the prompt, when a trace provides them
    tenant: str = ""  # flow control's fairness id (x-gateway-inference-fairness-id)
    priority: int = 0  # flow control's priority band (higher first)


HASH_BLOCK_TOKENS = 512  # prompt tokens per Mooncake hash id (the trace's block size)


def prefix_units(spec: RequestSpec) -> tuple[tuple[int, int], ...]:
    """The prompt's identity for prefix caching, in order: (hash, tokens) units. A Mooncake trace gives
    one hash per 512-token block (a chain: equal leading hashes mean an equal prefix); a synthetic
    shared-prefix group gives one unit of its prefix length; otherwise nothing is shareable."""
    if spec.hash_ids:
        n = spec.input_tokens
        return tuple((h, min(HASH_BLOCK_TOKENS, n - i * HASH_BLOCK_TOKENS))
                     for i, h in enumerate(spec.hash_ids) if i * HASH_BLOCK_TOKENS < n)
    if spec.prefix_group >= 0 and spec.prefix_tokens > 0:
        # a negative id apart from trace hash ids; not -1, whose Python hash equals -2's (groups 0 and 1 would merge)
        return ((-2 - spec.prefix_group, min(spec.prefix_tokens, spec.input_tokens)),)
    return ()
