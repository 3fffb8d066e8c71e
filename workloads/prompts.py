"""Prompt text for a scheduled request, shaped so an engine's prefix cache sees what the workload intends.

Engines hash prompts in KV blocks, each block's hash chained to the one
before it (vLLM's automatic prefix caching, llm-d-inference-sim's
``--enable-kvcache``). A prompt of N identical words therefore shares every
block with every other prompt of that length: the simulator's KV usage stays
low and results stop being comparable with the scalearena engine model, which
shares only a request's declared prefix. So the text is:

* ``prefix_tokens`` words that depend only on ``prefix_group`` (shared by the
  group, as a system prompt would be), then
* one word unique to the request (``request_id``), which makes every later
  block unique because block hashes chain, then
* filler words up to ``input_tokens``.

A Mooncake request (``hash_ids``) instead gets one 512-word block per hash
id, each a marker word ``h<id>`` and filler: equal leading hash ids give an
equal text prefix, the first differing id a differing word, so an engine that
hashes token blocks (vLLM, serve-engine) or a router that hashes the prompt
(llm-d's prefix scorer, serve-router) finds exactly the prefix the trace
declares. This text is how the prefix identity reaches a real stack: any
OpenAI client can send it, no extension field is needed.

Every word is alphanumeric, one token for whitespace tokenizers (the
scalearena engine) and for llm-d-inference-sim's dummy tokenizer, whose
pattern splits on punctuation and ``_`` but keeps ``\\w+`` runs whole. The
filler is sliced from one cached string, so a 4,096-token prompt costs two
string slices and a join, not 4,096 formatted words.
"""
from __future__ import annotations

from functools import lru_cache

from scalearena.workloads.base import HASH_BLOCK_TOKENS, RequestSpec

_FILLER_WORDS = 65536
_FILLER = "w " * _FILLER_WORDS


def _filler(n: int) -> str:
    if n <= 0:
        return ""
    if n <= _FILLER_WORDS:
        return _FILLER[: 2 * n - 1]
    return " ".join(["w"] * n)


@lru_cache(maxsize=256)
def _prefix(group: int, n: int) -> str:
    return " ".join(f"g{group}p{i}" for i in range(n))


def _hashed_text(spec: RequestSpec, n: int) -> str:
    parts = []
    for i, h in enumerate(spec.hash_ids):
        k = min(HASH_BLOCK_TOKENS, n - i * HASH_BLOCK_TOKENS)
        if k <= 0:
            break
        parts.append(f"h{h}")
        if k > 1:
            parts.append(_filler(k - 1))
    rest = n - HASH_BLOCK_TOKENS * len(spec.hash_ids)
    if rest > 0:  # a prompt longer than its hash ids: the rest is the request's own
        parts.append(f"r{spec.request_id}")
        if rest > 1:
            parts.append(_filler(rest - 1))
    return " ".join(parts)


def prompt_text(spec: RequestSpec) -> str:
    """The prompt for ``spec``: exactly ``spec.input_tokens`` whitespace-separated words (at least one)."""
    n = max(1, spec.input_tokens)
    if spec.hash_ids:
        return _hashed_text(spec, n)
    shared = min(spec.prefix_tokens, n - 1) if spec.prefix_group >= 0 else 0
    parts = [_prefix(spec.prefix_group, shared)] if shared > 0 else []
    parts.append(f"r{spec.request_id}")
    rest = n - shared - 1
    if rest > 0:
        parts.append(_filler(rest))
    return " ".join(parts)
