"""Request validation, output length and prompt counting shared by serve-engine and
serve-router (harness/local/openai_api.py). No sockets."""
from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from scalearena.harness.local.openai_api import (
    ApiError,
    PromptCounter,
    approx_tokens,
    output_tokens,
    parse_request,
    response_pieces,
)


def parse(body: Any, chat: bool = False) -> Any:
    return parse_request(json.dumps(body).encode(), chat)


@pytest.mark.parametrize(("body", "param"), [
    ({"prompt": "x"}, "model"),
    ({"model": "", "prompt": "x"}, "model"),
    ({"model": "m", "prompt": "x", "max_tokens": -1}, "max_tokens"),
    ({"model": "m", "prompt": "x", "max_tokens": 0}, "max_tokens"),
    ({"model": "m", "prompt": "x", "max_tokens": "twelve"}, "max_tokens"),
    ({"model": "m", "prompt": "x", "max_tokens": True}, "max_tokens"),
    ({"model": "m", "prompt": "x", "max_completion_tokens": 1.5}, "max_completion_tokens"),
    ({"model": "m", "prompt": "x", "n": 0}, "n"),
    ({"model": "m", "prompt": "x", "n": 129}, "n"),  # OpenAI's documented range is 1..128
    ({"model": "m", "prompt": "x", "n": 1.5}, "n"),
    ({"model": "m", "prompt": []}, "prompt"),
    ({"model": "m", "prompt": [[1], []]}, "prompt"),
    ({"model": "m", "prompt": "x", "stream": "yes"}, "stream"),
    ({"model": "m"}, "prompt"),
])
def test_invalid_requests_are_400_naming_the_field(body: dict, param: str) -> None:
    with pytest.raises(ApiError) as e:
        parse(body)
    assert (e.value.status, e.value.param) == (400, param)


def test_not_json_or_not_an_object() -> None:
    for raw in (b"{", b"[1]", b"\xff"):
        with pytest.raises(ApiError) as e:
            parse_request(raw, chat=False)
        assert e.value.status == 400 and e.value.param is None


def test_a_body_nested_too_deeply_is_400_not_a_500() -> None:
    """100,000 nested arrays (a 200 KB body, under the size cap) exhaust the JSON decoder's stack:
    issue 17's probe answered it with a 500 and a traceback in the log."""
    raw = b'{"model": "m", "prompt": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    with pytest.raises(ApiError) as e:
        parse_request(raw, chat=False)
    assert (e.value.status, e.value.message) == (400, "the body is nested too deeply")


def test_valid_requests() -> None:
    r = parse({"model": "m", "prompt": ["one prompt"], "max_tokens": 1e3, "temperature": 0.2, "stream": True,
               "stream_options": {"include_usage": True}})
    assert (r.model, r.prompt, r.max_tokens, r.stream, r.include_usage) == ("m", "one prompt", 1000, True, True)
    r = parse({"model": "m", "prompt": [1, 2, 3], "max_tokens": 4, "max_completion_tokens": 7})
    assert (r.prompt, r.max_tokens) == ([1, 2, 3], 7)  # the newer name wins
    assert parse({"model": "m", "messages": [{"role": "user", "content": "hi"}]}, chat=True).max_tokens is None


def test_batches_and_n_choices() -> None:
    # vLLM's OpenAI server: a list of prompts is a batch; n choices per prompt; P x n sequences
    r = parse({"model": "m", "prompt": ["a b", "c"], "n": 3})
    assert (r.prompts, r.n, r.choices) == (("a b", "c"), 3, 6)
    r = parse({"model": "m", "prompt": [[1, 2], [3]]})
    assert (r.prompts, r.choices) == (([1, 2], [3]), 2)
    assert parse({"model": "m", "prompt": [1, 2]}).prompts == ([1, 2],)  # token ids: one prompt
    chat = parse({"model": "m", "messages": [{"role": "user", "content": "a b"}], "n": 2}, chat=True)
    assert (len(chat.prompts), chat.choices) == (1, 2)
    # each prompt counted once: "a b" = 2, "c" = 1
    assert PromptCounter().counts(parse({"model": "m", "prompt": ["a b", "c"], "n": 3})) == [2, 1]
    assert PromptCounter().count(parse({"model": "m", "prompt": ["a b", "c"], "n": 3})) == 3


@pytest.mark.parametrize(("body", "param"), [
    ({"model": "m", "prompt": ["x"] * 3, "n": 43}, "n"),  # 3 x 43 = 129 sequences > 128
    ({"model": "m", "prompt": ["x"] * 129}, "n"),  # 129 x 1
    ({"model": "m", "prompt": ["x", "y"], "scalearena_prompt_tokens": 5}, "scalearena_prompt_tokens"),
])
def test_valid_fields_that_conflict_are_422(body: dict, param: str) -> None:
    with pytest.raises(ApiError) as e:
        parse(body)
    assert (e.value.status, e.value.param) == (422, param)
    assert parse({"model": "m", "prompt": ["x"] * 2, "n": 64}).choices == 128  # the bound itself is served


@pytest.mark.parametrize(("body", "chat", "param"), [
    ({"logprobs": 0}, False, "logprobs"),  # completions: an int, 0 asks for the sampled token's
    ({"logprobs": True}, True, "logprobs"),  # chat: a bool
    ({"logprobs": True, "top_logprobs": 5}, True, "logprobs"),
    ({"echo": True}, False, "echo"),
    ({"tools": [{"type": "function", "function": {"name": "f"}}]}, True, "tools"),
    ({"response_format": {"type": "json_object"}}, True, "response_format"),
    ({"guided_choice": ["a", "b"]}, False, "guided_choice"),
])
def test_content_the_engines_do_not_generate_is_refused(body: dict, chat: bool, param: str) -> None:
    base = {"model": "m", **({"messages": [{"role": "user", "content": "x"}]} if chat else {"prompt": "x"})}
    with pytest.raises(ApiError) as e:
        parse({**base, **body}, chat=chat)
    assert (e.value.status, e.value.param) == (422, param)
    assert "model serving time, not text" in e.value.message


def test_content_fields_that_ask_for_nothing_are_accepted() -> None:
    # what clients send by default: null or false logprobs, no tools, text format
    r = parse({"model": "m", "messages": [{"role": "user", "content": "x"}], "logprobs": False, "top_logprobs": None,
               "tools": [], "response_format": {"type": "text"}}, chat=True)
    assert r.chat and r.n == 1
    assert parse({"model": "m", "prompt": "x", "logprobs": None, "echo": False}).prompt == "x"


def test_output_tokens_default_and_cap() -> None:
    assert output_tokens(None, 10, 4096) == 16  # OpenAI's default
    assert output_tokens(None, 4090, 4096) == 6  # the default is capped: 4096 - 4090
    assert output_tokens(None, 4096, 4096) == 1  # the prompt fills the context: the engine's admission decides
    assert output_tokens(10**9, 100, 4096) == 10**9  # explicit: not shortened, the engine answers 400 (too_long)
    assert output_tokens(5, 100, 4096) == 5


def test_approximation_and_extension_field() -> None:
    assert approx_tokens("w " * 128) == 128  # what the load generator sends: exact
    assert approx_tokens("g3p12 r57 w w") == 4  # prefix words and the request's word stay whole
    # Hello | , | world | ! | 2026 | don | ' | t | tokenization = 9
    assert approx_tokens("Hello, world! 2026 don't tokenization") == 9
    c = PromptCounter()
    assert c.count(parse({"model": "m", "prompt": [5, 6, 7]})) == 3  # token ids
    chat = parse({"model": "m", "messages": [{"role": "user", "content": "a b"},
                                              {"role": "user", "content": [{"type": "text", "text": "c"}]}]}, True)
    assert c.count(chat) == 3
    assert c.count(parse({"model": "m", "prompt": "x", "scalearena_prompt_tokens": 4096})) == 4096
    with pytest.raises(ApiError):
        c.count(parse({"model": "m", "prompt": "x", "scalearena_prompt_tokens": "many"}))


def test_tokenizer_file_counts_like_the_model(tmp_path: Path) -> None:
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import WhitespaceSplit

    tok = Tokenizer(WordLevel({"[UNK]": 0, "hello,": 1}, unk_token="[UNK]"))
    tok.pre_tokenizer = WhitespaceSplit()
    tok.save(str(tmp_path / "tokenizer.json"))
    req = parse({"model": "m", "prompt": "hello, big world!"})
    assert PromptCounter(str(tmp_path / "tokenizer.json")).count(req) == 3  # three whitespace pieces
    assert PromptCounter().count(req) == 5  # hello , big world !


def test_response_text_modes() -> None:
    echo = response_pieces("echo", parse({"model": "m", "prompt": "to be"}), 5, random.Random(0))
    assert "".join(echo) == "to be to be to"
    chat = parse({"model": "m", "messages": [{"role": "user", "content": "first"}, {"role": "assistant",
                  "content": "x"}, {"role": "user", "content": "last one"}]}, chat=True)
    assert "".join(response_pieces("echo", chat, 2, random.Random(0))) == "last one"
    a = response_pieces("random", chat, 40, random.Random(3))
    assert len(a) == 40 and list(a) == list(response_pieces("random", chat, 40, random.Random(3)))  # seeded


def test_pieces_of_a_long_output_hold_their_base_not_n() -> None:
    """n: 128 x max_tokens: 16000 held 2 M list slots per request; the pieces now cycle over a base."""
    import sys

    echo = response_pieces("echo", parse({"model": "m", "prompt": "to be"}), 16000, random.Random(0))
    assert len(echo) == 16000 and echo[0] == "to" and echo[1] == " be" and echo[2] == " to"  # repeats start a word
    assert echo[15999] == " be" and echo[-1] == " be"  # 15999 is odd: the second piece of the pair
    assert echo[3:5] == [" be", " to"]
    assert sys.getsizeof(echo.base) < 200  # two slots, not 16,000
    rnd = response_pieces("random", parse({"model": "m", "prompt": "x"}), 16000, random.Random(1))
    assert len(rnd) == 16000 and rnd[512] == rnd[0] and len(rnd.base) == 512  # RANDOM_LAP pieces, then again
    with pytest.raises(IndexError):
        _ = echo[16000]


@pytest.mark.parametrize(("n", "ok"), [(65, True), (66, False), (128, False)])
def test_n_times_max_tokens_is_bounded(n: int, ok: bool) -> None:
    """At most 2^20 = 1,048,576 output tokens per request: 65 x 16,000 = 1,040,000 passes, 66 x 16,000 =
    1,056,000 and 128 x 16,000 = 2,048,000 are a 400 naming n (max_model_len 32,768 fits each sequence)."""
    from scalearena.harness.local.openai_api import ApiError, check_lengths

    req = parse({"model": "m", "prompt": "x", "n": n, "max_tokens": 16000})
    if ok:
        check_lengths(req, [1], 32768)
        return
    with pytest.raises(ApiError) as e:
        check_lengths(req, [1], 32768)
    assert (e.value.status, e.value.param) == (400, "n") and f"{n * 16000:,} output tokens" in str(e.value.message)


def test_the_load_generators_prompts_count_exactly() -> None:
    """workloads/prompts.py sends N words for an N-token request; the approximation must agree."""
    from scalearena.workloads.base import RequestSpec
    from scalearena.workloads.prompts import prompt_text

    for rid, n, group, prefix in [(0, 1, -1, 0), (7, 128, -1, 0), (123456, 400, 12, 300), (99, 5000, 1234, 4096)]:
        spec = RequestSpec(rid, "m", 0.0, n, 8, prefix_group=group, prefix_tokens=prefix)
        assert approx_tokens(prompt_text(spec)) == n


def test_engine_config_file_is_read_through_safe_yaml(tmp_path: Path) -> None:
    # issue 17: serve-engine --config used plain yaml.safe_load; an alias bomb (9**9 values) is one
    # usage error naming the file, exit 2, before the server starts
    from click.testing import CliRunner

    from scalearena.harness.local.cli import serve_engine

    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n" for p, c in zip("abcdefgh", "bcdefghi", strict=True)))
    r = CliRunner().invoke(serve_engine, ["--config", str(bomb)])
    assert r.exit_code == 2 and "too many values after expanding aliases" in r.output
    assert r.exception is None or isinstance(r.exception, SystemExit)


def test_prompt_units_are_the_full_token_blocks() -> None:
    """The prefix identity serve-engine and serve-router read from any client's prompt text."""
    pc = PromptCounter()
    words = [f"x{i}" for i in range(40)]
    a = pc.prompt_units(parse({"model": "m", "prompt": " ".join(words)}), 16)
    # 40 tokens: 2 full 16-token blocks (the 8 left over are not cacheable, as in vLLM)
    assert [n for _, n in a] == [16, 16]
    b = pc.prompt_units(parse({"model": "m", "prompt": " ".join(words[:20] + ["other"] * 20)}), 16)
    assert b[0] == a[0] and b[1] != a[1]  # the first block is common, the second differs at token 20
    ids = pc.prompt_units(parse({"model": "m", "prompt": list(range(33))}), 16)
    assert len(ids) == 2  # token ids: 33 // 16
    chat = pc.prompt_units(parse({"model": "m", "messages": [{"role": "user", "content": " ".join(words)}]},
                                 chat=True), 16)
    assert chat == a
    assert pc.prompt_units(parse({"model": "m", "prompt": "short"}), 16) == ()
