"""Means with Student-t confidence intervals over seeds (no SciPy needed)."""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

# Two-sided 95 % Student-t critical values by degrees of freedom (standard tables).
_T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262,
        10: 2.228, 12: 2.179, 15: 2.131, 20: 2.086, 25: 2.060, 30: 2.042}


def t95(df: int) -> float:
    if df <= 0:
        return math.nan
    if df in _T95:
        return _T95[df]
    if df > 30:
        return 1.96
    lower = max(k for k in _T95 if k < df)
    return _T95[lower]  # conservative: the next smaller df has the wider interval


@dataclass(frozen=True)
class Estimate:
    mean: float
    half_width: float  # 95 % CI half width; nan with one sample
    n: int

    @property
    def low(self) -> float:
        return self.mean - self.half_width

    @property
    def high(self) -> float:
        return self.mean + self.half_width

    def fmt(self, spec: str = ".2f") -> str:
        if math.isnan(self.mean):
            return "n/a"
        if self.n < 2 or math.isnan(self.half_width):
            return f"{self.mean:{spec}}"
        return f"{self.mean:{spec}} ± {self.half_width:{spec}}"


def estimate(values: Sequence[float]) -> Estimate:
    xs = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    n = len(xs)
    if n == 0:
        return Estimate(math.nan, math.nan, 0)
    mean = sum(xs) / n
    if n == 1:
        return Estimate(mean, math.nan, 1)
    var = sum((x - mean) ** 2 for x in xs) / (n - 1)
    return Estimate(mean, t95(n - 1) * math.sqrt(var / n), n)
