"""Replica time, GPU-hours, cost and energy: integrals of timeseries.parquet.

Kept apart from the request metrics because every resource number comes from
one integration rule, and that rule must be the same for the summary, the
report and the comparison.

Integration rule (right-endpoint, "since the previous sample"): the sample at
``t_i`` stands for the ``w_i = t_i - t_{i-1}`` seconds before it; the first
sample stands for ``min(t_0, sample_interval_s)`` seconds (0 when the first
sample is taken at t = 0). A run that records its window (``window_s`` in its metadata,
``Scenario.window_s``: [0, duration_s + drain_s] on every backend) is integrated over exactly that
window: its first sample stands for the time since 0 (a wall-clock loop takes it a few ms late), and
what a wall-clock run sampled after the window's end is clipped. This is the convention the rate columns
(``gpu_util_mean``, ``offered_rps``, ``completed_rps``) already use, so replica
counts and busy fractions are weighted alike. A series sampled at 0, 5, ...,
600 s therefore covers exactly 600 s.

Billed replicas are the pods that hold GPUs: ready + pending (cold start:
image pull and model load keep the GPU allocated) + terminating (the grace
period still holds the GPU) + standby (warm buffer pods and slept replicas hold
their GPUs while serving nothing). On a real cluster a pending pod that is not yet
scheduled holds no GPU; that over-count lasts only until scheduling (with node pools,
summary.json's ``node_pools`` bills the nodes themselves, empty ones included).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypeAlias

import numpy as np
import pandas as pd
import pyarrow as pa

from scalearena.contracts.records import TIMESERIES_COLUMNS

# Share of TDP a GPU draws when it holds a model but computes nothing (H100/A100
# measured idle with weights loaded: roughly 25-35 % of TDP).
IDLE_POWER_FRACTION = 0.30
DEFAULT_VARIANT_COST = 10.0  # variantCost default of WVA when meta lacks the variant


TimeseriesColumns: TypeAlias = dict[str, np.ndarray]
Timeseries: TypeAlias = pd.DataFrame | pa.Table | TimeseriesColumns | None


def timeseries_columns(ts: Timeseries) -> TimeseriesColumns:
    """A run's timeseries as one numpy array per column of ``TIMESERIES_COLUMNS`` (a column it lacks:
    all null), the values ``to_pandas`` gives (strings and nulls as objects, numbers with a null as
    float NaN). What every summary of the timeseries reads: one conversion, then numpy (to_pandas
    and pandas' per-column overhead on a paper run's 120 rows cost ~1.5 ms of CPU at the end of the
    run). A dict of columns is taken as it is."""
    if isinstance(ts, dict):
        return ts
    if ts is None:
        return {c: np.empty(0, dtype=object) for c in TIMESERIES_COLUMNS}
    if isinstance(ts, pa.Table):
        have = {c: ts.column(c).to_numpy(zero_copy_only=False) for c in ts.column_names}
    else:
        have = {str(c): np.asarray(ts[c]) for c in ts}
    rows = len(ts)
    return {**have, **{c: np.full(rows, None, dtype=object) for c in TIMESERIES_COLUMNS if c not in have}}


def as_float(values: np.ndarray) -> np.ndarray:
    """A column as float64, null (None or NaN) as NaN (``pd.to_numeric`` of a number column)."""
    return np.asarray(values, dtype=float)


def sample_weights(t_s: np.ndarray, sample_interval_s: float, window_s: float | None = None) -> np.ndarray:
    """Seconds each (sorted, unique) sample time stands for (right-endpoint rule), inside the run's window
    ``[0, window_s]`` when one is given: the first sample stands for the time since 0, a sample taken after
    the window's end (a wall-clock run whose load overstays it) only for the part of its interval before
    the end, the ones after it for nothing. Without a window (runs written before it was recorded) the
    first sample stands for at most one ``sample_interval_s``."""
    t = np.asarray(t_s, dtype=float)
    if t.size == 0:
        return t
    if window_s is None:
        first = min(max(t[0], 0.0), float(sample_interval_s))
        return np.diff(t, prepend=t[0] - first)
    # the window starts at 0: the first sample stands for everything before it (a wall-clock loop takes it
    # some ms past one interval; standing for one interval only would lose those ms from every run)
    clipped = np.minimum(np.maximum(t, 0.0), float(window_s))
    return np.diff(clipped, prepend=0.0)


def meta_window(meta: dict[str, Any]) -> float | None:
    """The run's window end from its metadata (harness/config/scenario.py ``Scenario.window_s``); None for a run
    written before the window was recorded (integrated over every sample, as it was then)."""
    w = meta.get("window_s")
    return float(w) if isinstance(w, int | float) and w > 0 else None


@dataclass
class VariantUsage:
    """Integrated resource use of one variant over the run."""

    name: str
    gpus_per_replica: int
    cost_rate: float  # variantCost per replica-hour
    tdp_w: float | None
    price_per_gpu_hour: float | None
    ready_replica_s: float = 0.0
    billed_replica_s: float = 0.0
    busy_gpu_s: float = 0.0  # ready GPU-seconds x busy fraction (unknown fraction counts as busy)
    util_known_gpu_s: float = 0.0  # ready GPU-seconds whose busy fraction was measured
    ready_mean: float = 0.0
    ready_max: int = 0
    billed_mean: float = 0.0
    billed_max: int = 0

    @property
    def replica_hours(self) -> float:
        return self.billed_replica_s / 3600.0

    @property
    def gpu_hours(self) -> float:
        return self.replica_hours * self.gpus_per_replica

    @property
    def cost(self) -> float:
        return self.replica_hours * self.cost_rate

    @property
    def cost_usd(self) -> float | None:
        return None if self.price_per_gpu_hour is None else self.gpu_hours * self.price_per_gpu_hour

    @property
    def energy_kwh(self) -> float | None:
        """Nameplate energy: every billed GPU at TDP for the whole time."""
        return None if self.tdp_w is None else self.tdp_w * self.gpu_hours / 1000.0

    @property
    def energy_busy_kwh(self) -> float | None:
        return None if self.tdp_w is None else self.tdp_w * self.busy_gpu_s / 3600.0 / 1000.0

    @property
    def energy_idle_kwh(self) -> float | None:
        """Idle GPU time (billed minus busy) at IDLE_POWER_FRACTION of TDP."""
        if self.tdp_w is None:
            return None
        idle_gpu_s = max(self.billed_replica_s * self.gpus_per_replica - self.busy_gpu_s, 0.0)
        return IDLE_POWER_FRACTION * self.tdp_w * idle_gpu_s / 3600.0 / 1000.0


@dataclass
class Usage:
    variants: dict[str, VariantUsage] = field(default_factory=dict)
    covered_s: float = 0.0  # seconds the timeseries covers
    ready_mean: float = 0.0
    ready_max: int = 0
    billed_mean: float = 0.0
    billed_max: int = 0


def _variant_meta(meta: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for v in meta.get("variants") or []:
        if isinstance(v, dict) and "name" in v:
            out[str(v["name"])] = v
    return out


def _opt_float(x: Any) -> float | None:
    if x is None:
        return None
    try:
        f = float(x)
    except (TypeError, ValueError):
        return None
    return None if np.isnan(f) else f


def _weighted_mean(values: np.ndarray, w: np.ndarray) -> float:
    if values.size == 0:
        return 0.0
    total = float(w.sum())
    if total <= 0:  # a single sample at t = 0: nothing to weigh by
        return float(values.mean())
    return float((values * w).sum() / total)


def _rows(ts: TimeseriesColumns) -> dict[str, np.ndarray]:
    """The columns ``integrate`` reads, as arrays in row order (billed and util derived, as before in pandas:
    the same elementwise values, so the same sums)."""
    ready = ts["ready_replicas"]
    standby = as_float(ts["standby_replicas"])
    standby = np.where(np.isnan(standby), 0.0, standby).astype(int)  # null: none on standby
    billed = ready + ts["pending_replicas"] + ts["terminating_replicas"] + standby
    util = as_float(ts["gpu_util_mean"])
    known = ~np.isnan(util)
    return {"ready": ready.astype(float), "billed": billed.astype(float), "util_known": known,
            "util": np.clip(np.where(known, util, 1.0), 0.0, 1.0)}


def integrate(ts: Timeseries, meta: dict[str, Any]) -> Usage:
    """Integrate a run's timeseries into per-variant and total resource use.

    numpy over the columns, not pandas group-bys (4 ms of a 0.12 s paper run went to pandas' per-call
    overhead on 120 rows): rows of a variant in row order, sample times sorted, the same products and
    sums as the pandas version computed, so the same floats."""
    usage = Usage()
    vmeta = _variant_meta(meta)
    ts = timeseries_columns(ts)
    if not len(ts["t_s"]):
        return usage
    interval = float(meta.get("sample_interval_s") or 0.0)
    times, at = np.unique(as_float(ts["t_s"]), return_inverse=True)  # sorted sample times; each row's
    w = sample_weights(times, interval, meta_window(meta))
    usage.covered_s = float(w.sum())
    rows = _rows(ts)
    counted = (w > 0.0) | (times <= times[0])  # sample times the window counts (maxima read only these)
    inside = counted[at]
    row_w = w[at]
    variant = ts["variant"]
    for name in sorted({v for v in variant.tolist() if v is not None and v == v}):  # groupby: sorted, nulls dropped
        vm = vmeta.get(str(name), {})
        gpus = int(vm.get("gpus_per_replica") or 1)
        vu = VariantUsage(
            name=str(name),
            gpus_per_replica=gpus,
            cost_rate=float(vm.get("cost", DEFAULT_VARIANT_COST)),
            tdp_w=_opt_float(vm.get("tdp_w")),
            price_per_gpu_hour=_opt_float(vm.get("price_per_hour")),
        )
        mine = (variant == name) & inside
        gw, ready, billed = row_w[mine], rows["ready"][mine], rows["billed"][mine]
        vu.ready_replica_s = float((ready * gw).sum())
        vu.billed_replica_s = float((billed * gw).sum())
        vu.busy_gpu_s = float((ready * gpus * gw * rows["util"][mine]).sum())
        vu.util_known_gpu_s = float((ready * gpus * gw * rows["util_known"][mine]).sum())
        vu.ready_mean = _weighted_mean(ready, gw)
        vu.ready_max = int(ready.max())
        vu.billed_mean = _weighted_mean(billed, gw)
        vu.billed_max = int(billed.max())
        usage.variants[vu.name] = vu

    per_t = {k: np.bincount(at, weights=np.nan_to_num(rows[k]), minlength=len(times)) for k in ("ready", "billed")}
    usage.ready_mean = _weighted_mean(per_t["ready"], w)
    usage.ready_max = int(per_t["ready"][counted].max())
    usage.billed_mean = _weighted_mean(per_t["billed"], w)
    usage.billed_max = int(per_t["billed"][counted].max())
    return usage


def sum_or_none(values: list[float | None]) -> float | None:
    """Sum where every part is known; None (JSON null) as soon as one is not."""
    if any(v is None for v in values):
        return None
    return float(sum(v for v in values if v is not None))
