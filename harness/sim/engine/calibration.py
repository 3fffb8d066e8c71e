"""Measured step times and the roofline model's error on them: what the calibration fits and what
the calibration test gates (one reading of the profiles for both).

The profiles (benchmarks/data/h200, see its README) hold three kinds of step: ``prefill`` (one
prompt, or ``prefill_batch``: several prompts of one length at once), ``decode`` (one token for
each of ``batch`` sequences at context ``ctx``) and ``mixed`` (vLLM chunked prefill: those decodes
plus the first ``chunk`` tokens of one more prompt in the same forward). Each becomes the
arguments of ``RooflineModel.step_s``; errors are reported per phase (prefill_batch counts as
prefill) because one phase's good fit must not hide another's bad one.
"""
from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from scalearena.harness.sim.engine.catalog import gpu_spec, model_shape
from scalearena.harness.sim.engine.latency import RooflineModel, RooflineParams

PROFILE_FILES = ("h200_profile.csv", "h200_mixed_profile.csv")
PHASES = ("prefill", "decode", "mixed")


@dataclass(frozen=True)
class StepPoint:
    model: str
    kind: str  # prefill | prefill_batch | decode | mixed (as measured)
    batch: int
    length: int  # prompt length (prefill) or context per sequence (decode, mixed)
    chunk: int  # mixed: prefill chunk tokens
    ms: float
    source: str

    @property
    def phase(self) -> str:
        return "prefill" if self.kind == "prefill_batch" else self.kind

    def step_args(self) -> tuple[int, float, int, float, int]:
        """(prefill tokens, causal pairs, decoding sequences, their KV tokens, prompts finishing)."""
        b, n, c = self.batch, self.length, self.chunk
        if self.kind == "prefill":
            return n, n * (n + 1) / 2.0, 0, 0.0, 1
        if self.kind == "prefill_batch":
            return b * n, b * n * (n + 1) / 2.0, 0, 0.0, b
        if self.kind == "decode":
            return 0, 0.0, b, float(b * n), 0
        return c, c * (c + 1) / 2.0, b, float(b * n), 1  # mixed: one more prompt's first chunk


def load_points(folder: Path) -> list[StepPoint]:
    """Every measured (``graph`` mode, timed) step of the profiles in ``folder``."""
    out = []
    for name in PROFILE_FILES:
        with open(folder / name) as f:
            for r in csv.DictReader(f):
                if r["mode"] != "graph" or not r["ms"]:
                    continue
                out.append(StepPoint(r["model"], r["phase"], int(r["batch"]), int(r["ctx_or_prompt_len"]),
                                     int(r.get("chunk") or 0), float(r["ms"]), name))
    return out


def model_ms(p: StepPoint, params: RooflineParams, gpu: str = "H200") -> float:
    shape = model_shape(p.model)
    return RooflineModel(gpu_spec(gpu), shape, 1, params).step_s(*p.step_args()) * 1000.0


def phase_errors(points: list[StepPoint], params_of) -> dict[str, tuple[int, float, float]]:
    """Per phase: (points, mean |relative error|, max |relative error|); ``params_of(model name)``."""
    out = {}
    for ph in PHASES:
        errs = [abs(model_ms(p, params_of(p.model)) / p.ms - 1.0) for p in points if p.phase == ph]
        if errs:
            out[ph] = (len(errs), sum(errs) / len(errs), max(errs))
    return out
