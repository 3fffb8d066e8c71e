"""Describe a request stream for the report's workload panel.

``offered_rate`` gives offered requests per second over time (what the
clients *sent*, not what was served) and ``token_histogram`` the distribution
of prompt or output lengths. Both accept either the ``RequestSpec`` list of a
workload or a ``requests.parquet`` frame (columns ``arrival_s``,
``input_tokens``, ``output_tokens`` and optionally ``model``), and return tidy
pandas frames that seaborn plots directly.
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, Literal

import numpy as np
import pandas as pd

from scalearena.workloads.base import RequestSpec


def _frame(requests: Iterable[RequestSpec] | pd.DataFrame) -> pd.DataFrame:
    if isinstance(requests, pd.DataFrame):
        return requests
    rows = [(r.arrival_s, r.model, r.input_tokens, r.output_tokens) for r in requests]
    return pd.DataFrame(rows, columns=["arrival_s", "model", "input_tokens", "output_tokens"])


def offered_rate(
    requests: Iterable[RequestSpec] | pd.DataFrame,
    bin_s: float,
    duration_s: float | None = None,
    by_model: bool = False,
) -> pd.DataFrame:
    """Offered load: requests sent per second in consecutive bins of ``bin_s`` seconds.

    Bin ``k`` covers ``[k * bin_s, (k + 1) * bin_s)`` and its ``rps`` is the
    number of arrivals in it divided by ``bin_s``. Bins run from 0 to
    ``duration_s`` (default: through the bin holding the last arrival); a last
    bin cut short by ``duration_s`` is divided by its own length, so a steady
    rate does not seem to dip at the end. Empty bins are present with rps 0.

    Returns columns ``t_s`` (bin start), ``rps``, and ``model`` when
    ``by_model`` (one row per model per bin).
    """
    if bin_s <= 0:
        raise ValueError("bin_s must be positive")
    df = _frame(requests)
    arrivals = df["arrival_s"].to_numpy(dtype=float)
    if duration_s is not None:
        n_bins = max(1, math.ceil(duration_s / bin_s))
        starts = np.arange(n_bins) * bin_s
        widths = np.minimum(starts + bin_s, duration_s) - starts
    else:
        n_bins = int(arrivals.max() // bin_s) + 1 if len(arrivals) else 1
        starts = np.arange(n_bins) * bin_s
        widths = np.full(n_bins, bin_s)

    def rates(values: np.ndarray) -> np.ndarray:
        idx = np.floor(values / bin_s).astype(np.int64)
        idx = idx[(idx >= 0) & (idx < n_bins)]
        return np.bincount(idx, minlength=n_bins) / widths

    if not by_model:
        return pd.DataFrame({"t_s": starts, "rps": rates(arrivals)})
    parts = []
    models = df["model"].to_numpy() if "model" in df else np.full(len(df), "")
    for m in sorted(set(models.tolist())):
        parts.append(pd.DataFrame({"t_s": starts, "rps": rates(arrivals[models == m]), "model": m}))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=["t_s", "rps", "model"])


def token_histogram(
    requests: Iterable[RequestSpec] | pd.DataFrame,
    which: Literal["input", "output"] = "input",
    bins: int | Any = 50,
) -> pd.DataFrame:
    """Histogram of prompt (``which="input"``) or output lengths, tokens.

    ``bins`` is a number of equal-width bins between the smallest and largest
    length, or explicit edges. Returns ``left``, ``right`` (bin edges; the
    last bin includes its right edge, as numpy does), ``count`` and
    ``fraction`` (count / number of requests).
    """
    df = _frame(requests)
    values = df[f"{which}_tokens"].to_numpy(dtype=float)
    if len(values) == 0:
        return pd.DataFrame(columns=["left", "right", "count", "fraction"])
    counts, edges = np.histogram(values, bins=bins)
    return pd.DataFrame(
        {"left": edges[:-1], "right": edges[1:], "count": counts, "fraction": counts / len(values)}
    )


def summarize(requests: Iterable[RequestSpec] | pd.DataFrame, duration_s: float) -> dict[str, float]:
    """Headline numbers of a workload: count, mean offered rps, mean/p50/p99 token lengths."""
    df = _frame(requests)
    out: dict[str, float] = {"requests": float(len(df)), "mean_rps": len(df) / duration_s}
    for col in ("input_tokens", "output_tokens"):
        v = df[col].to_numpy(dtype=float)
        out[f"{col}_mean"] = float(v.mean()) if len(v) else math.nan
        out[f"{col}_p50"] = float(np.percentile(v, 50)) if len(v) else math.nan
        out[f"{col}_p99"] = float(np.percentile(v, 99)) if len(v) else math.nan
    return out
