"""Arrival processes: exact spacing for deterministic ones, rates and shapes within
statistical tolerances for random ones (each tolerance is justified where it is set;
the seeds are fixed, so the tests are deterministic)."""
from __future__ import annotations

import numpy as np

from scalearena.workloads.arrivals import arrival_times
from scalearena.workloads.spec import (
    ConstantArrivals,
    DiurnalArrivals,
    FlashCrowdArrivals,
    GammaArrivals,
    OnOffArrivals,
    PoissonArrivals,
    RampArrivals,
    RateStep,
    SteppedArrivals,
)


def times(spec, duration_s: float, seed: int = 1) -> np.ndarray:
    return np.array(list(arrival_times(spec, duration_s, np.random.default_rng(seed))))


def count_in(t: np.ndarray, lo: float, hi: float) -> int:
    return int(((t >= lo) & (t < hi)).sum())


def test_constant_is_evenly_spaced_from_zero() -> None:
    t = times(ConstantArrivals(kind="constant", rate_rps=2), 60)
    # 2 rps over [0, 60): 0, 0.5, ..., 59.5 -> 120 arrivals
    assert len(t) == 120
    assert t[0] == 0.0 and t[1] == 0.5 and t[-1] == 59.5


def test_poisson_mean_rate() -> None:
    t = times(PoissonArrivals(kind="poisson", rate_rps=10), 10_000)
    # N ~ Poisson(10 * 10_000 = 100_000), sd = sqrt(1e5) = 316; allow 4 sd = 1265
    assert abs(len(t) - 100_000) < 1265
    assert np.all(np.diff(t) >= 0) and t[-1] < 10_000


def test_gamma_mean_rate_and_cv() -> None:
    t = times(GammaArrivals(kind="gamma", rate_rps=5, cv=2.0), 10_000)
    # renewal process: Var N(t) ~ rate * t * cv^2 = 5 * 1e4 * 4 = 2e5, sd 447 on 50_000 (0.9 %); allow 4 %
    assert abs(len(t) - 50_000) < 2_000
    gaps = np.diff(t)
    # gamma shape k = 1/cv^2 = 0.25, excess kurtosis 6/k = 24: rel. sd of the sample variance
    # ~ sqrt((24 + 2) / 5e4) = 2.3 %, so of the CV ~ 1.1 %; allow 5 % (about 4.4 sd)
    assert abs(gaps.std() / gaps.mean() - 2.0) < 0.10


def test_stepped_evenly_spaced_counts_per_step() -> None:
    spec = SteppedArrivals(
        kind="stepped",
        poisson=False,
        steps=[RateStep(duration_s=10, rate_rps=2), RateStep(duration_s=10, rate_rps=5), RateStep(duration_s=5, rate_rps=1)],
    )
    t = times(spec, 30)
    # [0,10) at 2 rps: 20; [10,20) at 5 rps: 50; the last step repeats to the end, [20,30) at 1 rps: 10
    assert (count_in(t, 0, 10), count_in(t, 10, 20), count_in(t, 20, 30)) == (20, 50, 10)
    assert t[20] == 10.0 and t[70] == 20.0  # each step starts with an arrival at its start


def test_stepped_poisson_counts_per_step() -> None:
    spec = SteppedArrivals(kind="stepped", steps=[RateStep(duration_s=1000, rate_rps=2), RateStep(duration_s=1000, rate_rps=10)])
    t = times(spec, 2000)
    # Poisson(2000): sd 44.7, allow 200 (4.5 sd); Poisson(10_000): sd 100, allow 450
    assert abs(count_in(t, 0, 1000) - 2000) < 200
    assert abs(count_in(t, 1000, 2000) - 10_000) < 450


def test_stepped_zero_rate_step_is_silent() -> None:
    spec = SteppedArrivals(kind="stepped", steps=[RateStep(duration_s=10, rate_rps=0), RateStep(duration_s=10, rate_rps=3)])
    t = times(spec, 20)
    assert count_in(t, 0, 10) == 0 and count_in(t, 10, 20) > 0


def test_ramp_deterministic_follows_integrated_rate() -> None:
    t = times(RampArrivals(kind="ramp", start_rps=0, end_rps=10, poisson=False), 60)
    # rate 10 t / 60, Lambda(t) = t^2 / 12; arrival k at sqrt(12 k), k = 1.. while 12 k < 3600 -> 299
    assert len(t) == 299
    assert abs(t[0] - 3.4641016) < 1e-6  # sqrt(12)
    assert count_in(t, 0, 30) == 74  # 12 k < 900 -> k <= 74


def test_ramp_then_flat_after_ramp_s() -> None:
    t = times(RampArrivals(kind="ramp", start_rps=2, end_rps=4, ramp_s=10, poisson=False), 20)
    # Lambda(10) = 2*10 + (0.2)*100/2 = 30 arrivals in the ramp (k = 0..29), then 4 rps for 10 s: 40
    assert count_in(t, 0, 10) == 30 and count_in(t, 10, 20) == 40


def test_ramp_poisson_counts() -> None:
    t = times(RampArrivals(kind="ramp", start_rps=0, end_rps=10), 1000)
    # Lambda(t) = 0.01 t^2 / 2: first half 1250 (sd 35, allow 150), second half 3750 (sd 61, allow 250)
    assert abs(count_in(t, 0, 500) - 1250) < 150
    assert abs(count_in(t, 500, 1000) - 3750) < 250


def test_flash_crowd_spike() -> None:
    t = times(FlashCrowdArrivals(kind="flash_crowd", base_rps=2, factor=5, start_s=100, duration_s=100), 1000)
    # spike: 10 rps x 100 s = 1000 (sd 32, allow 150); outside: 2 rps x 900 s = 1800 (sd 42, allow 200)
    assert abs(count_in(t, 100, 200) - 1000) < 150
    assert abs(len(t) - count_in(t, 100, 200) - 1800) < 200


def test_onoff_long_run_rate() -> None:
    spec = OnOffArrivals(kind="onoff", on_rate_rps=10, off_rate_rps=0, mean_on_s=10, mean_off_s=30)
    t = times(spec, 40_000)
    # long-run rate 10 * 10 / (10 + 30) = 2.5 rps -> 100_000. The modulation inflates the count
    # variance: ~ 2 (r_on - r_off)^2 p (1-p) tau t = 2*100*0.1875*7.5*4e4 = 1.1e7 (tau = 1/(1/10+1/30)),
    # sd ~ 3.4 %; allow 12 %
    assert abs(len(t) - 100_000) < 12_000
    # bursty: the gaps' CV is far above a Poisson process's 1
    gaps = np.diff(t)
    assert gaps.std() / gaps.mean() > 1.5


def test_diurnal_follows_the_sine() -> None:
    t = times(DiurnalArrivals(kind="diurnal", mean_rps=5, amplitude_rps=4, period_s=100), 1000)
    # 10 full periods: 5 * 1000 = 5000 (sd 71, allow 300). The rising halves [0,50) of each cycle
    # carry 5*50 + 4*100/pi = 377.3 each, 3773 in all (sd 61, allow 250)
    assert abs(len(t) - 5000) < 300
    rising = sum(count_in(t, 100 * c, 100 * c + 50) for c in range(10))
    assert abs(rising - 3773) < 250


def test_same_seed_same_times_different_seed_differs() -> None:
    spec = PoissonArrivals(kind="poisson", rate_rps=3)
    assert np.array_equal(times(spec, 100, seed=5), times(spec, 100, seed=5))
    assert not np.array_equal(times(spec, 100, seed=5), times(spec, 100, seed=6))


def gap_by_gap(rng: np.random.Generator, draw, t0: float, t1: float) -> list[float]:
    """The renewal process the straightforward way: one Python float addition per gap, the gaps drawn
    4,096 at a time, stopping at the first time at or after ``t1`` (the rest of that chunk unused)."""
    out, t = [], t0
    while True:
        for gap in draw(rng, 4096).tolist():
            t += gap
            if t >= t1:
                return out
            out.append(t)


def test_vectorised_renewals_are_the_gap_by_gap_floats() -> None:
    # 100 req/s for 90 s: about 9,000 arrivals, so the running sum crosses two chunk boundaries
    got = list(arrival_times(PoissonArrivals(kind="poisson", rate_rps=100), 90, np.random.default_rng(4)))
    assert got == gap_by_gap(np.random.default_rng(4), lambda r, n: r.exponential(1 / 100, n), 0.0, 90)
    assert len(got) > 2 * 4096
    # gamma: shape 1/cv^2 = 0.25, scale 1/(rate x shape) = 1/(50 x 0.25) = 0.08
    got = list(arrival_times(GammaArrivals(kind="gamma", rate_rps=50, cv=2), 200, np.random.default_rng(5)))
    assert got == gap_by_gap(np.random.default_rng(5), lambda r, n: r.gamma(0.25, 0.08, n), 0.0, 200)
    # stepped: each step restarts from its start with a fresh chunk, so the second step's draws begin after
    # the first step's whole chunk (its unused tail included)
    spec = SteppedArrivals(kind="stepped", steps=[RateStep(duration_s=10, rate_rps=3), RateStep(duration_s=10, rate_rps=7)])
    rng = np.random.default_rng(6)
    first = gap_by_gap(rng, lambda r, n: r.exponential(1 / 3, n), 0.0, 10.0)
    second = gap_by_gap(rng, lambda r, n: r.exponential(1 / 7, n), 10.0, 20.0)
    assert list(arrival_times(spec, 20, np.random.default_rng(6))) == first + second


def test_vectorised_even_spacing_is_t0_plus_k_over_rate() -> None:
    # 7.3 req/s for 1,000 s: k / 7.3 for k = 0 .. 7,299 (7,299 / 7.3 = 999.86 < 1000 <= 7,300 / 7.3), in two chunks
    got = list(arrival_times(ConstantArrivals(kind="constant", rate_rps=7.3), 1000, np.random.default_rng(0)))
    assert got == [0.0 + k / 7.3 for k in range(7300)]
