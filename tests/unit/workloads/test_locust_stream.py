"""How the Locust user reads an OpenAI stream (workloads/load_handoff.py read_stream): which chunks are tokens."""
from __future__ import annotations

import json
from typing import Any

import pytest

from scalearena.workloads import load_handoff
from scalearena.workloads.load_handoff import Stream, finish_record, read_stream


class Raw:
    """A response body read line by line, each line stamped with the wall time it arrives at."""

    def __init__(self, events: list[tuple[float, Any]], clock: list[float]) -> None:
        self.lines = [(t, ("data: " + (e if isinstance(e, str) else json.dumps(e)) + "\n").encode())
                      for t, e in events]
        self.clock = clock

    def readline(self, _sep: bytes) -> bytes:
        if not self.lines:
            return b""
        t, line = self.lines.pop(0)
        self.clock[0] = t
        return line


def completion(text: str, finish: str | None = None) -> dict:
    return {"object": "text_completion", "choices": [{"index": 0, "text": text, "finish_reason": finish}]}


class Cfg:
    time_scale = 1.0

    @staticmethod
    def scen(t: float) -> float:
        return t


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    now = [0.0]
    monkeypatch.setattr(load_handoff.time, "time", lambda: now[0])
    return now


def test_the_finish_only_chunk_of_llm_d_inference_sim_is_no_token(clock: list[float]) -> None:
    # as llm-d-inference-sim v0.10.2 streams 5 tokens (curl, 2026-12-05): 5 text chunks 20 ms apart from 0.2 s,
    # then a chunk with text "" and finish_reason "length", then the usage chunk and [DONE]
    events = [(0.2 + 0.02 * i, completion(w)) for i, w in enumerate(["Give ", "a ", "man ", "a ", "fish "])]
    events += [(0.2801, completion("", "length")),
               (0.2802, {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 5}}), (0.2803, "[DONE]")]
    rec: dict[str, Any] = {"arrival_s": 0.0}
    st = Stream()
    read_stream(Raw(events, clock), rec, st)
    finish_record(rec, Cfg(), st, 0.2804)
    assert st.chunks == 5 and rec["output_tokens"] == 5
    assert rec["ttft_ms"] == pytest.approx(200.0)
    # (0.28 - 0.2) / (5 - 1) = 20 ms; counting the finish chunk gave (0.2801 - 0.2) / 5 = 16.02 ms
    assert rec["itl_ms"] == pytest.approx(20.0)
    assert rec["status"] == "ok"


def test_a_chat_streams_role_chunk_is_no_first_token(clock: list[float]) -> None:
    chat = [(0.10, {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}),
            (0.15, {"choices": [{"index": 0, "delta": {"content": "Hi"}}]}),
            (0.18, {"choices": [{"index": 0, "delta": {"content": " there"}}]}),
            (0.21, {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}), (0.22, "[DONE]")]
    rec: dict[str, Any] = {"arrival_s": 0.0}
    st = Stream()
    read_stream(Raw(chat, clock), rec, st)
    finish_record(rec, Cfg(), st, 0.22)
    assert st.chunks == 2  # two content chunks; no usage chunk: the chunks are the token count
    assert rec["ttft_ms"] == pytest.approx(150.0) and rec["itl_ms"] == pytest.approx(30.0)
    assert rec["output_tokens"] == 2


def test_a_stream_cut_off_before_done_is_an_error(clock: list[float]) -> None:
    st = Stream()
    read_stream(Raw([(0.1, completion("a"))], clock), {}, st)
    assert st.status == "error" and st.chunks == 1
