"""The expr-lang subset of KEDA scalingModifiers formulas (controllers/keda_formula.py), values worked by hand."""
from __future__ import annotations

from pathlib import Path

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


@pytest.mark.parametrize(("formula", "match"), [
    ("let a = q; " * 3000 + "a", "formula of 33,001 characters, more than the 4,096 allowed"),  # 11 x 3000 + 1
    ("(" * 65 + "q" + ")" * 65, "nested 65 parentheses deep, more than the 64 allowed"),
    ("q" + " + q" * 101, "formula of 101 operators, more than the 100 allowed"),
    ("let a = q; " * 101 + "a", "formula of 101 operators"),  # each let is one level of the tree
])
def test_formulas_past_the_size_bounds_are_refused_before_parsing(formula, match):
    """3,000 lets or 5,000 nested parentheses exhausted the checker's recursion (RecursionError: an internal
    error, issue 31); past the bounds they are a FormulaError (a UserError on load) naming the bound."""
    with pytest.raises(FormulaError, match=match):
        compile_formula(formula, {"q"})


def test_formulas_at_the_bounds_still_compile_and_evaluate():
    # 64 parentheses around 36 unary minuses: (-1)^36 = 1; 100 additions of q = 1 give 101
    assert compile_formula("(" * 64 + "-" * 36 + "q" + ")" * 64, {"q"}).evaluate({"q": 1.0}) == 1.0
    assert compile_formula("q" + " + q" * 100, {"q"}).evaluate({"q": 1.0}) == 101.0


def test_a_huge_formula_in_a_scenario_is_one_error_line(tmp_path):
    from tests.unit.harness.cli.test_cli import scalearena

    scenario = (Path(__file__).resolve().parents[3] / "workloads" / "scenarios" / "exp1-staircase.yaml").read_text()
    formula = "let a = q; " * 3000 + "a"
    text = scenario.split("autoscalers:")[0] + (
        "autoscalers:\n  - {kind: keda, triggers: [{name: q, query: queue, threshold: 1}], "
        f"scaling_modifiers: {{formula: '{formula}', target: 1}}}}\n")
    (tmp_path / "s.yaml").write_text(text)
    done = scalearena("validate", str(tmp_path / "s.yaml"))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert "more than the 4,096 allowed" in line, line
