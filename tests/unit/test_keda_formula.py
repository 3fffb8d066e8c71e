"""The expr-lang subset of KEDA scalingModifiers formulas (controllers/keda_formula.py), values worked by hand."""
from __future__ import annotations

import pytest

from scalearena.controllers.keda_formula import FormulaError, compile_formula

ENV = {"a": 3.0, "b": 4.0}


@pytest.mark.parametrize(("formula", "want"), [
    ("a + b * 2", 11.0),  # * before +: 3 + 8
    ("(a + b) / 2", 3.5),
    ("2 ** 3 ** 2", 512.0),  # ** is right-associative: 2 ** 9
    ("-a ** 2", -9.0),  # unary - (90) below ** (100): -(3 ** 2)
    ("a - -b", 7.0),
    ("let x = a / 2; max(x, b)", 4.0),  # max(1.5, 4)
    ("let x = 1; let y = x + a; y * 2", 8.0),
    ("a > 2 ? floor(b / 3) : 0", 1.0),  # floor(1.33)
    ("a > 5 || b < 3 ? 1 : ceil(a / 2)", 2.0),  # false or false -> ceil(1.5)
    ("not (a > 1) and b < 5 ? 1 : 0", 0.0),
    ("min(a, b, 2) + abs(a - b)", 3.0),  # 2 + 1
    ("a ?? 7", 3.0),  # a is never nil
    ("1 / 0", float("inf")),  # Go float division
])
def test_values(formula, want):
    assert compile_formula(formula, set(ENV)).evaluate(ENV) == want


@pytest.mark.parametrize(("formula", "match"), [
    ("a + ", "column 5"), ("a +* b", "column 4"), ("a # b", "column 3"),
    ("c + 1", "unknown name c"), ("a > 1", "returns a bool"), ("a ? 1 : 2", "needs bool"),
    ("sum(a)", "unknown function sum"), ("a and b", "needs bool"), ("abs(a, b)", "takes 1"),
])
def test_errors_name_the_column_or_the_cause(formula, match):
    with pytest.raises(FormulaError, match=match):
        compile_formula(formula, set(ENV))
