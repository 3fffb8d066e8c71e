"""KEDA ``advanced.scalingModifiers.formula``: the subset of expr-lang (https://expr-lang.org) it is written in.

KEDA compiles the formula with ``expr.Compile(formula, expr.Env(triggers), expr.AsFloat64())``
(kedacore/keda ``pkg/scaling/modifiers``), each named trigger a float64 variable, and runs it on
every metrics request; the result, truncated to milli-units, is the composite metric. Supported
here: numbers, ``true``/``false``, trigger names, ``let x = ...; body``, ``+ - * / ** ^``, unary
``- + not !``, comparisons ``== != < > <= >=``, ``and or && ||``, ternary ``c ? a : b``, ``??``, parentheses and the builtins ``max min abs ceil floor``.

The parser is lark's LALR with a grammar written here after expr-lang's operator table
(``parser/operator/operator.go``: or 10 < and 15 < comparisons 20 < ``+ -`` 30 < ``* /`` 60 <
unary ``-`` 90 < ``** ^`` 100 (right-associative) < ``??`` 500; ``let`` and ``?:`` only at the top
of an expression). expr-lang gives ``not``/``!`` precedence 50, so ``!a * b`` is ``!(a * b)``;
here ``!`` binds its operand tightly. The two readings differ only on formulas that are type
errors either way (``!`` of a number), which both refuse. Types are checked before the first run
as expr's checker does (arithmetic on numbers, ``and``/``or``/``!`` on booleans, a number as the
result), so a formula that would not compile is refused with the column of the offending token.
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

_GRAMMAR = r"""
?start: expr
?expr: "let" NAME "=" expr ";" expr      -> let
     | cond
?cond: or_ "?" expr ":" expr             -> ternary
     | or_
?or_: or_ (OR | OR_KW) and_                       -> logic
    | and_
?and_: and_ (AND | AND_KW) cmp                     -> logic
     | cmp
?cmp: cmp CMP sum                        -> compare
    | sum
?sum: sum ADD prod                       -> arith
    | prod
?prod: prod MUL unary                    -> arith
     | unary
?unary: NEG unary                        -> neg
      | (NOT | NOT_KW) unary             -> not_
      | power
?power: coalesce POW unary               -> arith
      | coalesce
?coalesce: coalesce "??" atom            -> nullish
         | atom
?atom: NUMBER                            -> number
     | (TRUE | FALSE)                    -> boolean
     | NAME                              -> name
     | NAME "(" [expr ("," expr)*] ")"   -> call
     | "(" expr ")"
OR: "||"
OR_KW: "or"
AND: "&&"
AND_KW: "and"
NOT: "!"
NOT_KW: "not"
CMP: "==" | "!=" | "<=" | ">=" | "<" | ">"
ADD: "+" | "-"
NEG: "-" | "+"
MUL: "*" | "/"
POW: "**" | "^"
TRUE: "true"
FALSE: "false"
NAME: /[A-Za-z_$][A-Za-z0-9_$]*/
NUMBER: /(\d[\d_]*)?\.?\d[\d_]*([eE][+-]?\d+)?/
%ignore /\s+/
"""


@lru_cache(maxsize=1)
def _parser() -> Lark:
    """Built on the first formula (~70 ms of LALR tables), not at import: every command imports this module
    through the registry, and few scenarios write a formula."""
    return Lark(_GRAMMAR, parser="lalr", propagate_positions=True, maybe_placeholders=True)


NUM, BOOLEAN, ANY = "float64", "bool", "any"
BUILTINS: dict[str, tuple[int, int | None]] = {"max": (1, None), "min": (1, None), "abs": (1, 1),
                                                "ceil": (1, 1), "floor": (1, 1)}
def _odd_integer(x: float) -> bool:
    return x.is_integer() and abs(x) < 2**53 and int(x) % 2 == 1


def _go_pow(a: float, b: float) -> float:
    """Go's ``math.Pow``, which never fails: past the float range it is +-Inf, a negative base to a fractional
    power NaN, zero to a negative power +-Inf. Python's ``**`` raised OverflowError (``10 ** 1000``),
    ZeroDivisionError (``0 ** -1``) or gave a complex number (``(-8) ** 0.5``) there (issue 31's fuzz)."""
    try:
        out = a**b
    except ZeroDivisionError:
        return math.copysign(math.inf, a) if _odd_integer(b) else math.inf
    except OverflowError:
        if a < 0 and not b.is_integer():
            return math.nan
        return -math.inf if a < 0 and _odd_integer(b) else math.inf
    return out if isinstance(out, float) else math.nan


def _go_round(fn: Callable[[float], int]) -> Callable[[float], float]:
    """Go's ``math.Ceil`` / ``math.Floor``: +-Inf and NaN are returned as they are (Python's raise)."""
    return lambda x: float(fn(x)) if math.isfinite(x) else x


_ARITH: dict[str, Callable[[float, float], float]] = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
    "/": lambda a, b: a / b if b else math.copysign(math.inf, a) if a else math.nan,  # Go float division
    "**": _go_pow, "^": _go_pow,
}
_ONE: dict[str, Callable[[float], float]] = {"abs": abs, "ceil": _go_round(math.ceil), "floor": _go_round(math.floor)}
_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b, ">": lambda a, b: a > b,
    "<=": lambda a, b: a <= b, ">=": lambda a, b: a >= b,
}


class FormulaError(ValueError):
    """A formula that does not parse or does not type-check; the message names the column."""


@dataclass(frozen=True)
class Formula:
    """A checked formula over trigger names; ``evaluate`` gives the composite value."""

    source: str
    tree: Tree  # type: ignore[type-arg]
    names: frozenset[str]  # the trigger names it reads

    def evaluate(self, values: Mapping[str, float | None]) -> float:
        """The formula's value for ``values``: every trigger name it reads, None (expr's nil) for a trigger
        whose read failed; nil in arithmetic is an error, as in expr (``x ?? 0`` guards it)."""
        out = _eval(self.tree, dict(values))
        if isinstance(out, bool) or not isinstance(out, float | int):
            raise FormulaError(f"formula {self.source!r} returned {_kind(out)}, expected a number")
        return float(out)


MAX_FORMULA_CHARS = 4_096  # llm-d's queue-guard formula is under 200
MAX_FORMULA_DEPTH = 64  # levels of ( nesting
MAX_FORMULA_OPERATORS = 100  # operators, lets and ternaries: each is a level of the tree the checker recurses
_OPERATOR = re.compile(r"\*\*|\?\?|&&|\|\||[=!<>]=|\blet\b|\band\b|\bor\b|\bnot\b|[-+*/^<>!?]")


def check_size(source: str) -> None:
    """A formula past the bounds above is refused before lark parses it: 3,000 ``let``s or 5,000 nested
    parentheses exhausted the recursion of the checker (an internal error, issue 31)."""
    if len(source) > MAX_FORMULA_CHARS:
        raise FormulaError(f"formula of {len(source):,} characters, more than the {MAX_FORMULA_CHARS:,} allowed")
    depth = deepest = 0
    for ch in source:
        depth += (ch == "(") - (ch == ")")
        deepest = max(deepest, depth)
    if deepest > MAX_FORMULA_DEPTH:
        raise FormulaError(f"formula nested {deepest} parentheses deep, more than the {MAX_FORMULA_DEPTH} allowed")
    operators = len(_OPERATOR.findall(source))
    if operators > MAX_FORMULA_OPERATORS:
        raise FormulaError(f"formula of {operators} operators, more than the {MAX_FORMULA_OPERATORS} allowed")


def compile_formula(source: str, triggers: set[str] | frozenset[str]) -> Formula:
    """Parse and type-check ``source`` with ``triggers`` as its float64 variables (KEDA's ``expr.Env``)."""
    check_size(source)
    return _compile(source, frozenset(triggers))


@lru_cache(maxsize=256)
def _compile(source: str, triggers: frozenset[str]) -> Formula:
    """Cached: a config is validated several times (scenario load, re-validation, the policy) and the tree is
    never modified by evaluation."""
    try:
        tree = _parser().parse(source)
    except UnexpectedInput as e:
        raise FormulaError(_parse_message(source, e)) from None
    used: set[str] = set()
    kind = _check(tree, {t: NUM for t in triggers}, used, source)
    if kind == BOOLEAN:
        raise FormulaError(f"formula {source!r} returns a bool, expected a number (expr.AsFloat64)")
    return Formula(source, tree, frozenset(used))


def _parse_message(source: str, e: UnexpectedInput) -> str:
    col = getattr(e, "column", None)
    if isinstance(e, UnexpectedEOF) or col is None or col < 0:
        return f"formula {source!r} does not parse: unexpected end of formula (column {len(source) + 1})"
    if isinstance(e, UnexpectedCharacters):
        return f"formula {source!r} does not parse: unexpected character {source[e.pos_in_stream or 0]!r} at column {col}"
    tok = e.token if isinstance(e, UnexpectedToken) else None
    if tok is not None and tok.type == "$END":
        return f"formula {source!r} does not parse: unexpected end of formula (column {len(source) + 1})"
    return f"formula {source!r} does not parse: unexpected {str(tok)!r} at column {col}"


def _col(node: Tree | Token) -> int:  # type: ignore[type-arg]
    return int(getattr(node, "column", None) or getattr(getattr(node, "meta", None), "column", 0) or 0)


def _check(node: Any, env: dict[str, str], used: set[str], src: str) -> str:
    """expr's checker over the subset: the type of ``node`` (float64, bool or any), or FormulaError."""
    rule = node.data

    def need(child: Any, want: str, what: str) -> str:
        got = _check(child, env, used, src)
        if got not in (want, ANY):
            raise FormulaError(f"formula {src!r}: {what} needs {want}, got {got} (column {_col(child)})")
        return got

    if rule == "number":
        return NUM
    if rule == "boolean":
        return BOOLEAN
    if rule == "name":
        name = str(node.children[0])
        if name not in env:
            raise FormulaError(f"formula {src!r}: unknown name {name} (column {_col(node.children[0])}); "
                               f"the names are the triggers' names: {', '.join(sorted(env)) or 'none'}")
        used.add(name)
        return env[name]
    if rule == "let":
        name, value, body = node.children
        return _check(body, {**env, str(name): _check(value, env, used, src)}, used, src)
    if rule in ("arith", "neg"):
        for child in node.children:
            if not isinstance(child, Token):
                need(child, NUM, f"operator {_op(node)}")
        return NUM
    if rule == "compare":
        left, op, right = node.children
        if op in ("==", "!="):
            _check(left, env, used, src), _check(right, env, used, src)
        else:
            need(left, NUM, f"operator {op}"), need(right, NUM, f"operator {op}")
        return BOOLEAN
    if rule in ("logic", "not_"):
        for child in node.children:
            if not isinstance(child, Token):
                need(child, BOOLEAN, f"operator {_op(node)}")
        return BOOLEAN
    if rule == "ternary":
        cond, a, b = node.children
        need(cond, BOOLEAN, "the condition of ?:")
        ta, tb = _check(a, env, used, src), _check(b, env, used, src)
        return ta if ta == tb else ANY
    if rule == "nullish":
        left, right = (_check(c, env, used, src) for c in node.children)
        return left if left == right else ANY
    if rule == "call":
        return _check_call(node, env, used, src)
    raise FormulaError(f"formula {src!r}: unsupported construct {rule} (column {_col(node)})")


def _check_call(node: Any, env: dict[str, str], used: set[str], src: str) -> str:
    fn, *args = node.children
    args = [a for a in args if a is not None]
    if str(fn) not in BUILTINS:
        raise FormulaError(f"formula {src!r}: unknown function {fn} (column {_col(fn)}); "
                           f"supported: {', '.join(BUILTINS)}")
    lo, hi = BUILTINS[str(fn)]
    if len(args) < lo or (hi is not None and len(args) > hi):
        raise FormulaError(f"formula {src!r}: {fn} takes {lo if hi == lo else f'at least {lo}'} "
                           f"argument(s), got {len(args)} (column {_col(fn)})")
    for a in args:
        if _check(a, env, used, src) not in (NUM, ANY):
            raise FormulaError(f"formula {src!r}: {fn} needs numbers (column {_col(a)})")
    return NUM


def _op(node: Any) -> str:
    return next((str(c) for c in node.children if isinstance(c, Token)), node.data)


def _kind(x: Any) -> str:
    if x is None:
        return "nil"
    return BOOLEAN if isinstance(x, bool) else NUM if isinstance(x, float | int) else type(x).__name__


def _num(x: Any, op: str) -> float:
    if isinstance(x, bool) or not isinstance(x, float | int):
        raise FormulaError(f"invalid operation {op} on {_kind(x)}")
    return float(x)


def _bool(x: Any, op: str) -> bool:
    if not isinstance(x, bool):
        raise FormulaError(f"invalid operation {op} on {_kind(x)}")
    return x


def _eval(node: Any, env: dict[str, Any]) -> Any:
    rule = node.data
    ch = node.children
    if rule == "number":
        return float(str(ch[0]).replace("_", ""))
    if rule == "boolean":
        return str(ch[0]) == "true"
    if rule == "name":
        return env[str(ch[0])]
    if rule == "let":
        return _eval(ch[2], {**env, str(ch[0]): _eval(ch[1], env)})
    if rule == "arith":
        op = str(ch[1])
        return _ARITH[op](_num(_eval(ch[0], env), op), _num(_eval(ch[2], env), op))
    if rule == "neg":
        v = _num(_eval(ch[1], env), str(ch[0]))
        return -v if str(ch[0]) == "-" else v
    if rule == "not_":
        return not _bool(_eval(ch[1], env), "!")
    if rule == "compare":
        a, b = _eval(ch[0], env), _eval(ch[2], env)
        if str(ch[1]) in ("==", "!="):
            return _COMPARE[str(ch[1])](a, b)
        return _COMPARE[str(ch[1])](_num(a, str(ch[1])), _num(b, str(ch[1])))
    if rule == "logic":  # short-circuit, as expr's jump instructions
        left = _bool(_eval(ch[0], env), str(ch[1]))
        if (str(ch[1]) in ("||", "or")) == left:
            return left
        return _bool(_eval(ch[2], env), str(ch[1]))
    if rule == "ternary":
        return _eval(ch[1], env) if _bool(_eval(ch[0], env), "?:") else _eval(ch[2], env)
    if rule == "nullish":
        v = _eval(ch[0], env)
        return _eval(ch[1], env) if v is None else v
    fn, *args = ch
    vals = [_num(_eval(a, env), str(fn)) for a in args if a is not None]
    if str(fn) == "max":
        return max(vals)
    if str(fn) == "min":
        return min(vals)
    return float(_ONE[str(fn)](vals[0]))
