from __future__ import annotations

import math

from scalearena.paper.stats import estimate, t95


def test_estimate_mean_and_ci():
    # values 1, 2, 3, 4, 5: mean 3, sample sd = sqrt(2.5) = 1.5811, se = 1.5811/sqrt(5) = 0.7071,
    # t(0.975, df=4) = 2.776 -> half width 1.963
    e = estimate([1, 2, 3, 4, 5])
    assert e.mean == 3.0
    assert math.isclose(e.half_width, 1.963, abs_tol=1e-3)
    assert e.fmt(".1f") == "3.0 ± 2.0"


def test_single_sample_has_no_interval_and_nan_is_skipped():
    e = estimate([2.0, float("nan")])
    assert e.n == 1 and e.fmt() == "2.00"
    assert math.isnan(estimate([]).mean)


def test_t_quantiles_are_exact():
    # Student-t 0.975 quantiles (standard tables): df 4 -> 2.776, df 11 -> 2.201, df 100 -> 1.984
    assert math.isclose(t95(4), 2.776, abs_tol=5e-4)
    assert math.isclose(t95(11), 2.201, abs_tol=5e-4)
    assert math.isclose(t95(100), 1.984, abs_tol=5e-4)
