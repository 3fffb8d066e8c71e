"""Helpers the engine unit tests share: a constant-latency model and a driver that runs an engine to idle."""
from __future__ import annotations

from scalearena.harness.config.engine_spec import ConstantLatency
from scalearena.harness.sim.engine.core import Engine
from scalearena.harness.sim.engine.latency import ConstantModel


def const(max_num_seqs: int = 256, **kw: float) -> ConstantModel:
    return ConstantModel(ConstantLatency(kind="constant", **kw), max_num_seqs)


def run_all(e: Engine, limit: int = 10_000) -> list:
    """Every event the engine emits until it has nothing left to do (an AssertionError if it never idles)."""
    out = []
    for _ in range(limit):
        t = e.next_event_time()
        if t == float("inf"):
            return out
        out.extend(e.advance(t))
    raise AssertionError("engine did not go idle")
