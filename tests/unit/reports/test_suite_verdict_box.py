"""The suite page's verdict box (issue 30): the SLO its verdicts count against, the pick's attainment, cost and
GPU-hours on its line, the one-oracle-run hint said once, and one meaning for its colour."""
from __future__ import annotations

from pathlib import Path

from scalearena.reports.catalog import BY_ID
from scalearena.reports.demo import SLO, write_demo_results
from scalearena.reports.load import Run
from scalearena.reports.report import write_suite_report
from scalearena.reports.suite_decide import FRONTIER_HINT, PointDecision, sentence, slo_text
from scalearena.reports.suite_page import VERDICT_KEY, verdict_summary
from scalearena.reports.verdict import Point, decide


def _run(slo: dict[str, float] | None) -> Run:
    return Run(Path("x"), "s/a", {"scenario": "s", **({"slo": slo} if slo is not None else {})})


def test_slo_text_names_each_objective_once_or_its_range() -> None:
    assert slo_text([_run({"ttft_ms": 1000.0, "itl_ms": 50.0})] * 2) == "TTFT ≤ 1,000 ms, ITL ≤ 50 ms"
    # a sweep over the TTFT objective: its range; ITL the same everywhere; a fractional ms kept as written
    assert slo_text([_run({"ttft_ms": 1000.0, "itl_ms": 12.5}), _run({"ttft_ms": 500.0, "itl_ms": 12.5})]) \
        == "TTFT ≤ 500 to 1,000 ms, ITL ≤ 12.5 ms"
    assert slo_text([_run(None)]) == ""


def _decision() -> PointDecision:
    a = Point("a", cost=1.234, gpu_hours=0.5, attainment=0.97)
    b = Point("b", cost=2.0, gpu_hours=0.8, attainment=0.99)
    oracle = Point("oracle", cost=1.0, gpu_hours=0.4, attainment=0.98, bound=True)
    return PointDecision("", decide([oracle, a, b], 0.95), [oracle, a, b], BY_ID["cost_usd"])


def test_the_pick_line_carries_its_attainment_cost_and_gpu_hours_and_the_hint_apart() -> None:
    s = sentence(_decision())
    assert s["ok"] and s["pick"] == "a"
    assert s["head"] == "a: 97.0% SLO attainment at 1.23 USD (0.500 GPU-h), the cheapest deployable autoscaler " \
                        "meeting 95%"
    assert s["runner"] == "runner-up b: 2.00 USD at 99.0%"
    # one oracle run is the bound: the line states it, the hint to run the frontier travels apart (said once)
    assert s["bound"] == "bound (oracle, reads the future): 1.00 USD at 98.0%"
    assert s["hint"] == FRONTIER_HINT and "--frontier" in FRONTIER_HINT


def _section(name: str, ok: bool, slo: str = "TTFT ≤ 1,000 ms, ITL ≤ 50 ms", target: float = 0.95) -> dict:
    return {"name": name, "slo": slo, "decision": {"target": target, "verdicts": [
        {"ok": ok, "hint": FRONTIER_HINT, "seeds": 3}, {"ok": True, "hint": FRONTIER_HINT, "seeds": 3}]}}


def test_verdict_summary_says_the_slo_once_and_each_hint_once() -> None:
    box = verdict_summary([_section("x", True), _section("y", False)])
    assert box["slo_common"] == ("TTFT ≤ 1,000 ms, ITL ≤ 50 ms", "95%") and box["slo_per"] == []
    assert box["hints"] == [FRONTIER_HINT]  # four lines, one hint
    assert box["all_picked"] is False  # y has a point without a pick: the amber box
    assert box["seeds"] == 3  # every line a mean over 3 seeds: said once
    box = verdict_summary([_section("x", True), _section("y", True, slo="TTFT ≤ 500 ms, ITL ≤ 50 ms", target=0.9)])
    assert box["all_picked"] is True and box["slo_common"] is None
    assert box["slo_per"] == [("x", "TTFT ≤ 1,000 ms, ITL ≤ 50 ms", "95%"), ("y", "TTFT ≤ 500 ms, ITL ≤ 50 ms", "90%")]


def test_suite_page_states_slo_hint_once_and_colours_the_box_by_picks(tmp_path: Path) -> None:
    out = write_demo_results(tmp_path / "demo", seed=2, lag_scale=1.5,
                             autoscalers=(("wva", 10.0), ("hpa", 45.0), ("oracle", 5.0)))  # the oracle: one bound
    html = write_suite_report(out, jobs=1).read_text()
    slo = f"TTFT ≤ {SLO['ttft_ms']:,.0f} ms, ITL ≤ {SLO['itl_ms']:,.0f} ms"  # the demo's SLO: 2,000 and 100 ms
    assert f"<b>SLO: {slo}</b>" in html and "<b>target: 95%</b>" in html
    lines = html.count('<li class="picked">') + html.count('<li class="unpicked">')
    assert lines >= 2  # a staircase and a rate sweep: several verdict lines ...
    assert html.count("run the oracle frontier (--frontier)") == 1  # ... and their common hint once
    assert VERDICT_KEY in html
    box = 'class="verdict none"' if '<li class="unpicked">' in html else 'class="verdict"'
    assert box in html  # amber exactly when a line has no pick
    html = write_suite_report(out, jobs=1, force=True, min_attainment=0.0).read_text()
    assert '<li class="unpicked">' not in html and 'class="verdict"' in html  # every run meets 0 %: all green


def test_a_suite_over_seeds_says_once_that_its_figures_are_means(tmp_path: Path) -> None:
    out = write_demo_results(tmp_path / "seeds", seed=3, autoscalers=(("wva", 10.0), ("hpa", 45.0)), seeds=(1, 2))
    html = write_suite_report(out, jobs=1).read_text()
    assert html.count("every figure below is a mean over 2 seeds") == 1
    assert "means over 2 seeds" not in html  # no longer at the end of every verdict line
