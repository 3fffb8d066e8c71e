"""Where in a query promql-parser's syntax error is.

promql-parser (the Rust crate under the Python binding) runs an LR parser and discards its error
list: a grammar error comes back as the bare text "invalid promql query", with no position
(``parser/parse.rs`` keeps only the result), and lexer errors name the offending text but not its
offset. So the position is recovered with the same parser: the error is at the first token ``k``
such that no completion of the query's first ``k`` tokens parses, which is where an LR parser
stops (the viable-prefix property). Completions are a few fillers (an operand, a range, a label
matcher, a grouping list, the arguments a call may still need) followed by the closers of the brackets still open, enough for every
construct of the grammar to be finished; when every prefix can be finished the query is cut short
and the error is at its end, as Prometheus reports ``unexpected end of input``. Hand-written
because no maintained Python PromQL parser reports positions; it runs only on the error path.
"""
from __future__ import annotations

import re

import promql_parser as pp

_TOKEN = re.compile(r"""\s*("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`|[A-Za-z_:][\w:.]*|\d[\w.]*|\.\d[\w.]*|"""
                    r"""==|!=|=~|!~|<=|>=|[-+*/%^<>=(){}\[\],:@]|\S)""")
_STRINGS = tuple(", ".join(['"a"'] * k) for k in range(1, 5))
_ARGS = (*_STRINGS, *(f"x, {s}" for s in _STRINGS), "0", "0, 1", "x", "x[5m]", "0, x", "0.5, x[5m]",
         "x, 0", "x, 0, 1")  # what a call may still need: label_replace's strings, clamp's bounds, topk's k
_FILLERS = ("", " 0", " x", " x[5m]", "[5m]", " 5m", " 5m:", ":", ' "v"', '="v"', 'a="v"', " (a)", " (a) x",
            " (x)", *(f" {a}" for a in _ARGS), *(f", {a}" for a in _ARGS))
_TAILS = ("", " (x)", "[5m:]")  # the operand of a grouping clause, a subquery range
_CLOSE = {"(": ")", "{": "}", "[": "]"}


def _parses(text: str) -> bool:
    try:
        pp.parse(text)
    except ValueError:
        return False
    return True


def _open_brackets(tokens: list[str]) -> str:
    stack: list[str] = []
    for tok in tokens:
        if tok in _CLOSE:
            stack.append(_CLOSE[tok])
        elif tok in (")", "}", "]") and stack and stack[-1] == tok:
            stack.pop()
    return "".join(reversed(stack))


def _viable(prefix: str, tokens: list[str]) -> bool:
    """Some completion parses: a filler, then the open brackets closed with a tail after any of them."""
    closers = _open_brackets(tokens)
    return any(_parses(prefix + filler + closers[:i] + tail + closers[i:])
               for filler in _FILLERS for tail in _TAILS for i in range(len(closers) + 1))


def error_position(query: str) -> int:
    """0-based character offset of the token where ``query`` stops being valid PromQL (its length
    when the query is only cut short)."""
    spans = [(m.start(1), m.end(1)) for m in _TOKEN.finditer(query)]
    tokens: list[str] = []
    for start, end in spans:
        tokens.append(query[start:end])
        if not _viable(query[:end], tokens):
            return start
    return len(query)


def describe(query: str, position: int) -> str:
    """Prometheus' wording for a syntax error at ``position``: the unexpected token, or the end of input."""
    m = _TOKEN.match(query, position)
    if position >= len(query) or m is None:
        return "unexpected end of input"
    return f"unexpected {m.group(1)!r}"
