"""Property: any KEDA ``scalingModifiers.formula`` compiles to a Formula or is refused with a FormulaError naming
why (a UserError on load), and a compiled formula evaluates, for any trigger values (NaN, +-Inf, 1e308, nil),
to a float or a FormulaError (expr's runtime error, e.g. nil in arithmetic): never another exception, never a
hang.

Formulas come from a small expr-lang grammar (numbers up to 1e999, trigger names and unknown ones, ``let``,
ternaries, ``??``, every operator, the builtins and unknown calls), sometimes stretched past the size bounds
(deep parentheses, long chains, many lets) or with unicode spliced in.
"""
from __future__ import annotations

import math

import pytest
from hypothesis import given, strategies as st

from scalearena.controllers.keda_formula import FormulaError, compile_formula
from tests.fuzz_settings import fuzz

TRIGGERS = frozenset({"a", "b", "queue"})
NUMBERS = st.sampled_from(["0", "1", "2", "0.5", ".5", "5.", "1e308", "1e999", "1e-400", "1_000", "9" * 400,
                           "0x10", "1e", "-0", "3"])
NAMES = st.sampled_from(["a", "b", "queue", "a", "b", "c", "nil", "true", "false", "let", "é", "$x", "_"])
BINARY = st.sampled_from(["+", "-", "*", "/", "**", "^", "%", "==", "!=", "<", ">", "<=", ">=", "and", "or", "&&",
                          "||", "??", "in", "="])
CALLS = st.sampled_from(["max", "min", "abs", "ceil", "floor", "sum", "len", "int", "max", "floor", "ceil"])
VALUES = st.one_of(st.none(), st.floats(), st.sampled_from([0.0, -0.0, 1.0, 1e308, -1e308, math.inf, -math.inf,
                                                             math.nan, 5e-324]))


def _extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    @st.composite
    def node(draw: st.DrawFn) -> str:
        a, b, c = draw(inner), draw(inner), draw(inner)
        args = ", ".join(draw(st.lists(inner, max_size=3)))
        return draw(st.sampled_from([
            f"{a} {draw(BINARY)} {b}", f"({a})", f"-{a}", f"!{a}", f"not {a}", f"{a} > {b} ? {c} : {a}",
            f"{a} ? {b} : {c}", f"let {draw(NAMES)} = {a}; {b}", f"{draw(CALLS)}({args})", f"{a} ?? {b}",
            f"{draw(CALLS)}({a})", f"{a} ** {b} ** {c}"]))

    return node()


EXPRESSIONS = st.recursive(st.one_of(NUMBERS, NAMES), _extend, max_leaves=10)


@st.composite
def formulas(draw: st.DrawFn) -> str:
    f = draw(EXPRESSIONS)
    shape = draw(st.sampled_from(["as is", "as is", "as is", "as is", "nest", "chain", "lets", "splice"]))
    if shape == "nest":
        n = draw(st.sampled_from([10, 64, 65, 1000, 5000]))
        f = "(" * n + f + ")" * n
    elif shape == "chain":
        f = " + ".join([f] * draw(st.sampled_from([2, 50, 100, 101, 3000])))
    elif shape == "lets":
        f = "let x = a; " * draw(st.sampled_from([1, 50, 101, 3000])) + f
    elif shape == "splice":
        at = draw(st.integers(0, len(f)))
        f = f[:at] + draw(st.text(min_size=1, max_size=3)) + f[at:]
    return f


@fuzz(400)
@given(formula=formulas(), values=st.fixed_dictionaries({t: VALUES for t in sorted(TRIGGERS)}))
def test_any_formula_compiles_and_evaluates_or_is_a_formula_error(formula: str, values: dict) -> None:
    try:
        compiled = compile_formula(formula, TRIGGERS)
    except FormulaError as e:
        assert str(e), formula
        return
    try:
        out = compiled.evaluate(values)
    except FormulaError as e:
        assert str(e), formula
        return
    assert isinstance(out, float), (formula, out)


@pytest.mark.parametrize(("formula", "want"), [
    ("10 ** 1000", math.inf), ("(-10) ** 1001", -math.inf), ("0 ** -1", math.inf), ("(-8) ** 0.5", math.nan),
    ("ceil(1e999)", math.inf), ("floor(-1e999)", -math.inf), ("floor(0 / 0)", math.nan), ("abs(-1e999)", math.inf),
    ("2 ** -1080", 0.0), ("(-0) ** -1", -math.inf), ("(-0) ** -2", math.inf), ("1 ** 1e999", 1.0),
])
def test_go_float_semantics_where_python_raises(formula: str, want: float) -> None:
    """expr runs float64 arithmetic in Go: math.Pow, math.Ceil and math.Floor never fail, they overflow to +-Inf
    or give NaN. ``10 ** 1000`` raised OverflowError, ``0 ** -1`` ZeroDivisionError, ``(-8) ** 0.5`` gave a
    complex number and ``ceil(1e999)`` / ``floor(0 / 0)`` OverflowError / ValueError (issue 31's fuzz)."""
    got = compile_formula(formula, TRIGGERS).evaluate({})
    assert got == want or (math.isnan(want) and math.isnan(got))
