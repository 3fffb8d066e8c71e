"""Statistics over seeds in the suite report (reports/suite_stats.py, suite_page.py) and in the
regression gate (reports/compare.py), on hand-made summaries with the arithmetic in the comments.

t quantiles: t(0.975, 2) = 4.303, t(0.975, 3.485) = 2.946 (tables); p-values from the t distribution
for the t statistics worked out here (two-sided).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from scalearena.reports.catalog import BY_ID
from scalearena.reports.compare import compare
from scalearena.reports.compare_output import noise_line, text_table
from scalearena.reports.load import Run, load_results
from scalearena.reports.report import write_suite_report
from scalearena.reports.stats import paired_p
from scalearena.reports.suite_stats import SUMMARY_FILE, group_stats, pair_differences


def _summary(autoscaler: str, goodput: float, **over) -> dict:
    s = {"scenario": "stairs", "autoscaler": autoscaler, "complete": True, "goodput_rps": goodput,
         "throughput_rps": 10.0, "slo_attainment": {"both": 0.9}, "gpu_hours": 1.0, "cost": 1.0,
         "failures": {"rejected": 0, "killed": 0, "timeout": 0, "error": 0},
         "ttft_ms": {"mean": 100.0, "p99": 200.0}, "itl_ms": {"mean": 5.0, "p99": 9.0}, "e2e_ms": {"p99": 900.0},
         "energy_kwh": 1.0}
    s.update(over)
    return s


def _write(root: Path, autoscaler: str, goodputs: list[float], seeds: list[int]) -> Path:
    for seed, g in zip(seeds, goodputs, strict=True):
        d = root / "stairs" / autoscaler / f"seed-{seed}"
        d.mkdir(parents=True, exist_ok=True)
        (d / "summary.json").write_text(json.dumps(_summary(autoscaler, g)))
    return root


def _goodput(c):
    return next(d for d in c.deltas if d.metric.id == "goodput_rps")


# -- compare -------------------------------------------------------------------------------------
def test_a_worsening_beyond_tolerance_and_significant_is_a_regression(tmp_path):
    base = _write(tmp_path / "b", "wva", [8.0, 8.2, 7.8], [1, 2, 3])
    cur = _write(tmp_path / "c", "wva", [7.0, 7.6, 7.3], [1, 2, 3])
    # means 8.0 -> 7.3: -8.75 %, beyond goodput's 5 %. Same seeds: paired differences cur - base
    # [-1.0, -0.6, -0.5], mean -0.7, sd sqrt((0.09 + 0.01 + 0.04) / 2) = 0.2646, se 0.1528,
    # t = -4.583 on 2 df -> p = 0.044 < 0.05; half width 4.303 x 0.1528 = 0.657
    c = compare(base, cur)
    d = _goodput(c)
    assert d.key == "stairs/wva" and d.n == 3 and d.test == "paired t"
    assert (d.baseline, d.current) == (pytest.approx(8.0), pytest.approx(7.3))
    assert d.verdict == "regressed" and d.p_value == pytest.approx(0.0445, abs=5e-4)
    assert d.ci_half == pytest.approx(0.657, abs=1e-3)
    assert not c.passed and not c.noise_blind
    assert "p=0.044, ±0.657 (paired t, 3 seeds)" in text_table(c)


def test_a_worsening_within_seed_noise_is_listed_as_noise_and_passes(tmp_path):
    base = _write(tmp_path / "b", "wva", [8.0, 8.2, 7.8], [1, 2, 3])
    cur = _write(tmp_path / "c", "wva", [7.0, 8.3, 6.9], [1, 2, 3])
    # means 8.0 -> 7.4: -7.5 %, beyond 5 %; differences [-1.0, 0.1, -0.9], mean -0.6,
    # sd sqrt((0.16 + 0.49 + 0.09) / 2) = 0.6083, se 0.3512, t = -1.708 on 2 df -> p = 0.23 >= 0.05
    c = compare(base, cur)
    d = _goodput(c)
    assert d.verdict == "noise" and d.p_value == pytest.approx(0.2297, abs=5e-4)
    assert c.passed and c.noisy == [d]
    text = text_table(c)
    assert text.splitlines()[0] == "PASS: 1 runs, no regression beyond tolerance; 1 changes beyond tolerance within seed noise"
    assert "noise" in text and "p=0.23" in text


def test_different_seeds_on_the_two_sides_use_welch(tmp_path):
    base = _write(tmp_path / "b", "wva", [8.0, 8.2, 7.8], [1, 2, 3])
    cur = _write(tmp_path / "c", "wva", [7.0, 7.6, 7.3], [4, 5, 6])
    # variances 0.04 and 0.09: se sqrt(0.04/3 + 0.09/3) = 0.2082, t = -0.7 / 0.2082 = -3.363,
    # Welch df = 0.04333^2 / (0.01333^2/2 + 0.03^2/2) = 3.485 -> p = 0.035; half 2.946 x 0.2082 = 0.613
    d = _goodput(compare(base, cur))
    assert d.test == "Welch t" and d.verdict == "regressed"
    assert d.p_value == pytest.approx(0.0348, abs=5e-4) and d.ci_half == pytest.approx(0.613, abs=1e-3)


def test_one_seed_is_noise_blind(tmp_path):
    base = _write(tmp_path / "b", "wva", [8.0], [1])
    cur = _write(tmp_path / "c", "wva", [7.0], [1])
    c = compare(base, cur)
    d = _goodput(c)
    assert d.verdict == "regressed" and d.p_value is None and d.noise_text == "noise-blind (1 seed)"
    assert c.noise_blind and noise_line(c).startswith("noise-blind: one seed per run")
    assert text_table(c).splitlines()[1].startswith("noise-blind")


# -- the suite's statistics ----------------------------------------------------------------------
def _runs(autoscaler: str, goodputs: list[float]) -> list[Run]:
    return [Run(Path(f"/x/stairs/{autoscaler}/seed-{s}"), f"stairs/{autoscaler}/seed-{s}", _summary(autoscaler, g))
            for s, g in zip((1, 2, 3), goodputs, strict=True)]


def test_group_means_intervals_and_paired_differences_by_hand():
    runs = _runs("a", [5.0, 6.0, 7.0]) + _runs("b", [4.0, 4.5, 5.5])
    g = BY_ID["goodput_rps"]
    stats = group_stats(runs, [g])
    est, values = stats[("", "a")]["goodput_rps"]
    # a: mean 6, sd 1, half width 4.303 x 1 / sqrt(3) = 2.484
    assert (est.mean, est.n, values) == (6.0, 3, [5.0, 6.0, 7.0])
    assert est.half_width == pytest.approx(2.484, abs=1e-3)
    (pair,) = pair_differences(stats, [g])
    # a - b per seed: [1.0, 1.5, 1.5], mean 1.333, sd sqrt((1/9 + 1/36 + 1/36) / 2) = 0.2887, se 0.1667,
    # half 4.303 x 0.1667 = 0.717; t = 8.0 on 2 df -> p = 0.0153
    assert (pair["a"], pair["b"], pair["paired"], pair["significant"]) == ("a", "b", True, True)
    assert pair["diff"] == pytest.approx(1.3333, abs=1e-4) and pair["half_width"] == pytest.approx(0.717, abs=1e-3)
    assert pair["p_value"] == pytest.approx(0.0153, abs=1e-4)


def test_paired_p_degenerate_cases():
    assert paired_p([1.0, 2.0], [1.0, 2.0]) == 1.0  # every difference 0
    assert paired_p([2.0, 3.0], [1.0, 2.0]) == 0.0  # every difference 1: no noise explains it
    assert paired_p([1.0], [2.0]) is None
    assert paired_p([1.0, None, 3.0], [0.0, 5.0, 2.0]) == 0.0  # the pair with None is dropped: [1, 3] - [0, 2] = [1, 1]


def test_suite_page_and_summary_file_carry_the_intervals(tmp_path):
    root = _write(_write(tmp_path, "a", [5.0, 6.0, 7.0], [1, 2, 3]), "b", [4.0, 4.5, 5.5], [1, 2, 3])
    html = write_suite_report(root, jobs=1).read_text()
    data = json.loads((root / SUMMARY_FILE).read_text())
    groups = {g["autoscaler"]: g for g in data["scenarios"]["stairs"]["groups"]}
    assert groups["a"]["seeds"] == [1, 2, 3]
    assert groups["a"]["metrics"]["goodput_rps"]["mean"] == 6.0
    assert groups["a"]["metrics"]["goodput_rps"]["half_width"] == pytest.approx(2.484, abs=1e-3)
    assert data["max_seeds"] == 3
    assert "6.000" in html and "± 2.484" in html  # goodput's format {:.3f}, mean and half width
    assert "Differences between autoscalers over 3 seeds" in html
    assert [r.key for r in load_results(root).runs][:1] == ["stairs/a/seed-1"]


def test_wilson_low_is_scipys_wilson_interval() -> None:
    """reports/stats.py writes the closed form by hand (scipy.stats costs a second to import); scipy is the
    independent reference. By hand for 1201 of 1201: z = 1.959964, z^2/n = 0.0031986; centre 1 + 0.0015993,
    spread z x sqrt(0 + 0.0031986 / 4804) = 1.959964 x 0.00081598 = 0.0015993 -> (1.0015993 - 0.0015993) /
    1.0031986 = 0.996812."""
    from scipy.stats import binomtest

    from scalearena.reports.stats import wilson_low

    assert wilson_low(1.0, 1201) == pytest.approx(0.996812, abs=1e-6)
    for k, n in ((1201, 1201), (1199, 1201), (600, 1201), (1, 10), (7, 9), (511, 3600)):
        assert wilson_low(k / n, n) == pytest.approx(binomtest(k, n).proportion_ci(method="wilson").low, abs=1e-12)
    assert wilson_low(0.5, 0) == 0.5  # no requests known: the share itself
