"""One replica's latency under load, swept from the serving model: the planner's profiling data.

NVIDIA Dynamo's SLA planner sizes replicas from pre-deployment profiling: its profiler runs the
engine at a sweep of prompt lengths and batch sizes and records TTFT and ITL, and the planner
interpolates in those tables (docs/design-docs/planner-design.md, "Performance Interpolation").
Here the "engine" is the scenario's latency model (harness/sim/engine/latency.py) and the sweep is a
grid: mean prompt length ``isl`` (16 points, 16 tokens to the KV capacity, geometric; Dynamo's
default prefill granularity 16), mean output length ``osl`` (8 points, 1 to 4,096) and running
sequences ``batch`` (1, 2, 3, 4, 6, 8, 12, ... up to max_num_seqs). At each point, a replica in
steady state with ``batch`` sequences of that mix:

- roofline (shared steps, chunked prefill): every step carries the ``batch`` decodes, each
  holding isl + osl/2 tokens of context, plus the prompt tokens admitted per step to keep the
  batch full (batch x isl / osl, within ``max_num_batched_tokens``); ITL is that step's time.
  A new arrival's prompt is prefilled in chunks of (max_num_batched_tokens - batch) tokens next
  to the decodes; TTFT is the sum of those steps.
- constant (llm-d-inference-sim): TTFT = the model's TTFT at batch + 1 running, ITL at batch
  running (the load factor).

Queueing is not in the table (it is the latency of an admitted request); the planner keeps the
batch where both targets hold. Tables are computed on first use (~0.1 s per variant) and
interpolated linearly in (log isl, log osl, batch), clamped to the grid (scipy
RegularGridInterpolator). Written by hand: the sweep itself, which no library knows.
"""
from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from scipy.interpolate import RegularGridInterpolator

from scalearena.harness.config.engine_spec import EngineSpec
from scalearena.harness.sim.engine.catalog import GPUSpec
from scalearena.harness.sim.engine.latency import build_latency

OSL_MAX = 4096


def batch_grid(max_num_seqs: int) -> list[int]:
    out, b = [], 1
    while b < max_num_seqs:
        out.append(b)
        b = b + 1 if b < 4 else int(b * 1.5)
    return [*out, max_num_seqs]


class SweptProfile:
    """``controllers.base.ReplicaProfile`` of one engine configuration."""

    def __init__(self, model: Any, kv_tokens: int, max_num_seqs: int, chunk: int) -> None:
        self.model, self.kv_tokens, self.max_num_seqs, self.chunk = model, kv_tokens, max_num_seqs, chunk
        self.isl_grid = np.unique(np.geomspace(16, max(32, kv_tokens), 16).round())
        self.osl_grid = np.unique(np.geomspace(1, OSL_MAX, 8).round())
        self.batch = np.array(batch_grid(max_num_seqs), dtype=float)
        self._tables: tuple[RegularGridInterpolator, RegularGridInterpolator] | None = None

    def _point(self, isl: float, osl: float, b: int) -> tuple[float, float]:
        m = self.model
        if not getattr(m, "shared_steps", False):
            return m.ttft_s(int(isl), b + 1), m.itl_s(b, b, 0.0)
        ctx = b * (isl + osl / 2)
        room = max(1, self.chunk - b)
        admit = min(room, b * isl / max(1.0, osl))
        itl = m.step_s(int(admit), admit * isl / 2, b, ctx)
        n = math.ceil(isl / room)
        piece = isl / n
        ttft = n * m.step_s(int(piece), piece * isl / 2, b, ctx)
        return ttft, itl

    def _build(self) -> tuple[RegularGridInterpolator, RegularGridInterpolator]:
        # scipy.interpolate costs ~0.35 s and ~40 MB to import: only when a profile is first interpolated,
        # not in every process that builds a view
        from scipy.interpolate import RegularGridInterpolator
        shape = (len(self.isl_grid), len(self.osl_grid), len(self.batch))
        ttft, itl = np.zeros(shape), np.zeros(shape)
        for i, isl in enumerate(self.isl_grid):
            for o, osl in enumerate(self.osl_grid):
                for k, b in enumerate(self.batch):
                    ttft[i, o, k], itl[i, o, k] = self._point(float(isl), float(osl), int(b))
        axes = (np.log(self.isl_grid), np.log(self.osl_grid), self.batch)
        return RegularGridInterpolator(axes, ttft), RegularGridInterpolator(axes, itl)

    def _at(self, which: int, isl: float, osl: float, batch: Sequence[int]) -> list[float]:
        if self._tables is None:
            self._tables = self._build()
        li = np.log(np.clip(isl, self.isl_grid[0], self.isl_grid[-1]))
        lo = np.log(np.clip(osl, self.osl_grid[0], self.osl_grid[-1]))
        b = np.clip(np.asarray(batch, dtype=float), self.batch[0], self.batch[-1])
        pts = np.column_stack([np.full(len(b), li), np.full(len(b), lo), b])
        return [float(x) for x in self._tables[which](pts)]

    def ttft_s(self, isl: float, osl: float, batch: Sequence[int]) -> list[float]:
        return self._at(0, isl, osl, batch)

    def itl_s(self, isl: float, osl: float, batch: Sequence[int]) -> list[float]:
        return self._at(1, isl, osl, batch)


@functools.lru_cache(maxsize=256)
def _profile(engine_json: str, gpu: str | GPUSpec) -> SweptProfile | None:
    try:
        spec = EngineSpec.model_validate(json.loads(engine_json))
        model, blocks = build_latency(spec, gpu)
    except Exception:  # partial or unknown settings (test views): no profile, the planner says so
        return None
    return SweptProfile(model, blocks * spec.block_size, spec.max_num_seqs, spec.max_num_batched_tokens)


def replica_profile(engine: Mapping[str, Any], gpu: str | GPUSpec) -> SweptProfile | None:
    """The swept profile of a variant's engine settings (memoised: one per configuration and GPU)."""
    return _profile(json.dumps(dict(engine), sort_keys=True, default=str), gpu)
