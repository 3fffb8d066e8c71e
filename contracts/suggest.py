"""'Did you mean ...?' for names a user typed: fields, autoscalers, metrics.

A misspelled key (``max_replica``) or autoscaler (``wva-headrom``) is the most
common bad input; naming the closest valid spelling turns a lookup in the docs
into a copy-paste. Closeness is difflib's ratio (stdlib), with a cutoff high
enough that unrelated names are never offered; a short name is also close at
one typo (one letter changed, added, dropped or two swapped: ``hpx`` is ``hpa``,
ratio 0.67), since one letter weighs too much in the ratio of a 3-letter word.
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
    if match:
        return by_lower[match[0]]
    typo = [o for o in sorted(by_lower) if len(word) >= 3 and one_typo(word.lower(), o)]
    return by_lower[typo[0]] if typo else None


def one_typo(a: str, b: str) -> bool:
    """``b`` is ``a`` with one letter changed, added or dropped, or two neighbours swapped."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diff = [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]
        return len(diff) == 1 or (len(diff) == 2 and diff[1] == diff[0] + 1
                                  and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]])
    short, long_ = sorted((a, b), key=len)
    return any(long_[:i] + long_[i + 1:] == short for i in range(len(long_)))


def did_you_mean(word: str, options: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` for the closest option, else ``""`` (to append to a message)."""
    best = closest(word, options)
    return f"; did you mean {best!r}?" if best else ""
