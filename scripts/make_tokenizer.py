"""A Hugging Face tokenizer folder that counts prompt tokens as the servers do, for guidellm (docs/clients.md).

usage: python scripts/make_tokenizer.py OUT_DIR [TEXT_FILE ...]

``scalearena serve-engine`` and ``serve-router`` count a prompt's tokens with the approximation of
harness/local/openai_api.py: one token per match of ``\\w+|[^\\w\\s]`` (a run of word characters,
or one other non-space character). guidellm asks its tokenizer to cut a synthetic prompt to N tokens and
sends the decoded text, so the engine counts N only when the tokenizer splits text the same way and decodes
every token back to one countable piece of text. This one does: its pre-tokenizer is that regex, and its
word-level model maps each piece to one id. The vocabulary is the pieces of the TEXT_FILEs (by default
what guidellm's synthetic text is made of: Faker's lorem words, from the Faker installed with guidellm), so
the prompts keep their words and distinct prompts stay distinct for the prefix cache; a piece outside it
becomes the plain word ``unk``, one token of text again, not a special token that decoding drops (the
recipe's earlier tokenizer, built from README words, did that: prompt_tokens=32 went out as ~5 tokens).

Needs only the ``tokenizers`` package (in the project's venv and in guidellm's). Writes ``tokenizer.json``
(also what ``serve-engine --tokenizer`` reads; it counts the same) and ``tokenizer_config.json``.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tokenizers import Tokenizer

PIECE = r"\w+|[^\w\s]"  # harness/local/openai_api.py's _APPROX_TOKEN
UNKNOWN = "unk"  # a plain word: one token to the servers, kept when decoded


def guidellm_vocabulary() -> str:
    """What guidellm's synthetic prompts are made of (guidellm 0.8: ``f"{i} {n} m{turn} " + Faker().text()``):
    the words of Faker's English lorem provider, lower-case and capitalised (a sentence's first), full stops,
    and the numbers and ``m0``..``m99`` of its per-request prefix (up to 9999, a larger one decodes as unk)."""
    try:
        from faker.providers.lorem.en_US import Provider
    except ImportError:
        raise SystemExit("no TEXT_FILE given and Faker (which guidellm installs) is not importable here: run this "
                         "with guidellm's Python, or name text files to take the vocabulary from") from None
    words = list(Provider.word_list)
    return " ".join([*words, *(w.capitalize() for w in words), ".", *map(str, range(10_000)),
                     *(f"m{t}" for t in range(100))])


def build(texts: list[str]) -> Tokenizer:
    """The tokenizer (a ``tokenizers.Tokenizer``): the servers' split, one id per piece."""
    from tokenizers import Regex, Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Split

    pieces = sorted({p for text in texts for p in re.findall(PIECE, text)} - {UNKNOWN})
    vocab = {UNKNOWN: 0, **{p: i + 1 for i, p in enumerate(pieces)}}
    tok = Tokenizer(WordLevel(vocab, unk_token=UNKNOWN))
    # invert: the pattern is what is kept (each match one piece), the whitespace between is dropped
    tok.pre_tokenizer = Split(Regex(PIECE), behavior="removed", invert=True)
    return tok


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip().split("\n\n")[1], file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    out = Path(argv[0])
    files = [Path(a) for a in argv[1:]]
    tok = build([f.read_text(encoding="utf-8", errors="replace") for f in files] if files else [guidellm_vocabulary()])
    out.mkdir(parents=True, exist_ok=True)
    tok.save(str(out / "tokenizer.json"))
    config = {"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 1_000_000,
              "clean_up_tokenization_spaces": False}
    (out / "tokenizer_config.json").write_text(json.dumps(config, indent=1) + "\n")
    size = tok.get_vocab_size()
    source = ", ".join(map(str, files)) or "guidellm's synthetic text (Faker's lorem words)"
    print(f"{out}: {size} tokens from {source}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
