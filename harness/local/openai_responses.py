"""The OpenAI response bodies serve-engine writes, for one choice or many.

A request with ``n`` choices or a batch of prompts is answered as vLLM's
OpenAI server answers it (vllm/entrypoints/openai completion and chat
serving): one response id for the whole request; choice ``index`` =
prompt_index x n + sample_index; a streamed chunk carries one choice (its
``index`` tells which), each choice ends with its own ``finish_reason``; the
chat stream's first chunk of each choice carries ``role: assistant``; the
usage (non-streaming, or the final chunk of a stream asked for with
``stream_options.include_usage``) counts each prompt's tokens once and the
completion tokens of every choice. Every choice here ends by length (the
engine generates exactly ``max_tokens``: ignore_eos).
"""
from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any, Protocol


class Choice(Protocol):
    """What the renderer reads of one choice's stream."""

    index: int
    pieces: Sequence[str]


def response_id(chat: bool, rid: int) -> str:
    return f"{'chatcmpl' if chat else 'cmpl'}-{rid}"


def sse(obj: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"


def chunk(rid: str, model: str, chat: bool, ch: Choice, i: int, last: bool) -> bytes:
    """One streamed token (piece ``i``) of choice ``ch``."""
    created = int(time.time())
    if chat:
        delta: dict[str, Any] = {"content": ch.pieces[i]}
        if i == 0:
            delta["role"] = "assistant"
        choice = {"index": ch.index, "delta": delta, "finish_reason": "length" if last else None}
        return sse({"id": rid, "object": "chat.completion.chunk", "created": created, "model": model,
                    "choices": [choice]})
    choice = {"index": ch.index, "text": ch.pieces[i], "logprobs": None, "finish_reason": "length" if last else None}
    return sse({"id": rid, "object": "text_completion", "created": created, "model": model, "choices": [choice]})


def usage(prompt_tokens: int, completion_tokens: int) -> dict[str, int]:
    return {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens}


def usage_chunk(rid: str, model: str, chat: bool, prompt_tokens: int, completion_tokens: int) -> bytes:
    """The stream's final usage chunk (``stream_options.include_usage``): no choices."""
    return sse({"id": rid, "object": "chat.completion.chunk" if chat else "text_completion",
                "created": int(time.time()), "model": model, "choices": [],
                "usage": usage(prompt_tokens, completion_tokens)})


def unary(rid: str, model: str, chat: bool, choices: list[Choice], prompt_tokens: int) -> dict[str, Any]:
    """The whole (non-streaming) response, choices in index order."""
    out: list[dict[str, Any]] = []
    for ch in sorted(choices, key=lambda c: c.index):
        text = "".join(ch.pieces)
        if chat:
            out.append({"index": ch.index, "message": {"role": "assistant", "content": text},
                        "finish_reason": "length"})
        else:
            out.append({"index": ch.index, "text": text, "logprobs": None, "finish_reason": "length"})
    completion = sum(len(ch.pieces) for ch in choices)
    return {"id": rid, "object": "chat.completion" if chat else "text_completion", "created": int(time.time()),
            "model": model, "choices": out, "usage": usage(prompt_tokens, completion)}
