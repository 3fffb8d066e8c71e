"""Means with 95 % confidence intervals over seeds for the paper's claims: the one definition in
``scalearena.reports.stats`` (Student-t quantiles from SciPy), re-exported under the paper's names."""
from __future__ import annotations

from scalearena.reports.stats import Estimate, estimate, t_quantile as t95

__all__ = ["Estimate", "estimate", "t95"]
