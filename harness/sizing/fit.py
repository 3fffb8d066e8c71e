"""Which of a scenario's requests can never be served (``scalearena validate``'s warning).

A request whose prompt + max_tokens exceeds what a replica accepts (``max_model_len``, capped by
the whole KV cache; ``engine.core.fit_limit``) is answered 400 and counted as ``too_long``. That
is almost always a trace/variant mismatch the user wants to hear about before a long run, so
``validate`` streams the scenario's requests once and counts them against the smallest variant
of each model (the router may send any request to any variant of its model).
"""
from __future__ import annotations

from dataclasses import dataclass

from scalearena.harness.sim.engine.core import fit_limit
from scalearena.harness.sim.engine.latency import build_latency
from scalearena.workloads.generate import iter_requests


@dataclass(frozen=True)
class Oversize:
    model: str
    variant: str  # the variant with the smallest limit
    limit_tokens: int  # prompt + max_tokens it accepts
    requests: int  # requests for the model
    too_long: int  # of them, beyond the limit


def variant_limits(scenario) -> dict[str, tuple[str, int]]:
    """Per model: (variant, fit limit) of the variant that accepts the fewest tokens."""
    out: dict[str, tuple[str, int]] = {}
    for i, v in enumerate(scenario.cluster.variants):
        _, blocks = build_latency(v.engine, scenario.cluster.gpu(v.gpu), where=f"cluster.variants[{i}].engine")
        limit = fit_limit(blocks, v.engine.block_size, v.engine.max_model_len)
        if v.model not in out or limit < out[v.model][1]:
            out[v.model] = (v.name, limit)
    return out


def oversized(scenario) -> list[Oversize]:
    """Models with at least one request that cannot fit their smallest variant."""
    limits = variant_limits(scenario)
    total: dict[str, int] = {}
    bad: dict[str, int] = {}
    for r in iter_requests(scenario):
        total[r.model] = total.get(r.model, 0) + 1
        lim = limits.get(r.model)
        if lim is not None and r.input_tokens + max(1, r.output_tokens) > lim[1]:
            bad[r.model] = bad.get(r.model, 0) + 1
    return [Oversize(m, limits[m][0], limits[m][1], total[m], n) for m, n in sorted(bad.items())]
