"""scripts/make_tokenizer.py: the tokenizer folder docs/clients.md's guidellm recipe uses counts text as the
servers do, and decoding keeps every token (an unknown word becomes the word ``unk``, not a dropped [UNK])."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tokenizers import Tokenizer

from scalearena.harness.local.openai_api import PromptCounter, approx_tokens

ROOT = Path(__file__).resolve().parents[2]


def make(tmp_path: Path, text: str) -> Path:
    (tmp_path / "corpus.txt").write_text(text)
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "make_tokenizer.py"), str(tmp_path / "tok"),
                        str(tmp_path / "corpus.txt")], capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stderr
    return tmp_path / "tok"


def test_the_tokenizer_counts_and_decodes_as_the_engine_counts(tmp_path: Path) -> None:
    out = make(tmp_path, "The cat sat. The dog ran!")
    # vocabulary: unk + the pieces The cat sat . dog ran ! = 8
    tok = Tokenizer.from_file(str(out / "tokenizer.json"))
    assert tok.get_vocab_size() == 8
    text = "The cat, a dog-ish thing!"
    # pieces: The | cat | , | a | dog | - | ish | thing | ! = 9; of them ',' 'a' '-' 'ish' 'thing' are unknown
    ids = tok.encode(text, add_special_tokens=False).ids
    assert len(ids) == 9
    assert approx_tokens(text) == 9
    decoded = tok.decode(ids)
    assert decoded == "The cat unk unk dog unk unk unk !"
    assert approx_tokens(decoded) == 9  # what the engine counts of what guidellm sends
    assert PromptCounter(str(out / "tokenizer.json")).text_tokens(text) == 9  # serve-engine --tokenizer: the same
    config = json.loads((out / "tokenizer_config.json").read_text())
    assert config["tokenizer_class"] == "PreTrainedTokenizerFast"


def test_whitespace_is_never_a_token(tmp_path: Path) -> None:
    tok = Tokenizer.from_file(str(make(tmp_path, "a b") / "tokenizer.json"))
    # "  a\t\tb \n" has the pieces a, b: 2 tokens; "a..b" has a . . b: 4 (one per punctuation mark, as the engine)
    assert len(tok.encode("  a\t\tb \n", add_special_tokens=False).ids) == 2
    assert len(tok.encode("a..b", add_special_tokens=False).ids) == 4
    assert approx_tokens("a..b") == 4
