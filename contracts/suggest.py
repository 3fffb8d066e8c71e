"""'Did you mean ...?' for names a user typed: fields, autoscalers, metrics.

A misspelled key (``max_replica``) or autoscaler (``wva-headrom``) is the most
common bad input; naming the closest valid spelling turns a lookup in the docs
into a copy-paste. Closeness is difflib's ratio (stdlib), with a cutoff high
enough that unrelated names are never offered.
"""
from __future__ import annotations

import difflib
from collections.abc import Iterable

CUTOFF = 0.75  # difflib ratio: "max_replica" vs "max_replicas" is 0.96, "seed" vs "slo" 0.57


def closest(word: str, options: Iterable[str]) -> str | None:
    """The option spelled most like ``word`` (case-insensitive), or None when none is close."""
    opts = [str(o) for o in options if str(o) != word]
    by_lower = {o.lower(): o for o in opts}
    match = difflib.get_close_matches(word.lower(), list(by_lower), n=1, cutoff=CUTOFF)
    return by_lower[match[0]] if match else None


def did_you_mean(word: str, options: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` for the closest option, else ``""`` (to append to a message)."""
    best = closest(word, options)
    return f"; did you mean {best!r}?" if best else ""
