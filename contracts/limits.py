"""The documented limits on every number a user can hand the harness.

A scenario, trace or ``--set`` override is fuzzed by users and by our own
adversarial suite; an unbounded value (``duration_s: 1e12``,
``scrape_interval_s: 1e-9``, ``min_replicas: 1e5``) passes a plain ``gt=0``
check and then hangs a run or exhausts memory. So every config model inherits
``StrictSpec`` (extra fields refused, NaN and infinities refused) and bounds
its numbers with the constants here; ``docs/reliability.md`` lists them. They
are generous for any experiment this harness is for (a simulated week, ten
thousand requests per second, a day-long replay at a hundred or two, a thousand replicas) and small enough that the
worst accepted scenario still finishes or is refused up front by the
request-count and step-count checks of the scenario.
"""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator

MAX_DURATION_S = 7 * 86400.0  # a simulated week; also the bound on any time span or window
MIN_INTERVAL_S = 0.01  # scrape, sample, control-loop periods: 10 ms (WVA's fast loop is 100 ms)
MAX_RATE_RPS = 10_000.0  # peak arrival rate of one workload
MAX_REQUESTS = 20_000_000  # peak rate x duration, summed over workloads: a day at 230 RPS (memory: constant)
MAX_STEPS = 5_000_000  # duration / interval for every periodic loop (scrape, sample, control period)
MAX_REPLICAS = 1_000  # replicas of one variant
MAX_GPUS_PER_REPLICA = 64
MAX_TOKENS = 1_048_576  # one prompt or one output, and max_model_len (1 Mi tokens)
MAX_BATCH = 65_536  # max_num_seqs, queue lengths, thresholds counted in requests
MAX_KV_BLOCKS = 100_000_000
MAX_FACTOR = 1_000.0  # multipliers (slow cold start, flash crowd, time factor under load)
MAX_COST = 1e9  # cost per replica-hour
MAX_SEED = 2**63 - 1
MAX_SEEDS = 1_000  # seeds one run is repeated with (a suite's seeds:, tune --seeds)
MAX_MAGNITUDE = 2**63  # any other number: beyond this it is a typo or an attack, not a setting
LOOP_FIELDS = ("period_s", "fast_period_s")  # plus every *interval_s: periodic loops (a step each interval)
REFRESH_FIELDS = ("refresh_s",)  # state refreshed lazily when read: a minimum interval, no steps of their own
MIN_REFRESH_S = 0.001  # the router's metric snapshot: 1 ms (a served router polls its engines that often at most)
MAX_YAML_BYTES = 16 * 1024 * 1024  # a scenario or suite file
MAX_YAML_NODES = 1_000_000  # values after alias expansion (a "billion laughs" file is refused)
MAX_YAML_DEPTH = 64  # nesting of mappings and lists


def is_loop(name: str) -> bool:
    """Whether a field named ``name`` is a periodic loop's interval (one step of the run per interval)."""
    return name in LOOP_FIELDS or name.endswith("interval_s")


def loop_intervals(data: Any, prefix: str = "") -> dict[str, float]:
    """Every periodic loop's interval in a dumped config (``model_dump``), by dotted path: the scrape, sample,
    node pools' and each autoscaler's (period, fast period, KEDA polling, planner intervals, ...)."""
    out: dict[str, float] = {}
    items = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, list) else ()
    for k, v in items:
        path = f"{prefix}{k}" if not prefix or prefix.endswith(" ") else f"{prefix}.{k}"
        if isinstance(v, dict | list):
            out.update(loop_intervals(v, path))
        elif isinstance(k, str) and is_loop(k) and isinstance(v, int | float) and not isinstance(v, bool) and v > 0:
            out[path] = float(v)
    return out


def work_problem(peaks: list[float | None], duration_s: float, window_s: float, loops: dict[str, float]) -> str | None:
    """What exceeds the limits of a run's work, derived from several fields each within its own limit: a
    workload's peak rate (flash_crowd base x factor), the requests (peak rate x duration_s, all workloads), and
    each periodic loop's steps over the window (``loop_intervals``)."""
    for i, p in enumerate(peaks):
        if p is not None and p > MAX_RATE_RPS:
            return f"workload {i} peaks at {p:,.0f} requests/s; the limit is {MAX_RATE_RPS:,.0f}"
    requests = sum(p for p in peaks if p is not None) * duration_s
    if requests > MAX_REQUESTS:
        return (f"the workload would send up to {requests:,.0f} requests (peak rate x duration_s); "
                f"the limit is {MAX_REQUESTS:,}")
    for name, interval in loops.items():
        if window_s / interval > MAX_STEPS:
            return (f"{name} {interval:g} s over {window_s:g} s is {window_s / interval:,.0f} steps; "
                    f"the limit is {MAX_STEPS:,}")
    return None


def unit_problem(name: str, value: float) -> str | None:
    """What is wrong with ``value`` for a field named ``name``, judged by the unit its name carries.

    The names say the unit (``*_s``, ``*_ms``, ``*_rps``, ``*replicas*``, ``*factor``), so one rule
    bounds every model, including autoscaler configs added later, without a limit on each field.
    """
    if abs(value) > MAX_MAGNITUDE:
        return f"{value:g} is out of range (at most {MAX_MAGNITUDE:.3g} in magnitude)"
    if name.endswith(("_s", "_seconds")) and abs(value) > MAX_DURATION_S:
        return f"{value:g} s is longer than the limit of {MAX_DURATION_S:g} s (a week)"
    if name.endswith("_ms") and abs(value) > MAX_DURATION_S * 1000:
        return f"{value:g} ms is longer than the limit of {MAX_DURATION_S * 1000:g} ms (a week)"
    if is_loop(name) and 0 < value < MIN_INTERVAL_S:
        return f"{value:g} s is shorter than the limit of {MIN_INTERVAL_S:g} s for a periodic loop"
    if name in REFRESH_FIELDS and 0 < value < MIN_REFRESH_S:
        return f"{value:g} s is shorter than the limit of {MIN_REFRESH_S:g} s for a refresh"
    if name.endswith("_rps") and value > MAX_RATE_RPS:
        return f"{value:g} requests/s exceeds the limit of {MAX_RATE_RPS:g}"
    if "replicas" in name and value > MAX_REPLICAS:
        return f"{value:g} replicas exceeds the limit of {MAX_REPLICAS}"
    if name.endswith("factor") and value > MAX_FACTOR:
        return f"{value:g} exceeds the limit of {MAX_FACTOR:g} for a multiplier"
    return None


def _numbers(value: Any) -> list[float]:
    if isinstance(value, bool):
        return []
    if isinstance(value, int | float):
        return [value]
    if isinstance(value, dict):
        return [v for v in value.values() if isinstance(v, int | float) and not isinstance(v, bool)]
    return []


class StrictSpec(BaseModel):
    """Base of every user-facing config model: unknown keys, non-finite numbers and numbers past the
    documented limits for their unit are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    @model_validator(mode="after")
    def _within_limits(self) -> Any:
        check_limits(self)
        return self


def check_limits(model: BaseModel) -> None:
    """Raise ValueError naming the first field of ``model`` whose number is past its unit's limit."""
    for name in type(model).model_fields:
        if name == "seed":
            continue  # bounded by its own field (MAX_SEED)
        for v in _numbers(getattr(model, name)):
            problem = unit_problem(name, float(v))
            if problem:
                raise ValueError(f"{name}: {problem}")
