"""Peak prefill throughput of one replica, from its latency model: what llm-d's calibration script measures.

llm-d's token-aware recipes (guides/workload-autoscaling/keda-epp-token-aware) turn the EPP's in-flight prompt
tokens into seconds of prefill backlog by dividing by ``peakPrefillThroughput``, the tokens per second one replica
prefills when saturated with prefill-only work (guides/recipes/router/calibration/calibrate.sh measures it on the
real stack). The simulator knows its engine's step times, so the same number is computed, not measured:

- roofline: steps of ``max_num_batched_tokens`` filled with prompts of the workload's mean length (several per step
  when they fit, one chunked over several steps when not), each step's time from ``step_s`` with the prompts'
  causal attention pairs; throughput = prompt tokens / summed step time;
- constant (llm-d-inference-sim): every slot of ``max_num_seqs`` busy with a prompt, each taking the model's TTFT
  at that load; throughput = max_num_seqs x prompt tokens / TTFT.

No prefix-cache hits and no decode work are assumed, as the calibration's prefill-only load has none.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from scalearena.harness.sim.engine.latency import ConstantModel, RooflineModel


@dataclass(frozen=True)
class PeakPrefill:
    tokens_per_s: float
    how: str  # one line for the run report


def peak_prefill(model: Any, prompt_tokens: int, max_num_batched_tokens: int, max_num_seqs: int) -> PeakPrefill:
    """Prefill tokens per second of one saturated replica for prompts of ``prompt_tokens``."""
    n_tok = max(1, int(prompt_tokens))
    if isinstance(model, RooflineModel):
        chunk = max(1, max_num_batched_tokens)
        if n_tok <= chunk:
            per_step = min(chunk // n_tok, max(1, max_num_seqs))
            tokens = per_step * n_tok
            t = model.step_s(tokens, per_step * n_tok * (n_tok + 1) / 2.0, 0, 0.0, per_step)
            how = f"roofline steps of {per_step} x {n_tok}-token prompts"
        else:
            t, done = 0.0, 0
            while done < n_tok:
                c = min(chunk, n_tok - done)
                t += model.step_s(c, c * (done + (c + 1) / 2.0), 0, 0.0, 1 if done + c == n_tok else 0)
                done += c
            tokens = n_tok
            how = f"roofline, one {n_tok}-token prompt in {math.ceil(n_tok / chunk)} chunks of {chunk}"
        return PeakPrefill(tokens / t, how)
    if isinstance(model, ConstantModel):
        slots = max(1, max_num_seqs)
        ttft = model.ttft_s(n_tok, slots)
        if ttft <= 0.0:  # llm-d-inference-sim with no TTFT: prefill takes no time, no backlog builds
            return PeakPrefill(math.inf, "constant latency with TTFT 0: prefill is instant")
        return PeakPrefill(slots * n_tok / ttft, f"constant latency: {slots} slots x {n_tok} tokens / "
                           f"TTFT {ttft * 1000:g} ms")
    raise TypeError(f"no peak prefill throughput for latency model {type(model).__name__}")
