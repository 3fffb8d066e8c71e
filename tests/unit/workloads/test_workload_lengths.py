"""Token-length distributions: bounds, and means / medians worked out by hand."""
from __future__ import annotations

from itertools import islice
from pathlib import Path

import numpy as np
import pytest

from scalearena.contracts.errors import UserError
from scalearena.workloads.lengths import empirical_column, token_lengths
from scalearena.workloads.spec import (
    BoundedNormalTokens,
    EmpiricalTokens,
    FixedTokens,
    LognormalTokens,
    UniformTokens,
)

AZURE = Path(__file__).resolve().parents[3] / "workloads" / "data" / "azure_code_2023_sample.csv"


def draw(spec, n: int = 100_000, seed: int = 3) -> np.ndarray:
    return np.array(list(islice(token_lengths(spec, np.random.default_rng(seed)), n)))


def test_fixed() -> None:
    assert set(draw(FixedTokens(kind="fixed", value=128), 1000).tolist()) == {128}


def test_uniform_inclusive_bounds() -> None:
    v = draw(UniformTokens(kind="uniform", min=5, max=7), 30_000)
    assert set(v.tolist()) == {5, 6, 7}
    # each 1/3: sd of a share sqrt(2/9 / 3e4) = 0.0027; allow 0.015
    for k in (5, 6, 7):
        assert abs((v == k).mean() - 1 / 3) < 0.015


def test_bounded_normal_paper_settings_stay_in_bounds() -> None:
    v = draw(BoundedNormalTokens(kind="bounded_normal", min=10, max=8192, mean=4096, sd=2048))
    assert v.min() >= 10 and v.max() <= 8192
    # bounds at z = -1.995 and +2.0, nearly symmetric: clipped mean
    # 10*0.02301 + 8192*0.02275 + 4096*0.95424 + 2048*(0.05475-0.05399) = 4096.8; sd ~1900/sqrt(1e5) = 6
    assert abs(v.mean() - 4096.8) < 30
    assert v.dtype.kind == "i"


def test_bounded_normal_one_sided_clip_mean() -> None:
    v = draw(BoundedNormalTokens(kind="bounded_normal", min=1, max=100, mean=100, sd=50))
    # a = (1-100)/50 = -1.98, b = 0. E[clip X] = L*Phi(a) + U*(1-Phi(b)) + mu*(Phi(b)-Phi(a)) + sd*(phi(a)-phi(b))
    #  = 1*0.02385 + 100*0.5 + 100*(0.5-0.02385) + 50*(0.05618-0.39894) = 80.50
    # clipped sd ~ 22, se ~ 0.07 at n = 1e5; rounding is symmetric away from the atoms; allow 0.5
    assert abs(v.mean() - 80.50) < 0.5
    # half the mass sits at the upper bound, plus values in [99.5, 100) that round to it:
    # 0.5 + phi(0)*0.5/50 = 0.504 (sd of a share 0.0016; allow 0.01)
    assert abs((v == 100).mean() - 0.504) < 0.01


def test_lognormal_median_and_bounds() -> None:
    v = draw(LognormalTokens(kind="lognormal", median=100, sigma=1.0, min=2, max=5000))
    # se of the median = 1 / (2 f(m) sqrt(n)), f(m) = 1/(100*sqrt(2 pi)) = 0.00399 -> 0.4 tokens; allow 2
    assert abs(np.median(v) - 100) <= 2
    assert v.min() >= 2 and v.max() <= 5000


def test_empirical_samples_only_column_values(tmp_path: Path) -> None:
    f = tmp_path / "lens.csv"
    f.write_text("a,len\nx,1\ny,2\nz,3\nw,10\n")
    v = draw(EmpiricalTokens(kind="empirical", path=str(f), column="len"), 40_000)
    assert set(v.tolist()) == {1, 2, 3, 10}
    # each value 1/4: sd of a share 0.0022; allow 0.015
    assert abs((v == 10).mean() - 0.25) < 0.015


def test_empirical_from_the_shipped_azure_trace() -> None:
    v = draw(EmpiricalTokens(kind="empirical", path=str(AZURE), column="ContextTokens"))
    # the column's mean is 2047.85 and sd 1974 (pandas describe of the file); se 1974/sqrt(1e5) = 6.2; allow 30
    assert abs(v.mean() - 2047.85) < 30
    assert v.min() >= 3 and v.max() <= 7437


def test_empirical_bad_cell_names_line_and_column(tmp_path: Path) -> None:
    f = tmp_path / "bad.csv"
    f.write_text("len\n5\n-3\n")
    empirical_column.cache_clear()
    with pytest.raises(UserError) as e:
        empirical_column(str(f), "len")
    assert f"{f}:3" in str(e.value) and "'len'" in str(e.value) and "negative" in str(e.value)


def test_empirical_missing_column(tmp_path: Path) -> None:
    f = tmp_path / "nocol.csv"
    f.write_text("a\n5\n")
    with pytest.raises(UserError, match="column 'len' not found"):
        empirical_column(str(f), "len")
