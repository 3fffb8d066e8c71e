"""Token-length distributions: each spec becomes an endless stream of integer lengths.

Input and output lengths each draw from their own generator (see
``generate.py``), in fixed-size chunks, so the values a seed yields do not
depend on how many requests a consumer reads. Every length is an integer >= 1.

``empirical`` samples, with replacement, the non-negative integers of one
column of a CSV file — typically ``ContextTokens`` / ``GeneratedTokens`` of an
Azure trace. The column is read in chunks and kept as one compact int32 array
(cached per file and column: a suite builds the same workload once per
autoscaler).
"""
from __future__ import annotations

import csv
import math
from collections.abc import Iterator
from functools import lru_cache
from itertools import chain
from pathlib import Path

import numpy as np

from scalearena.contracts.errors import UserError
from scalearena.workloads.spec import (
    BoundedNormalTokens,
    EmpiricalTokens,
    FixedTokens,
    LognormalTokens,
    TokenLengths,
    UniformTokens,
)

CHUNK = 4096


def _draw(spec: TokenLengths, rng: np.random.Generator, n: int) -> np.ndarray:
    if isinstance(spec, FixedTokens):
        return np.full(n, spec.value, dtype=np.int64)
    if isinstance(spec, UniformTokens):
        return rng.integers(spec.min, spec.max + 1, size=n)
    if isinstance(spec, BoundedNormalTokens):
        # clip, then round half to even; the bounds are integers so the order does not matter
        return np.rint(np.clip(rng.normal(spec.mean, spec.sd, n), spec.min, spec.max)).astype(np.int64)
    if isinstance(spec, LognormalTokens):
        raw = rng.lognormal(math.log(spec.median), spec.sigma, n)
        return np.rint(np.clip(raw, spec.min, spec.max)).astype(np.int64)
    if isinstance(spec, EmpiricalTokens):
        values = empirical_column(spec.path, spec.column)
        return np.maximum(values[rng.integers(0, len(values), size=n)], 1).astype(np.int64)
    raise ValueError(f"unknown token-length kind {getattr(spec, 'kind', spec)!r}")


def token_length_chunks(spec: TokenLengths, rng: np.random.Generator) -> Iterator[list[int]]:
    """Endless stream of lengths for ``spec`` drawn from ``rng``, ``CHUNK`` at a time."""
    if isinstance(spec, EmpiricalTokens):
        empirical_column(spec.path, spec.column)  # fail early, before the first request
    while True:
        yield _draw(spec, rng, CHUNK).tolist()


def token_lengths(spec: TokenLengths, rng: np.random.Generator) -> Iterator[int]:
    """``token_length_chunks`` one length at a time."""
    return chain.from_iterable(token_length_chunks(spec, rng))


@lru_cache(maxsize=8)
def empirical_column(path: str, column: str) -> np.ndarray:
    """The integer values of ``column`` in CSV ``path`` (read streaming, validated per line)."""
    p = Path(path)
    if not p.is_file():
        raise UserError("file not found", where=path, expected="a CSV file with a header row")
    parts: list[np.ndarray] = []
    buf: list[int] = []
    with p.open(newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if header is None or column not in [h.strip() for h in header]:
            raise UserError(
                f"column {column!r} not found (have {header})", where=f"{path}:1", expected="a header naming it"
            )
        idx = [h.strip() for h in header].index(column)
        for row in reader:
            if not row:
                continue
            line = reader.line_num
            try:
                v = int(float(row[idx]))
            except (ValueError, IndexError):
                cell = row[idx] if idx < len(row) else "<missing>"
                raise UserError(
                    f"column {column!r}: {cell!r} is not a token count", where=f"{path}:{line}"
                ) from None
            if v < 0:
                raise UserError(f"column {column!r}: negative token count {v}", where=f"{path}:{line}")
            buf.append(v)
            if len(buf) >= 65536:
                parts.append(np.asarray(buf, dtype=np.int32))
                buf = []
    if buf:
        parts.append(np.asarray(buf, dtype=np.int32))
    if not parts:
        raise UserError(f"column {column!r} has no rows", where=path, expected="at least one token count")
    out = np.concatenate(parts)
    out.flags.writeable = False
    return out
