"""A suite's run pages are written by the worker that ran each plan, as the run ends (runner.with_pages,
runner.write_page), and the report step afterwards finds them up to date: the same link, colour and
inputs hash it would have used itself, so it renders only the suite page."""
from __future__ import annotations

import os
from pathlib import Path

from scalearena.harness.config.scenario import load_scenario
from scalearena.harness.config.suite import plans_for_scenario
from scalearena.harness.run.runner import run_plan, with_pages
from scalearena.reports.report import run_inputs_hash, stored_hash, write_suite_report

ROOT = Path(__file__).resolve().parents[2]
HPA_COLOR, STATIC_COLOR = "#0173b2", "#de8f05"  # reports.figures.SERIES_COLORS[0], [1]: hpa < static sorted


def test_worker_pages_are_the_report_steps_pages(tmp_path: Path) -> None:
    sc = load_scenario(str(ROOT / "workloads/scenarios/exp1-staircase.yaml"), ["duration_s=60", "drain_s=0"])
    plans = with_pages(plans_for_scenario(sc, ["static", "hpa"]))
    assert [(p.label, p.page_color) for p in plans] == [("static", STATIC_COLOR), ("hpa", HPA_COLOR)]
    for p in plans:
        assert run_plan(p, tmp_path, "sim").ok
        run_dir = tmp_path / p.rel_dir
        link = os.path.relpath(tmp_path / "report.html", run_dir)
        assert link == "../../report.html"  # <scenario>/<autoscaler>/ below the suite folder
        assert stored_hash(run_dir / "report.html") == run_inputs_hash(run_dir, link, p.page_color)
    steps: list[tuple[str, int, int]] = []
    write_suite_report(tmp_path, progress=lambda step, done, total: steps.append((step, done, total)))
    assert ("run pages", 0, 0) in steps  # no run page was out of date: none rendered again
    assert (tmp_path / "report.html").is_file()


def test_no_page_without_a_colour(tmp_path: Path) -> None:
    sc = load_scenario(str(ROOT / "workloads/scenarios/exp1-staircase.yaml"), ["duration_s=30", "drain_s=0"])
    (plan,) = plans_for_scenario(sc, ["static"])  # frontier and tuning plans: no page_color
    assert run_plan(plan, tmp_path, "sim").ok
    assert (tmp_path / plan.rel_dir / "summary.json").is_file()
    assert not (tmp_path / plan.rel_dir / "report.html").exists()
