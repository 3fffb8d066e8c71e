"""One knob for every fuzz test's size: ``SCALEARENA_FUZZ_SCALE`` (default 1) multiplies ``max_examples``.

`make test` runs each property at its bounded sample (scale 1, well under 30 s a file on 2 cores);
`make fuzz` sets the scale high (Makefile) and runs the same properties over many more inputs. Every
property is derandomized with no example database, so a run is the same on every machine and a
failure names an input anyone can replay.
"""
from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

ENV = "SCALEARENA_FUZZ_SCALE"


def _scale() -> float:
    text = os.environ.get(ENV, "1") or "1"
    try:
        value = float(text)
    except ValueError:
        raise SystemExit(f"error: {ENV}={text!r}: expected a positive number (1 = the make test sample)") from None
    if not 0 < value <= 10_000:
        raise SystemExit(f"error: {ENV}={text!r}: expected a positive number up to 10000")
    return value


SCALE = _scale()


def examples(n: int) -> int:
    """``n`` examples (the `make test` sample) times the scale, at least 1."""
    return max(1, round(n * SCALE))


def fuzz(n: int, **kw: object) -> settings:
    """The settings of a fuzz property drawing ``examples(n)`` inputs: derandomized, no database, no deadline
    (each test bounds its own time), every health check off (inputs are built large on purpose)."""
    return settings(derandomize=True, database=None, deadline=None, max_examples=examples(n),
                    suppress_health_check=list(HealthCheck), **kw)  # type: ignore[arg-type]
