"""Arrival processes: each turns a spec from ``spec.py`` into a stream of send times.

Every generator yields non-decreasing times in ``[0, duration_s)``, as lists
of at most ``CHUNK`` (request generation reads a chunk at a time:
``arrival_chunks``; ``arrival_times`` is the same stream one time at a time),
and draws its randomness only from the ``numpy.random.Generator`` it is handed
(the workload's *arrival* stream), so changing a token-length distribution
never moves an arrival. Random draws are made in fixed-size chunks: the
sequence a seed produces does not depend on how far a consumer reads, and a
10-million request run never holds more than one chunk of draws.

Non-homogeneous processes use the exact method that suits their rate shape:
piecewise-constant rates (stepped, flash crowd, on/off) restart a homogeneous
Poisson process in each piece (memorylessness makes this exact), the linear
ramp maps a unit-rate process through the inverse of its integrated rate
(time rescaling), and the diurnal sine uses Lewis-Shedler thinning.
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator

import numpy as np

from scalearena.workloads.spec import (
    ConstantArrivals,
    DiurnalArrivals,
    FlashCrowdArrivals,
    GammaArrivals,
    OnOffArrivals,
    PoissonArrivals,
    RampArrivals,
    SteppedArrivals,
)

CHUNK = 4096  # draws per batch; fixed so the sequence does not depend on the reader


Chunks = Iterator[list[float]]  # arrival times, a list of at most CHUNK at a time


def _chunks(draw: Callable[[int], np.ndarray]) -> Iterator[float]:
    """Endless stream of single draws, fetched ``CHUNK`` at a time."""
    while True:
        yield from draw(CHUNK).tolist()


def _batched(times: Iterator[float]) -> Chunks:
    """Times computed one at a time (ramp, diurnal) as lists of up to ``CHUNK``."""
    while chunk := list(itertools.islice(times, CHUNK)):
        yield chunk


def _renewal(draw: Callable[[int], np.ndarray], t0: float, t1: float) -> Chunks:
    """Arrivals t0 + g1, t0 + g1 + g2, ... below ``t1`` for gaps drawn ``CHUNK`` at a time. numpy's
    cumsum adds in order, one float addition per gap as ``t += gap`` does, so the times are the very
    floats of that loop; the gaps are >= 0, so the first time at or after ``t1`` is a binary search."""
    t = t0
    while True:
        times = np.cumsum(np.concatenate(([t], draw(CHUNK))))[1:]
        end = int(np.searchsorted(times, t1))
        if end:
            yield times[:end].tolist()
        if end < CHUNK:
            return
        t = float(times[-1])


def _poisson_segment(rng: np.random.Generator, t0: float, t1: float, rate: float) -> Chunks:
    """Homogeneous Poisson arrivals in ``[t0, t1)``."""
    if rate <= 0 or t1 <= t0:
        return iter(())
    return _renewal(lambda n: rng.exponential(1.0 / rate, n), t0, t1)


def _even_segment(t0: float, t1: float, rate: float) -> Chunks:
    """Evenly spaced arrivals ``t0 + k / rate`` in ``[t0, t1)``, starting at ``t0`` (numpy's
    ``t0 + k / rate`` per k is the same float as Python's; the times never decrease)."""
    if rate <= 0:
        return
    k = 0
    while True:
        times = t0 + np.arange(k, k + CHUNK, dtype=np.float64) / rate
        end = int(np.searchsorted(times, t1))
        if end:
            yield times[:end].tolist()
        if end < CHUNK:
            return
        k += CHUNK


def _piecewise(rng: np.random.Generator, pieces: list[tuple[float, float, float]], poisson: bool) -> Chunks:
    for t0, t1, rate in pieces:
        yield from (_poisson_segment(rng, t0, t1, rate) if poisson else _even_segment(t0, t1, rate))


def constant(spec: ConstantArrivals, duration_s: float, rng: np.random.Generator) -> Chunks:
    return _even_segment(0.0, duration_s, spec.rate_rps)


def poisson(spec: PoissonArrivals, duration_s: float, rng: np.random.Generator) -> Chunks:
    return _poisson_segment(rng, 0.0, duration_s, spec.rate_rps)


def stepped_pieces(spec: SteppedArrivals, duration_s: float) -> list[tuple[float, float, float]]:
    """``(start, end, rate)`` per step, clipped to the run; the last step runs to the end."""
    pieces: list[tuple[float, float, float]] = []
    t = 0.0
    for i, step in enumerate(spec.steps):
        last = i == len(spec.steps) - 1
        end = duration_s if last else min(t + step.duration_s, duration_s)
        if end > t:
            pieces.append((t, end, step.rate_rps))
        t = end
        if t >= duration_s:
            break
    return pieces


def stepped(spec: SteppedArrivals, duration_s: float, rng: np.random.Generator) -> Chunks:
    return _piecewise(rng, stepped_pieces(spec, duration_s), spec.poisson)


def flash_crowd(spec: FlashCrowdArrivals, duration_s: float, rng: np.random.Generator) -> Chunks:
    s, e = min(spec.start_s, duration_s), min(spec.start_s + spec.duration_s, duration_s)
    pieces = [(0.0, s, spec.base_rps), (s, e, spec.base_rps * spec.factor), (e, duration_s, spec.base_rps)]
    return _piecewise(rng, pieces, poisson=True)


def ramp_inverse(spec: RampArrivals, duration_s: float) -> Callable[[float], float]:
    """Inverse of the integrated rate Lambda(t) = a t + b t^2 / 2 (then flat at end_rps).

    Returns ``math.inf`` where Lambda never reaches the argument.
    """
    ramp = spec.ramp_s if spec.ramp_s is not None else duration_s
    a, b = spec.start_rps, (spec.end_rps - spec.start_rps) / ramp
    at_ramp_end = a * ramp + b * ramp * ramp / 2

    def inverse(x: float) -> float:
        if x <= 0:
            return 0.0
        if x <= at_ramp_end:
            # root of (b/2) t^2 + a t - x = 0 in the form stable for b -> 0
            return 2 * x / (a + math.sqrt(max(a * a + 2 * b * x, 0.0)))
        return ramp + (x - at_ramp_end) / spec.end_rps if spec.end_rps > 0 else math.inf

    return inverse


def ramp(spec: RampArrivals, duration_s: float, rng: np.random.Generator) -> Chunks:
    return _batched(_ramp_times(spec, duration_s, rng))


def _ramp_times(spec: RampArrivals, duration_s: float, rng: np.random.Generator) -> Iterator[float]:
    inverse = ramp_inverse(spec, duration_s)
    if spec.poisson:
        x = 0.0
        for gap in _chunks(lambda n: rng.exponential(1.0, n)):
            x += gap
            if (t := inverse(x)) >= duration_s:
                return
            yield t
    else:
        k = 0
        while (t := inverse(float(k))) < duration_s:
            if k > 0 or spec.start_rps > 0:  # no arrival at t=0 when the rate starts at zero
                yield t
            k += 1


def gamma(spec: GammaArrivals, duration_s: float, rng: np.random.Generator) -> Chunks:
    # shape k = 1/cv^2 gives inter-arrival CV 1/sqrt(k) = cv; scale 1/(rate k) gives mean 1/rate
    shape = 1.0 / (spec.cv * spec.cv)
    scale = 1.0 / (spec.rate_rps * shape)
    return _renewal(lambda n: rng.gamma(shape, scale, n), 0.0, duration_s)


def onoff(spec: OnOffArrivals, duration_s: float, rng: np.random.Generator) -> Chunks:
    """Two-state MMPP. The start state is drawn from the stationary distribution.

    The modulating chain gets its own child generator so that burst timing does
    not depend on how many arrivals a burst held.
    """
    chain, arrivals = rng.spawn(2)
    on = chain.random() < spec.mean_on_s / (spec.mean_on_s + spec.mean_off_s)
    t = 0.0
    while t < duration_s:
        length = chain.exponential(spec.mean_on_s if on else spec.mean_off_s)
        end = min(t + length, duration_s)
        yield from _poisson_segment(arrivals, t, end, spec.on_rate_rps if on else spec.off_rate_rps)
        t, on = end, not on


def diurnal(spec: DiurnalArrivals, duration_s: float, rng: np.random.Generator) -> Chunks:
    return _batched(_diurnal_times(spec, duration_s, rng))


def _diurnal_times(spec: DiurnalArrivals, duration_s: float, rng: np.random.Generator) -> Iterator[float]:
    peak = spec.mean_rps + spec.amplitude_rps
    omega = 2 * math.pi / spec.period_s
    t = 0.0
    gaps = _chunks(lambda n: rng.exponential(1.0 / peak, n))
    accept = _chunks(lambda n: rng.random(n))
    for gap, u in zip(gaps, accept, strict=False):
        t += gap
        if t >= duration_s:
            return
        rate = spec.mean_rps + spec.amplitude_rps * math.sin(omega * (t + spec.phase_s))
        if u * peak < rate:
            yield t


GENERATORS: dict[str, Callable[..., Chunks]] = {
    "constant": constant,
    "poisson": poisson,
    "stepped": stepped,
    "ramp": ramp,
    "gamma": gamma,
    "onoff": onoff,
    "diurnal": diurnal,
    "flash_crowd": flash_crowd,
}


def arrival_chunks(spec: object, duration_s: float, rng: np.random.Generator) -> Chunks:
    """Send times for a synthetic arrival spec, as lists of up to ``CHUNK`` (traces are read by
    ``workloads.traces``)."""
    kind = getattr(spec, "kind", None)
    if kind not in GENERATORS:
        raise ValueError(f"no synthetic generator for arrivals kind {kind!r}")
    return GENERATORS[kind](spec, duration_s, rng)


def arrival_times(spec: object, duration_s: float, rng: np.random.Generator) -> Iterator[float]:
    """``arrival_chunks`` one time at a time."""
    return itertools.chain.from_iterable(arrival_chunks(spec, duration_s, rng))
