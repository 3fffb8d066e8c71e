"""Prompts vary per request and share exactly the workload's declared prefix (issue 19 item 6)."""
from __future__ import annotations

import re

from scalearena.workloads.base import RequestSpec
from scalearena.workloads.prompts import prompt_text

# llm-d-inference-sim's dummy tokenizer pattern (pkg/tokenizer, SimpleTokenizer): punctuation and `_` are
# tokens of their own, \w+ runs are one token each
SIM_TOKEN = re.compile(r"([{}:,\-.?!;@#$%^&*()+_~/\\><\[\]=\"]|\w+)(\s*)")


def blocks(text: str, size: int) -> list[tuple[str, ...]]:
    words = text.split()
    return [tuple(words[: i + size]) for i in range(0, len(words) - len(words) % size, size)]  # chained


def spec(rid: int, n: int, group: int = -1, prefix: int = 0) -> RequestSpec:
    return RequestSpec(request_id=rid, model="m", arrival_s=0.0, input_tokens=n, output_tokens=1,
                       prefix_group=group, prefix_tokens=prefix)


def test_token_counts_match_for_both_tokenizers() -> None:
    for n in (1, 2, 17, 4096):
        text = prompt_text(spec(7, n, group=3, prefix=min(n, 10)))
        assert len(text.split()) == n
        assert len(SIM_TOKEN.findall(text)) == n


def test_requests_without_a_group_share_no_block() -> None:
    # two 64-token prompts, 16-token blocks: 4 chained blocks each, none in common
    a, b = prompt_text(spec(1, 64)), prompt_text(spec(2, 64))
    assert a != b
    assert not set(blocks(a, 16)) & set(blocks(b, 16))


def test_a_group_shares_exactly_its_prefix_blocks() -> None:
    # prefix 32 tokens = 2 full 16-token blocks shared; the request word at position 32 makes block 3 differ
    a = prompt_text(spec(1, 64, group=5, prefix=32))
    b = prompt_text(spec(2, 64, group=5, prefix=32))
    c = prompt_text(spec(3, 64, group=6, prefix=32))
    assert len(set(blocks(a, 16)) & set(blocks(b, 16))) == 2
    assert not set(blocks(a, 16)) & set(blocks(c, 16))


def test_prefix_longer_than_prompt_keeps_the_request_word() -> None:
    text = prompt_text(spec(9, 4, group=1, prefix=10))
    assert text.split() == ["g1p0", "g1p1", "g1p2", "r9"]


def test_mooncake_hash_chains_share_exactly_their_common_blocks() -> None:
    # hash ids [4, 9] vs [4, 11], 700 tokens each: the first 512 words are the same (marker h4 + 511 filler),
    # word 513 differs (h9 / h11): with 16-token blocks 512 / 16 = 32 chained blocks in common, no more
    a = RequestSpec(1, "m", 0.0, 700, 1, hash_ids=(4, 9))
    b = RequestSpec(2, "m", 0.0, 700, 1, hash_ids=(4, 11))
    ta, tb = prompt_text(a), prompt_text(b)
    assert len(ta.split()) == len(tb.split()) == 700
    assert len(set(blocks(ta, 16)) & set(blocks(tb, 16))) == 32
    # the same chain, another request: the same text (the trace says the prompts are equal)
    assert prompt_text(RequestSpec(3, "m", 0.0, 700, 1, hash_ids=(4, 9))) == ta
    # a prompt longer than its hash ids (512 x 1): the 88 tokens past them are the request's own
    c = RequestSpec(5, "m", 0.0, 600, 1, hash_ids=(4,))
    assert len(prompt_text(c).split()) == 600 and prompt_text(c).split()[512] == "r5"
