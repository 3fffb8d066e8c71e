"""A static baseline someone would deploy: ``static-peak`` and ``static-mean`` sized by the simulator.

``static`` at a variant's initial count (often 1 replica) is a strawman: it loses most requests on any
workload that needs more, and a verdict against it says little. A fair fixed count is the one a
platform team would provision: the fewest replicas that meet the scenario's SLO (its attainment
target, else the verdict's 0.95) at the workload's **peak** rate (the busiest ``PEAK_WINDOW_S`` of the
run's arrivals: what a fixed fleet must absorb) or at its **mean** rate (arrivals / ``duration_s``:
the cheapest count that serves the average, and queues the peaks).

How it is found, per model, before the run (controllers/static.py ``size``), on every backend:

* the rate is read from the scenario's own request stream (generated once, streamed);
* a probe is a simulated run of the scenario's cluster, warm (no cold start), with no faults, under a
  steady Poisson stream at that rate for ``probe_s`` (at least ``MIN_PROBE_S`` and ``MIN_PROBE_REQUESTS``
  requests, at most ``MAX_PROBE_S``), each request drawn from the scenario's own requests of that model
  (prompt and output lengths, prefix groups and hashes), seeded by the scenario's seed;
* an aggregated model (variants of role ``both``) tries each variant alone, N replicas found by bisection
  on [1, max_replicas] (attainment rises with N); the cheapest N x variantCost wins, fewer GPUs on a tie;
* a P/D model tries each prefill count p from 1 with the fewest decode replicas d that meet the target
  (bisection), keeping the cheapest pair, and stops once p prefill replicas alone cost more than it;
* where even the maximum misses the target, the maximum is used and the derived setting says so.

Every count and how it was found is recorded as a ``derived_setting`` event of the run (the run page
shows them). Written here because it is a search over this project's own simulator; no library does it.
"""
from __future__ import annotations

import functools
import random
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from scalearena.reports.verdict import target_of
from scalearena.workloads.base import RequestSpec

PEAK_WINDOW_S = 60.0  # the window of the peak rate: a minute, the scale autoscalers react on
MIN_PROBE_S, MAX_PROBE_S, MIN_PROBE_REQUESTS = 300.0, 3600.0, 1000
RESERVOIR = 4000  # requests kept per model to draw the probe's sizes from


@dataclass
class ModelLoad:
    """One model's arrivals as the sizing reads them: the rates and a sample of its requests."""

    count: int = 0
    peak: int = 0  # most arrivals in any PEAK_WINDOW_S
    sample: list[RequestSpec] | None = None

    def rate(self, size: str, duration_s: float) -> float:
        return self.peak / PEAK_WINDOW_S if size == "peak" else self.count / duration_s


def read_load(requests: Iterable[RequestSpec], seed: int) -> dict[str, ModelLoad]:
    """Per model: arrivals, the busiest window's count and a uniform sample (reservoir) of its requests."""
    rng = random.Random(f"static-sizing-sample-{seed}")
    loads: dict[str, ModelLoad] = {}
    windows: dict[str, deque[float]] = {}
    for r in requests:
        load = loads.setdefault(r.model, ModelLoad(sample=[]))
        win = windows.setdefault(r.model, deque())
        win.append(r.arrival_s)
        while win[0] <= r.arrival_s - PEAK_WINDOW_S:
            win.popleft()
        load.peak = max(load.peak, len(win))
        load.count += 1
        assert load.sample is not None
        if len(load.sample) < RESERVOIR:
            load.sample.append(r)
        elif (j := rng.randrange(load.count)) < RESERVOIR:
            load.sample[j] = r
    return loads


def probe_requests(sample: list[RequestSpec], rate: float, probe_s: float, seed: int) -> list[RequestSpec]:
    """A steady Poisson stream at ``rate`` for ``probe_s``, each request a draw from ``sample``."""
    rng = random.Random(f"static-sizing-probe-{seed}-{rate:.6f}")
    out: list[RequestSpec] = []
    t = rng.expovariate(rate)
    while t < probe_s:
        out.append(rng.choice(sample)._replace(request_id=len(out), arrival_s=t))
        t += rng.expovariate(rate)
    return out


def probe_length(rate: float) -> float:
    return min(MAX_PROBE_S, max(MIN_PROBE_S, MIN_PROBE_REQUESTS / rate))


def simulate(sc: Any, counts: dict[str, int], requests: list[RequestSpec], probe_s: float) -> float:
    """SLO attainment of ``requests`` on ``sc``'s cluster at fixed ``counts`` (every other variant at 0), warm."""
    from scalearena.controllers.static import StaticConfig
    from scalearena.harness.sim.backend import scratch_run

    variants = [v.model_copy(update={"min_replicas": (n := counts.get(v.name, 0)), "max_replicas": max(n, 1),
                                     "initial_replicas": n}) for v in sc.cluster.variants]
    probe = sc.model_copy(update={
        "cluster": sc.cluster.model_copy(update={"variants": variants, "warm_start": True}),
        "duration_s": probe_s, "drain_s": float(sc.client.timeout_s), "faults": [], "autoscalers": []})
    cfg = StaticConfig(per_variant={v.name: counts.get(v.name, 0) for v in variants})
    summary, _ = scratch_run(probe, cfg, requests, {"slo": sc.slo.model_dump(mode="json"),
                                                    "window_s": probe.window_s, "duration_s": probe_s})
    return float(summary["slo_attainment"]["both"])


def _meets(sc: Any, requests: list[RequestSpec], probe_s: float, target: float, counts: dict[str, int]) -> bool:
    return simulate(sc, counts, requests, probe_s) >= target


def fewest(meets: Callable[[int], bool], hi: int) -> int | None:
    """The smallest n in [1, hi] with ``meets(n)`` (monotone), or None when ``meets(hi)`` is false."""
    if not meets(hi):
        return None
    lo = 1
    while lo < hi:
        mid = (lo + hi) // 2
        if meets(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


@dataclass(frozen=True)
class Sizing:
    counts: dict[str, int]  # replicas per variant of the model (0: not used)
    cost: float  # sum of N x variantCost
    met: bool  # False: the maximum, which misses the target
    probes: int  # simulated runs it took


def size_model(variants: list[Any], meets: Callable[[dict[str, int]], bool]) -> Sizing:
    """The cheapest fixed counts of one model's variants meeting the target (see the module docstring)."""
    calls = 0

    def check(counts: dict[str, int]) -> bool:
        nonlocal calls
        calls += 1
        return meets(counts)

    def counts_of(name: str, fixed: dict[str, int] | None = None) -> Callable[[int], bool]:
        """The test of ``name`` at n replicas, the ``fixed`` counts beside it."""
        return lambda n: check({**(fixed or {}), name: n})

    found: list[tuple[float, int, dict[str, int]]] = []  # (cost, GPUs, counts) of each candidate that meets it

    by = {v.name: v for v in variants}

    def keep(counts: dict[str, int]) -> None:
        found.append((sum(n * by[k].cost for k, n in counts.items()),
                      sum(n * by[k].gpus_per_replica for k, n in counts.items()), counts))

    for v in (v for v in variants if v.role == "both"):
        if (n := fewest(counts_of(v.name), v.max_replicas)) is not None:
            keep({v.name: n})
    for p in (v for v in variants if v.role == "prefill"):
        for d in (v for v in variants if v.role == "decode"):
            for k in range(1, p.max_replicas + 1):
                if found and k * p.cost >= min(c[0] for c in found):
                    break  # k prefill replicas alone cost more than the best found
                if (m := fewest(counts_of(d.name, {p.name: k}), d.max_replicas)) is not None:
                    keep({p.name: k, d.name: m})
    if not found:  # nothing meets the target: every variant at its maximum
        return Sizing({v.name: v.max_replicas for v in variants}, sum(v.max_replicas * v.cost for v in variants),
                      False, calls)
    cost, _, counts = min(found, key=lambda c: (c[0], c[1]))
    return Sizing(counts, cost, True, calls)


def size_static(sc: Any, cfg: Any) -> tuple[Any, dict[str, str]]:
    """``cfg`` (a static config with ``size``) with ``per_variant`` found for ``sc``, and how, per variant."""
    from scalearena.workloads.generate import iter_requests

    target = target_of(sc.attainment_target)
    loads = read_load(iter_requests(sc), sc.seed)
    per_variant: dict[str, int] = {v.name: 0 for v in sc.cluster.variants}
    derived: dict[str, str] = {}
    for model, load in loads.items():
        rate = load.rate(cfg.size, sc.duration_s)
        variants = [v for v in sc.cluster.variants if v.model == model]
        probe_s = probe_length(rate)
        assert load.sample
        reqs = probe_requests(load.sample, rate, probe_s, sc.seed)
        sizing = size_model(variants, functools.partial(_meets, sc, reqs, probe_s, target))
        per_variant.update(sizing.counts)
        what = f"the {cfg.size} rate {rate:.3g} req/s" + (f" (busiest {PEAK_WINDOW_S:.0f} s)" if cfg.size == "peak"
                                                            else f" ({load.count} requests / {sc.duration_s:g} s)")
        pct = f"{target * 100:g} %"
        how = (f"fewest meeting {pct} SLO attainment at {what}" if sizing.met
               else f"max_replicas: no count meets {pct} SLO attainment at {what}")
        for name, n in sizing.counts.items():
            derived[f"replicas[{name}]"] = (f"{n}: {how}; simulated, warm, {probe_s:.0f} s Poisson probe, "
                                           f"{sizing.probes} probes")
    return cfg.model_copy(update={"per_variant": per_variant, "replicas": 0}), derived
