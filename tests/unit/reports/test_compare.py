"""The regression gate on hand-written summaries: verdicts, tolerances, mismatched sets, exit codes."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from scalearena.contracts.errors import UserError
from scalearena.reports.catalog import BY_ID
from scalearena.reports.cli import compare as compare_cmd
from scalearena.reports.compare import compare, judge, parse_tolerances
from scalearena.reports.compare_config import RunFilter
from scalearena.reports.compare_output import markdown, shown, text_table


def _summary(**over):
    s = {"scenario": "stairs", "autoscaler": "wva", "complete": True, "throughput_rps": 10.0, "goodput_rps": 8.0,
         "slo_attainment": {"both": 0.8}, "failures": {"rejected": 0, "killed": 0, "timeout": 0, "error": 0},
         "ttft_ms": {"mean": 500.0, "p99": 1000.0}, "itl_ms": {"mean": 20.0, "p99": 40.0},
         "e2e_ms": {"p99": 9000.0}, "gpu_hours": 2.0, "cost": 4.0, "energy_kwh": 1.0}
    for k, v in over.items():
        s[k] = v
    return s


def _results(root: Path, runs: dict[str, dict]) -> Path:
    for key, s in runs.items():
        (root / key).mkdir(parents=True, exist_ok=True)
        (root / key / "summary.json").write_text(json.dumps(s))
    return root


def _verdicts(c, key="stairs/wva"):
    return {d.metric.id: d.verdict for d in c.deltas if d.key == key}


def test_improvement_passes(tmp_path):
    base = _results(tmp_path / "b", {"stairs/wva": _summary()})
    cur = _results(tmp_path / "c", {"stairs/wva": _summary(goodput_rps=9.0, cost=3.0)})
    c = compare(base, cur)
    v = _verdicts(c)
    assert v["goodput_rps"] == "improved" and v["cost"] == "improved" and v["throughput_rps"] == "same"
    assert c.passed


def test_regression_within_tolerance_passes(tmp_path):
    base = _results(tmp_path / "b", {"stairs/wva": _summary()})
    # p99 TTFT 1000 -> 1090 ms is +9 %, inside the default +10 %; goodput 8 -> 7.7 is -3.75 %, inside -5 %
    cur = _results(tmp_path / "c", {"stairs/wva": _summary(ttft_ms={"mean": 500.0, "p99": 1090.0},
                                                             goodput_rps=7.7)})
    c = compare(base, cur)
    assert _verdicts(c)["ttft_p99"] == "within" and _verdicts(c)["goodput_rps"] == "within"
    assert c.passed


def test_regression_beyond_tolerance_fails(tmp_path):
    base = _results(tmp_path / "b", {"stairs/wva": _summary()})
    # p99 TTFT 1000 -> 1120 ms is +12 % > 10 %; goodput 8 -> 7.5 is -6.25 % beyond -5 %
    cur = _results(tmp_path / "c", {"stairs/wva": _summary(ttft_ms={"mean": 500.0, "p99": 1120.0},
                                                             goodput_rps=7.5)})
    c = compare(base, cur)
    assert {d.metric.id for d in c.regressions} == {"ttft_p99", "goodput_rps"}
    assert not c.passed
    # a looser tolerance lets it through: 12 % <= 15 %, 6.25 % <= 7 %
    assert compare(base, cur, parse_tolerances(["ttft_p99=15", "goodput_rps=-7%"])).passed


def test_cost_in_usd_is_gated_like_cost(tmp_path):
    # the reports show USD; 10.0 -> 13.0 USD is +30 % > the default 10 %: a regression, even with cost unchanged
    base = _results(tmp_path / "b", {"stairs/wva": _summary(cost_usd=10.0)})
    cur = _results(tmp_path / "c", {"stairs/wva": _summary(cost_usd=13.0)})
    c = compare(base, cur)
    assert [d.metric.id for d in c.regressions] == ["cost_usd"] and not c.passed
    # 10.0 -> 10.9 is +9 %: within
    assert compare(base, _results(tmp_path / "d", {"stairs/wva": _summary(cost_usd=10.9)})).passed
    # unpriced GPUs on both sides: nothing to gate
    assert _verdicts(compare(base := _results(tmp_path / "e", {"stairs/wva": _summary()}), base))["cost_usd"] == "n/a"


def test_failures_from_zero_baseline_allow_none(tmp_path):
    base = _results(tmp_path / "b", {"stairs/wva": _summary()})
    cur = _results(tmp_path / "c", {"stairs/wva": _summary(failures={"rejected": 1, "killed": 0})})
    c = compare(base, cur)
    assert _verdicts(c)["failures"] == "regressed"  # 0 -> 1: +0 allowed on a zero baseline


def test_judge_by_direction():
    # higher is better: 100 -> 94 is 6 % worse (> 5); 100 -> 96 is 4 % worse
    assert judge(BY_ID["throughput_rps"], 100.0, 94.0, 5.0) == "regressed"
    assert judge(BY_ID["throughput_rps"], 100.0, 96.0, 5.0) == "within"
    assert judge(BY_ID["cost"], 10.0, 9.0, 10.0) == "improved"
    assert judge(BY_ID["ttft_p99"], 100.0, None, 10.0) == "missing"
    assert judge(BY_ID["ttft_p99"], None, 100.0, 10.0) == "new"


def test_mismatched_sets_name_missing_runs(tmp_path):
    base = _results(tmp_path / "b", {"stairs/wva": _summary(), "stairs/hpa": _summary(autoscaler="hpa")})
    cur = _results(tmp_path / "c", {"stairs/wva": _summary(), "stairs/kpa": _summary(autoscaler="kpa")})
    with pytest.raises(UserError) as e:
        compare(base, cur)
    assert "missing from current: stairs/hpa" in str(e.value)
    assert "missing from baseline: stairs/kpa" in str(e.value)


def test_missing_dir_is_user_error(tmp_path):
    with pytest.raises(UserError):
        compare(tmp_path / "nope", tmp_path / "nope2")


@pytest.mark.parametrize("bad", ["ttft_p99", "ttft_p99=abc", "nosuch=5", "replicas_mean=5"])
def test_bad_tolerance(bad):
    with pytest.raises(UserError):
        parse_tolerances([bad])


def test_tolerance_off_stops_gating():
    assert "cost" not in parse_tolerances(["cost=off"])


def test_incomplete_run_is_refused_unless_allowed_and_then_fails(tmp_path):
    base = _results(tmp_path / "b", {"stairs/wva": _summary()})
    cur = _results(tmp_path / "c", {"stairs/wva": _summary(complete=False)})
    with pytest.raises(UserError, match="incomplete runs .* current: stairs/wva"):
        compare(base, cur)
    c = compare(base, cur, allow_incomplete=True)
    assert c.incomplete == ["stairs/wva"] and not c.passed
    runner = CliRunner()
    assert runner.invoke(compare_cmd, [str(base), str(cur)]).exit_code == 2
    assert runner.invoke(compare_cmd, [str(base), str(cur), "--allow-incomplete"]).exit_code == 1


@pytest.mark.parametrize(
    ("over", "fragment"),
    [
        ({"goodput_rps": float("nan")}, "goodput_rps: got nan"),
        ({"cost": float("inf")}, "cost: got inf"),
        ({"failures": {"rejected": -1000, "killed": 0, "timeout": 0, "error": 0}}, "failures.rejected: got -1000"),
        ({"failures": {"rejected": 1.5, "killed": 0, "timeout": 0, "error": 0}}, "failures.rejected: got 1.5"),
        ({"complete": "false"}, "complete: got 'false'"),
        ({"complete": None}, "complete: got None"),
        ({"throughput_rps": -3.0}, "throughput_rps: got -3.0"),
        ({"goodput_rps": "fast"}, "goodput_rps: got 'fast'"),
        ({"requests_total": True}, "requests_total: got True"),
        # counts that do not add up (a hand-edited summary: 500 ok added): 3,813 + 44 != 3,357
        ({"requests_total": 3357, "requests_ok": 3813, "requests_failed": 44},
         "requests_total: got 3357 (expected requests_ok + requests_failed = 3813 + 44 = 3857)"),
        ({"requests_failed": 3, "failures": {"rejected": 1, "killed": 1, "timeout": 0, "error": 0}},
         "requests_failed: got 3 (expected the sum of failures.* = 2)"),
        ({"slo_attainment": {"both": 1.5}}, "slo_attainment.both: got 1.5 (expected a share from 0 to 1)"),
        ({"goodput_rps": 80.0}, "goodput_rps: got 80.0 (expected at most throughput_rps 10"),  # 10x throughput
        ({"goodput_rps": 1e308}, "goodput_rps: got 1e+308 (expected a finite number below 2^63"),  # was exit 3
    ],
)
def test_untrustworthy_summary_is_refused_on_either_side(tmp_path, over, fragment):
    good = _results(tmp_path / "g", {"stairs/wva": _summary()})
    broken = _results(tmp_path / "x", {"stairs/wva": _summary(**over)})
    for base, cur in ((good, broken), (broken, good)):
        with pytest.raises(UserError, match=re.escape(fragment)):
            compare(base, cur)
        r = CliRunner().invoke(compare_cmd, [str(base), str(cur)])
        assert r.exit_code == 2 and fragment in r.output and str(broken) in r.output


def test_non_utf8_summary_and_unwritable_html_are_one_error(tmp_path):
    good = _results(tmp_path / "g", {"stairs/wva": _summary()})
    other = _results(tmp_path / "o", {"stairs/wva": _summary()})
    r = CliRunner().invoke(compare_cmd, [str(good), str(other), "--html", "/proc/nope/compare.html"])
    assert r.exit_code == 2 and "error: /proc/nope/compare.html: cannot write" in r.output
    (other / "stairs/wva/summary.json").write_bytes(b'{"complete": tru\xe9}')
    r = CliRunner().invoke(compare_cmd, [str(good), str(other)])
    assert r.exit_code == 2 and "cannot read JSON: UnicodeDecodeError" in r.output


def test_cli_exit_codes_and_step_summary(tmp_path, monkeypatch):
    base = _results(tmp_path / "b", {"stairs/wva/rate-2": _summary()})
    good = _results(tmp_path / "g", {"stairs/wva/rate-2": _summary()})
    bad = _results(tmp_path / "x", {"stairs/wva/rate-2": _summary(throughput_rps=5.0, goodput_rps=5.0)})
    step = tmp_path / "step.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    runner = CliRunner()
    ok = runner.invoke(compare_cmd, [str(base), str(good)])
    assert ok.exit_code == 0, ok.output
    assert "PASS" in ok.output and (good / "compare.html").is_file()
    md = tmp_path / "out.md"
    reg = runner.invoke(compare_cmd, [str(base), str(bad), "--markdown", str(md)])
    assert reg.exit_code == 1
    assert "REGRESSED" in reg.output and "throughput_rps" in md.read_text()
    assert step.read_text().count("scalearena compare") == 2
    assert runner.invoke(compare_cmd, [str(base), str(tmp_path / "none")]).exit_code == 2
    assert runner.invoke(compare_cmd, [str(base), str(good), "-t", "bogus"]).exit_code == 2


def test_markdown_escapes_table_cells(tmp_path):
    base = _results(tmp_path / "b", {"a|b/wva": _summary()})
    cur = _results(tmp_path / "c", {"a|b/wva": _summary(throughput_rps=1.0, goodput_rps=1.0)})
    assert "a\\|b/wva" in markdown(compare(base, cur))


def test_output_leads_with_verdict_and_lists_only_changes(tmp_path):
    base = _results(tmp_path / "b", {"stairs/wva": _summary(), "stairs/hpa": _summary(autoscaler="hpa")})
    # hpa: cost 4 -> 3 is -25 %, better by more than its 10 %; wva: ttft_p99 1000 -> 1050 is +5 %, within 10 %
    cur = _results(tmp_path / "c", {"stairs/wva": _summary(ttft_ms={"mean": 500.0, "p99": 1050.0}),
                                    "stairs/hpa": _summary(autoscaler="hpa", cost=3.0)})
    c = compare(base, cur)
    text = text_table(c)
    lines = text.splitlines()
    assert lines[0].startswith("PASS")
    assert [(d.key, d.metric.id) for d in shown(c)] == [("stairs/hpa", "cost")]
    assert "ttft_p99" not in text
    # 12 gated metrics (throughput, goodput, slo_attainment, failures, ttft mean/p99, itl mean/p99, e2e_p99,
    # gpu_hours, cost, energy_kwh) x 2 runs = 24 values, 1 shown -> 23 quiet
    assert "23 gated metric values within tolerance not shown" in text
    verbose = text_table(c, verbose=True)
    assert "ttft_p99" in verbose and "requests_total" not in verbose  # summaries here have no requests_total
    assert "replicas_mean" not in verbose


def test_filters_select_runs_by_glob(tmp_path):
    runs = {"stairs/wva": _summary(), "stairs/hpa": _summary(autoscaler="hpa"),
            "burst/wva/rate-2": _summary(scenario="burst")}
    base = _results(tmp_path / "b", runs)
    cur = _results(tmp_path / "c", {**runs, "stairs/hpa": _summary(autoscaler="hpa", throughput_rps=1.0, goodput_rps=1.0)})
    assert not compare(base, cur).passed
    only_wva = compare(base, cur, only=RunFilter(autoscalers=("w*",)))
    assert only_wva.keys() == ["burst/wva/rate-2", "stairs/wva"] and only_wva.passed
    assert compare(base, cur, only=RunFilter(scenarios=("bu*",))).keys() == ["burst/wva/rate-2"]
    assert compare(base, cur, only=RunFilter(runs=("*/rate-*",))).keys() == ["burst/wva/rate-2"]
    with pytest.raises(UserError, match="no run matches autoscaler kpa"):
        compare(base, cur, only=RunFilter(autoscalers=("kpa",)))


def test_changed_slo_is_refused_unless_allowed(tmp_path):
    base = _results(tmp_path / "b", {"stairs/wva": _summary(slo={"ttft_ms": 1000.0, "itl_ms": 50.0})})
    cur = _results(tmp_path / "c", {"stairs/wva": _summary(slo={"ttft_ms": 800.0, "itl_ms": 50.0})})
    c = compare(base, cur)
    assert c.config_changes == ["stairs: slo.ttft_ms: 1000.0 -> 800.0"]
    runner = CliRunner()
    refused = runner.invoke(compare_cmd, [str(base), str(cur)])
    assert refused.exit_code == 2
    assert "slo.ttft_ms: 1000.0 -> 800.0" in refused.output
    lines = refused.output.splitlines()  # the refusal first, not the PASS of numbers that do not compare
    assert lines[0].startswith("NOT COMPARED: SLOs, workload or cluster differ")
    assert lines[1].startswith("if compared anyway: PASS: 1 runs")
    md = markdown(c, refused=True).splitlines()  # the CI step summary leads with the refusal too
    assert md[0] == "## ⛔ scalearena compare" and md[2].startswith("**NOT COMPARED: SLOs, workload or cluster differ")
    assert md[4].startswith("**if compared anyway: PASS")
    page = (cur / "compare.html").read_text()  # and the page: a red badge, not a green PASS
    assert '<span class="badge fail">NOT COMPARED: SLOs, workload or cluster differ' in page
    allowed = runner.invoke(compare_cmd, [str(base), str(cur), "--allow-config-change"])
    assert allowed.exit_code == 0 and allowed.output.startswith("PASS: 1 runs")
    assert "warning: SLOs, workload or cluster differ" in allowed.output


def test_changed_workload_in_suite_json_is_a_config_change(tmp_path):
    base = _results(tmp_path / "b", {"stairs/wva": _summary()})
    cur = _results(tmp_path / "c", {"stairs/wva": _summary()})
    sc = {"slo": {"ttft_ms": 1000.0}, "duration_s": 600.0,
          "workload": [{"arrivals": {"kind": "poisson", "rate_rps": 2.0}}]}
    (base / "suite.json").write_text(json.dumps({"scenarios": {"stairs": sc}}))
    changed = {**sc, "workload": [{"arrivals": {"kind": "poisson", "rate_rps": 3.0}}]}
    (cur / "suite.json").write_text(json.dumps({"scenarios": {"stairs": changed}}))
    assert compare(base, cur).config_changes == ["stairs: workload[0].arrivals.rate_rps: 2.0 -> 3.0"]
    # the cluster and router too: a lower max_replicas is a different experiment, not a regression
    cluster = {**sc, "cluster": {"variants": [{"name": "v", "max_replicas": 30}]}, "router": {"refresh_s": 0.25}}
    (base / "suite.json").write_text(json.dumps({"scenarios": {"stairs": cluster}}))
    smaller = {**cluster, "cluster": {"variants": [{"name": "v", "max_replicas": 3}]}, "router": {"refresh_s": 1}}
    (cur / "suite.json").write_text(json.dumps({"scenarios": {"stairs": smaller}}))
    assert compare(base, cur).config_changes == ["stairs: cluster.variants[0].max_replicas: 30 -> 3",
                                                 "stairs: router.refresh_s: 0.25 -> 1"]


def test_markdown_lists_improvements_and_keeps_all_in_details(tmp_path):
    base = _results(tmp_path / "b", {"stairs/wva": _summary()})
    cur = _results(tmp_path / "c", {"stairs/wva": _summary(cost=2.0)})  # 4 -> 2: -50 %, beyond 10 %
    md = markdown(compare(base, cur))
    assert md.index("**PASS") < md.index("### Improvements beyond tolerance") < md.index("<details>")


def test_html_marks_the_verdict_cell(tmp_path):
    import re

    from scalearena.reports.compare_output import write_compare_html

    base = _results(tmp_path / "b", {"stairs/hpa": _summary(autoscaler="hpa")})
    cur = _results(tmp_path / "c", {"stairs/hpa": _summary(autoscaler="hpa", cost=3.0)})  # 4 -> 3: -25 %, improved
    html = write_compare_html(compare(base, cur), tmp_path / "compare.html").read_text()
    row = re.search(r'<tr class="improved">(.*?)</tr>', html, re.S).group(1)
    cells = re.findall(r'<td class="([^"]*)">([^<]*)</td>', row)
    # run, metric, baseline, current, change, tolerance, verdict, seeds: the 7th cell carries the colour
    # (the 8th, the seeds column added last, did)
    assert [c for c, _ in cells] == ["l", "l", "", "", "", "", " improved", ""]
    assert cells[6][1] == "improved"
