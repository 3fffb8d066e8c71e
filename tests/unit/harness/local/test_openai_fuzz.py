"""Property: whatever JSON a client sends, the shared request path (parse, a P/D engine's
kv_transfer_params check, count prompt tokens, pick the output length, make the text) answers
with a ParsedRequest or an ApiError, never another exception (which the servers turn into a 500).

Bodies start valid and get one or two fields replaced by hostile JSON values, so most examples get
past the first check. It found `scalearena_prompt_tokens: 1.5` / `true` / `1e400` raising ValueError
from the token count (a 500); no sockets, 400 examples (times SCALEARENA_FUZZ_SCALE), derandomized.
"""
from __future__ import annotations

import json
import random

from hypothesis import given, strategies as st

from scalearena.harness.local.kv_connector import KVConnector
from scalearena.harness.local.openai_api import (
    ApiError,
    PromptCounter,
    output_tokens,
    parse_request,
    response_pieces,
)
from tests.fuzz_settings import fuzz

LEAF = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=False), st.text(max_size=6),
                 st.sampled_from([0, 1, 2, 128, 129, 0.5, 1e3, "1e400", "-1e400", "", "m"]))
VALUE = st.one_of(LEAF, st.recursive(LEAF, lambda c: st.one_of(st.lists(c, max_size=3), st.dictionaries(
    st.text(max_size=5), c, max_size=3)), max_leaves=8))
FIELDS = ["model", "prompt", "messages", "max_tokens", "max_completion_tokens", "n", "stream", "stream_options",
          "scalearena_prompt_tokens", "kv_transfer_params"]
KV = {"do_remote_prefill": True, "do_remote_decode": True, "remote_host": "127.0.0.1", "remote_port": 8001,
      "remote_request_id": "7"}
VALID = {False: {"model": "m", "prompt": "a b", "max_tokens": 3, "n": 2, "stream": True,
                 "stream_options": {"include_usage": True}, "scalearena_prompt_tokens": 2, "kv_transfer_params": KV},
         True: {"model": "m", "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
                "max_tokens": 3, "scalearena_prompt_tokens": 7}}


@fuzz(400)
@given(chat=st.booleans(), role=st.sampled_from(["both", "prefill", "decode"]),
       changes=st.dictionaries(st.sampled_from(FIELDS), VALUE, min_size=1, max_size=2))
def test_any_body_is_served_or_an_api_error(chat: bool, role: str, changes: dict) -> None:
    body = json.dumps({**VALID[chat], **changes})
    for text in ('"1e400"', '"-1e400"'):  # a number beyond a float, which json.dumps cannot write
        body = body.replace(text, text.strip('"'))
    try:
        req = parse_request(body.encode(), chat)
        KVConnector.flags(role, req.body.get("kv_transfer_params"))  # a P/D engine's admission check
        prompt_tokens = PromptCounter().counts(req)
        n = output_tokens(req.max_tokens, max(prompt_tokens), 16384)
        for i in range(len(req.prompts)):
            assert len(response_pieces("echo", req, min(n, 20), random.Random(0), i)) == min(n, 20)
    except ApiError as e:
        assert 400 <= e.status < 500
