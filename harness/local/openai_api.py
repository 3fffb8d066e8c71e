"""The OpenAI request surface shared by serve-engine and serve-router.

Both servers accept the same two endpoints, so one module validates a request
body, answers errors as OpenAI's error JSON and counts prompt tokens; the
router needs the same facts (model, output length, prompt length) to route as
the engine needs to serve.

Validation follows vLLM's OpenAI server where it differs from a plain schema
check: the body is a JSON object, ``model`` a non-empty string (400 when
missing), ``max_tokens`` / ``max_completion_tokens`` an integer >= 1 (a float
with no fraction is accepted, as pydantic's lax mode in vLLM does; -1, 0,
``"abc"`` or ``true`` are 400), ``n`` an integer from 1 to 128 (OpenAI's
documented range), ``prompt`` a string, a list of token ids, or a non-empty
list of strings / token-id lists (a batch). As vLLM's OpenAI server does, a
batch of P prompts with ``n`` choices is P x n sequences, choice ``index`` =
prompt_index x n + sample_index, and ``usage`` sums the prompt tokens of each
prompt once and the completion tokens of every choice (``ParsedRequest.prompts``).
The request models are pydantic with ``extra="allow"``: unknown OpenAI fields
(temperature, top_p, ...) are accepted and ignored, as vLLM does. Fields that ask for
content the engines do not produce (``CONTENT_FIELDS``: logprobs, echo, tool calls,
structured output) are refused with 422 naming the field: the engines model serving
time, not text, and a client that asked for them would otherwise parse an answer
without them as if it had them.

Status codes: 400 when a field is wrong on its own (not JSON, not an object,
a missing model, a wrong type or a value out of range: vLLM's
RequestValidationError handler answers every schema failure 400, overriding
FastAPI's 422, and clients written against vLLM expect it; a prompt longer than
the context is also vLLM's 400). 422 (RFC 9110: the content is understood and
well-formed but cannot be processed as asked) when every field is valid on its
own and their combination cannot be served: ``n`` x prompts beyond
``MAX_CHOICES`` sequences, or ``scalearena_prompt_tokens`` (one count) on a
batch of several prompts. 404 for an unknown model, 413 for a body over the
size cap (http_guard.py), 429 for a full queue.

Error JSON: ``{"error": {"message", "type", "param", "code"}}`` with ``code``
the HTTP status, the shape the openai client reads.

Prompt tokens: with ``--tokenizer PATH`` (a local tokenizer.json) the
``tokenizers`` library counts them as the model would. Otherwise a documented
deterministic approximation, the word/punctuation split of a pre-tokenizer
(and of llm-d-inference-sim's dummy tokenizer): one token per run of word
characters (regex ``\\w+``), one per other non-space character. English prose comes
out a little under a BPE count (long words are one token here), ahead of a
plain word count (punctuation counts); a prompt of N alphanumeric words, what
the load generator sends (workloads/prompts.py), is exactly N tokens. The
``scalearena_prompt_tokens`` extension field overrides both.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, overload

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError, field_validator

from scalearena.contracts.errors import UserError
from scalearena.workloads.load_handoff import PROMPT_TOKENS_FIELD

DEFAULT_MAX_TOKENS = 16  # OpenAI's (and vLLM's completions) default output length
MAX_CHOICES = 128  # sequences one request may fan out into (n x prompts); OpenAI's own bound on n
MAX_REQUEST_OUTPUT_TOKENS = 1 << 20  # output tokens of all a request's sequences (n x prompts x max_tokens)
_APPROX_TOKEN = re.compile(r"\w+|[^\w\s]")


class ApiError(Exception):
    """An OpenAI-style error answer: HTTP status, error type, message, offending parameter."""

    def __init__(self, status: int, kind: str, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.status, self.kind, self.message, self.param = status, kind, message, param

    def response(self, headers: dict[str, str] | None = None) -> web.Response:
        return error_response(self.status, self.kind, self.message, self.param, headers)


def error_response(status: int, kind: str, message: str, param: str | None = None,
                   headers: dict[str, str] | None = None) -> web.Response:
    body = {"error": {"message": message, "type": kind, "param": param, "code": status}}
    return web.json_response(body, status=status, headers=headers)


def _whole_number(v: Any) -> Any:
    """vLLM (pydantic lax) accepts 1e3 for an int field; a bool or a fraction is not a count."""
    if isinstance(v, bool) or (isinstance(v, float) and not v.is_integer()):
        raise ValueError("must be an integer")
    if isinstance(v, float):
        return int(v)
    return v


class _Request(BaseModel):
    model_config = ConfigDict(extra="allow")

    model: str = Field(min_length=1, description="Served model name.")
    stream: StrictBool = Field(default=False, description="Server-sent events, one chunk per token.")
    stream_options: dict[str, Any] | None = Field(default=None, description="include_usage: a final usage chunk.")
    max_tokens: int | None = Field(default=None, ge=1, description="Output tokens (ignore_eos: exactly this many).")
    max_completion_tokens: int | None = Field(default=None, ge=1, description="Newer name of max_tokens; wins.")
    n: int = Field(default=1, ge=1, le=MAX_CHOICES, description="Choices per prompt.")

    _ints = field_validator("max_tokens", "max_completion_tokens", "n", mode="before")(_whole_number)


class CompletionBody(_Request):
    prompt: str | list[str] | list[int] | list[list[int]] = Field(
        description="A prompt (text or token ids) or a batch of them.")

    @field_validator("prompt")
    @classmethod
    def _not_empty(cls, v: Any) -> Any:
        if isinstance(v, list) and (not v or any(isinstance(p, list) and not p for p in v)):
            raise ValueError("a prompt must hold at least one token or string")
        return v


class ChatBody(_Request):
    messages: list[dict[str, Any]] = Field(min_length=1, description="The conversation.")


def _asks(value: Any) -> bool:
    """Whether a field's value asks for something (null, false, 0, "" and [] do not)."""
    return value not in (None, False, 0, "", [], {})


CONTENT_FIELDS: dict[str, tuple[Any, str]] = {  # field -> (when it asks, what the engine would have to return)
    "logprobs": (lambda v, chat: (v is True) if chat else (v is not None and v is not False), "log probabilities"),
    "top_logprobs": (lambda v, chat: _asks(v), "log probabilities"),
    "echo": (lambda v, chat: v is True, "the prompt echoed in the output"),
    "tools": (lambda v, chat: _asks(v), "tool calls"),
    "functions": (lambda v, chat: _asks(v), "function calls"),
    "response_format": (lambda v, chat: isinstance(v, dict) and v.get("type") not in (None, "text"),
                        "output in a given format"),
    "guided_json": (lambda v, chat: _asks(v), "structured output"),
    "guided_regex": (lambda v, chat: _asks(v), "structured output"),
    "guided_choice": (lambda v, chat: _asks(v), "structured output"),
    "guided_grammar": (lambda v, chat: _asks(v), "structured output"),
    "structured_outputs": (lambda v, chat: _asks(v), "structured output"),
}


def refuse_content_fields(body: dict[str, Any], chat: bool) -> None:
    """422 for the first field asking for content the engines do not generate (module docstring)."""
    for field, (asks, what) in CONTENT_FIELDS.items():
        if field in body and asks(body[field], chat):
            raise ApiError(422, "invalid_request_error", f"{field}: scalearena's engines model serving time, not "
                           f"text, and return no {what}; leave {field} out (docs/clients.md)", field)


@dataclass(frozen=True)
class ParsedRequest:
    """What the servers need of a validated request."""

    body: dict[str, Any]
    model: str
    chat: bool
    stream: bool
    include_usage: bool
    max_tokens: int | None  # None: not given (the server applies its default)
    prompts: tuple[Any, ...]  # each a str | list[int] (completions), or the one conversation's messages (chat)
    n: int = 1  # choices per prompt

    @property
    def prompt(self) -> Any:
        """The first (for most requests the only) prompt."""
        return self.prompts[0]

    @property
    def choices(self) -> int:
        return self.n * len(self.prompts)


def _prompts(prompt: Any) -> tuple[Any, ...]:
    """A batch (list of strings or of token-id lists) or one prompt, as a tuple of prompts."""
    if isinstance(prompt, list) and isinstance(prompt[0], str | list):
        return tuple(prompt)
    return (prompt,)


def parse_request(raw: bytes, chat: bool) -> ParsedRequest:
    """Validate a request body; ApiError 400 naming the field, or 422 for fields that conflict."""
    import json

    try:
        body = json.loads(raw)
    except ValueError as e:  # not JSON, not UTF-8, or an integer past Python's 4,300 digits
        raise ApiError(400, "invalid_request_error", f"the body is not valid JSON: {e}") from None
    except RecursionError:  # e.g. 100,000 nested arrays in a 200 KB body: the decoder's stack, not a 500
        raise ApiError(400, "invalid_request_error", "the body is nested too deeply") from None
    if not isinstance(body, dict):
        raise ApiError(400, "invalid_request_error", "the body must be a JSON object")
    if body.get("model") in (None, ""):
        raise ApiError(400, "invalid_request_error", "you must provide a model parameter", "model")
    try:
        req = (ChatBody if chat else CompletionBody).model_validate(body)
    except ValidationError as e:
        err = e.errors()[0]
        param = ".".join(str(p) for p in err["loc"]) or None
        msg = str(err["msg"]).removeprefix("Value error, ")
        raise ApiError(400, "invalid_request_error", f"{param}: {msg}", param) from None
    refuse_content_fields(body, chat)
    opts = req.stream_options or {}
    prompts = (req.messages,) if isinstance(req, ChatBody) else _prompts(req.prompt)
    if req.n * len(prompts) > MAX_CHOICES:
        raise ApiError(422, "invalid_request_error", f"n={req.n} x {len(prompts)} prompts is "
                       f"{req.n * len(prompts)} sequences; at most {MAX_CHOICES} per request", "n")
    if len(prompts) > 1 and body.get(PROMPT_TOKENS_FIELD) is not None:
        raise ApiError(422, "invalid_request_error", f"{PROMPT_TOKENS_FIELD} gives one prompt length; "
                       f"this request has {len(prompts)} prompts", PROMPT_TOKENS_FIELD)
    return ParsedRequest(body=body, model=req.model, chat=chat, stream=req.stream,
                         include_usage=bool(opts.get("include_usage")),
                         max_tokens=req.max_completion_tokens or req.max_tokens, prompts=prompts, n=req.n)


def output_tokens(requested: int | None, prompt_tokens: int, max_model_len: int) -> int:
    """Output length: ``max_tokens`` as asked, or when absent 16 capped so prompt + output fit max_model_len.

    An explicit max_tokens is not shortened: prompt + max_tokens beyond max_model_len is the
    engine's admission 400 (vLLM's context-length error; ``too_long`` in the simulator), so
    local and sim runs count the same requests as too long. At least 1.
    """
    if requested is not None:
        return requested
    return max(1, min(DEFAULT_MAX_TOKENS, max_model_len - prompt_tokens))


def approx_tokens(text: str) -> int:
    """The deterministic approximation (module docstring)."""
    return len(_APPROX_TOKEN.findall(text))


class PromptCounter:
    """Counts prompt tokens: a local tokenizer.json when given, else ``approx_tokens``."""

    def __init__(self, tokenizer_path: str | None = None) -> None:
        self.tokenizer = None
        if tokenizer_path:
            from tokenizers import Tokenizer

            try:
                self.tokenizer = Tokenizer.from_file(tokenizer_path)
            except Exception as e:  # noqa: BLE001 - the library raises a bare Exception for any unreadable file
                raise UserError(f"the tokenizers library cannot read it: {e}", where=f"--tokenizer {tokenizer_path}",
                                expected="a Hugging Face tokenizer.json") from None

    def text_tokens(self, text: str) -> int:
        if self.tokenizer is not None:
            return len(self.tokenizer.encode(text, add_special_tokens=False).ids)
        return approx_tokens(text)

    def _tokens(self, text: str) -> list[Any]:
        if self.tokenizer is not None:
            return list(self.tokenizer.encode(text, add_special_tokens=False).ids)
        return _APPROX_TOKEN.findall(text)

    def prompt_units(self, req: ParsedRequest, block_size: int, index: int = 0) -> tuple[tuple[int, int], ...]:
        """The prompt's prefix identity: its full ``block_size``-token blocks as (hash, tokens) units, in
        order (a partial last block is not cacheable), for the prefix cache (engine.prefix_cache chains
        them) and the router's prefix scorer. vLLM hashes token blocks the same way; the text is all a
        client sends, so any OpenAI client's prompts are matched, the load generator's included."""
        prompt = req.prompts[index]  # a batch: each prompt its own chain (the router scores the first)
        if req.chat:
            toks = [t for m in prompt for t in self._tokens(_content_text(m.get("content")))]
        elif isinstance(prompt, list):
            toks = prompt  # token ids
        else:
            toks = self._tokens(prompt)
        bs = block_size
        return tuple((hash(tuple(toks[i * bs:(i + 1) * bs])), bs) for i in range(len(toks) // bs))

    def count(self, req: ParsedRequest) -> int:
        """Prompt tokens of the whole request: each prompt of a batch once (what ``usage`` reports)."""
        return sum(self.counts(req))

    def counts(self, req: ParsedRequest) -> list[int]:
        """Prompt tokens of each prompt, in order."""
        explicit = req.body.get(PROMPT_TOKENS_FIELD)
        if explicit is not None:  # parse_request allows it on one prompt only
            try:
                n = _whole_number(explicit) if isinstance(explicit, int | float) else None
            except ValueError:  # true, 1.5, 1e400: a ValueError here was a 500
                n = None
            if not isinstance(n, int) or n < 1:
                raise ApiError(400, "invalid_request_error", f"{PROMPT_TOKENS_FIELD}: must be an integer >= 1",
                               PROMPT_TOKENS_FIELD)
            return [n]
        if req.chat:
            return [max(1, sum(self.text_tokens(_content_text(m.get("content"))) for m in req.prompt))]
        return [max(1, len(p) if isinstance(p, list) else self.text_tokens(p)) for p in req.prompts]


def _content_text(content: Any) -> str:
    if isinstance(content, list):  # content parts: the text ones count
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


# -- generated text (--mode, as llm-d-inference-sim) ------------------------------------------------
MODES = ("random", "echo")
_PIECE = re.compile(r"\s*(?:\w+|[^\w\s])")
_SENTENCES = (  # our own filler text for random mode
    "The scheduler admitted the request once a decode slot and its cache blocks were free.",
    "Autoscalers read the queue length and the cache usage before they add a replica.",
    "A cold start keeps the new engine out of rotation until its weights are loaded.",
    "Throughput rises with the batch size until the memory bandwidth is spent.",
    "The gateway holds requests for a model that has no ready engine yet.",
)


def check_lengths(req: ParsedRequest, counts: list[int], limit: int) -> None:
    """The engine's admission 400s: a prompt + output over ``limit`` (vLLM's wording: the load client counts it as
    too_long), and a request whose sequences ask for more than ``MAX_REQUEST_OUTPUT_TOKENS`` output tokens in all
    (one small request must not hold a server's memory and slots for minutes)."""
    outputs = [output_tokens(req.max_tokens, prompt, limit) for prompt in counts]
    for prompt, n_out in zip(counts, outputs, strict=True):
        if prompt + n_out > limit:
            raise ApiError(400, "BadRequestError", f"This model's maximum context length is {limit} tokens. However, "
                           f"you requested {prompt + n_out} tokens ({prompt} in the messages, {n_out} in the "
                           "completion).")
    total = sum(outputs) * req.n
    if total > MAX_REQUEST_OUTPUT_TOKENS:
        raise ApiError(400, "invalid_request_error", f"n x max_tokens asks for {total:,} output tokens over "
                       f"{req.n * len(counts)} sequences; at most {MAX_REQUEST_OUTPUT_TOKENS:,} per request", "n")


class Pieces(Sequence[str]):
    """``n`` output pieces cycling over a short ``base`` (the first lap) and ``again`` (later laps): memory
    of the base, not of ``n`` (a request of ``n: 128, max_tokens: 16000`` held 2 M list slots, ~17 MB)."""

    def __init__(self, base: list[str], again: list[str], n: int) -> None:
        self.base, self.again, self.n = base, again, n

    def __len__(self) -> int:
        return self.n

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> list[str]: ...

    def __getitem__(self, i: int | slice) -> str | list[str]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self.n))]
        if not -self.n <= i < self.n:
            raise IndexError(i)
        i %= self.n
        return (self.base if i < len(self.base) else self.again)[i % len(self.base)]


RANDOM_LAP = 512  # random mode: the filler pieces drawn once, then repeated


def response_pieces(mode: str, req: ParsedRequest, n: int, rng: Any, prompt_index: int = 0) -> Pieces:
    """``n`` text pieces, one per output token: the prompt echoed (echo) or filler sentences (random).

    The engine always produces exactly ``n`` tokens (ignore_eos), so the text is
    repeated as needed; each piece is one streamed chunk. ``prompt_index``: which
    prompt of a batch is echoed.
    """
    if mode == "echo":
        prompt = req.prompts[prompt_index]
        if req.chat:
            users = [m for m in prompt if m.get("role") == "user"] or list(prompt)
            source = _content_text(users[-1].get("content"))
        else:
            source = prompt if isinstance(prompt, str) else " ".join(str(t) for t in prompt)
        base = _PIECE.findall(source) or [" ."]
        return Pieces(base, [" " + base[0].lstrip(), *base[1:]], n)  # a repeat starts a new word
    out: list[str] = []
    while len(out) < min(n, RANDOM_LAP):
        out.extend(_PIECE.findall(" " + rng.choice(_SENTENCES)))
    lap = out[:max(1, min(n, RANDOM_LAP))]
    return Pieces(lap, lap, n)
