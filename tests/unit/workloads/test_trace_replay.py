"""Trace replay: window and time_scale arithmetic, rate rescaling, token clipping."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from scalearena.workloads.base import RequestSpec, prefix_units
from scalearena.workloads.spec import TraceArrivals
from scalearena.workloads.traces.base import TraceStats
from scalearena.workloads.traces.replay import native_rate, replay

DATA = Path(__file__).resolve().parents[3] / "workloads" / "data"


def azure_file(tmp_path: Path, n: int, gap_s: float, tokens: list[tuple[int, int]] | None = None) -> str:
    """n rows gap_s apart from 2023-11-16 00:00:00 (gap_s must divide into whole microseconds)."""
    lines = ["TIMESTAMP,ContextTokens,GeneratedTokens"]
    for i in range(n):
        us = round(i * gap_s * 1e6)
        s, frac = divmod(us, 1_000_000)
        h, rem = divmod(s, 3600)
        m, sec = divmod(rem, 60)
        day = 16 + h // 24
        n_in, n_out = tokens[i] if tokens else (100, 10)
        lines.append(f"2023-11-{day:02d} {h % 24:02d}:{m:02d}:{sec:02d}.{frac:06d}0,{n_in},{n_out}")
    p = tmp_path / "trace.csv"
    p.write_text("\n".join(lines) + "\n")
    return str(p)


def run(spec: TraceArrivals, duration_s: float, seed: int = 0) -> tuple[list, TraceStats]:
    stats = TraceStats(path=spec.path)
    return list(replay(spec, duration_s, np.random.default_rng(seed), stats)), stats


def trace(path: str, **kw) -> TraceArrivals:
    return TraceArrivals(kind="trace", path=path, format="azure", **kw)


def test_window_and_time_scale(tmp_path: Path) -> None:
    f = azure_file(tmp_path, 20, 1.0)  # rows at t = 0, 1, ..., 19 s
    rows, stats = run(trace(f, start_s=5, window_s=10, time_scale=2), duration_s=100)
    # window [5, 15) holds t = 5..14; arrival = (t - 5) / 2 = 0, 0.5, ..., 4.5
    assert [r.arrival_s for r in rows] == [k / 2 for k in range(10)]
    assert stats.rows_in_window == 10 and stats.ended == "window"
    assert stats.rows_read == 16  # t = 0..15 read; the row at 15 ends the window


def test_run_duration_cuts_the_replay(tmp_path: Path) -> None:
    f = azure_file(tmp_path, 20, 1.0)
    rows, stats = run(trace(f, start_s=5, window_s=10, time_scale=2), duration_s=3)
    # arrivals (t-5)/2 < 3 -> t = 5..10: 0, 0.5, ..., 2.5
    assert [r.arrival_s for r in rows] == [0, 0.5, 1.0, 1.5, 2.0, 2.5]
    assert stats.ended == "duration"


def test_arrivals_relative_to_first_row_in_window(tmp_path: Path) -> None:
    f = azure_file(tmp_path, 10, 1.0)
    rows, _ = run(trace(f, start_s=2.5), duration_s=100)
    # first row in the window is t = 3 -> arrival 0; then 1, 2, ...; rows t = 3..9
    assert [r.arrival_s for r in rows] == [0, 1, 2, 3, 4, 5, 6]


def test_native_rate(tmp_path: Path) -> None:
    f = azure_file(tmp_path, 10_000, 0.1)  # 10 rps for 1000 s
    # run of 500 s stops by duration: 5000 rows over 500 s
    assert native_rate(trace(f), 500) == (5000, 500)
    # a window of 100 s at time_scale 2 lasts 50 s of run time: 1000 rows over 50 s
    assert native_rate(trace(f, window_s=100, time_scale=2), 500) == (1000, 50)


def test_thinning_to_target_rate(tmp_path: Path) -> None:
    f = azure_file(tmp_path, 10_000, 0.1)
    rows, stats = run(trace(f, target_rps=2.5), duration_s=500)
    # native 5000 / 500 s = 10 rps; keep each with p = 0.25: 1250, sd sqrt(5000*.25*.75) = 30.6; allow 125
    assert stats.native_rps == 10 and stats.rate_factor == 0.25
    assert abs(len(rows) - 1250) < 125
    assert stats.thinned + len(rows) == 5000 and stats.emitted == len(rows)


def test_duplication_to_target_rate(tmp_path: Path) -> None:
    f = azure_file(tmp_path, 10_000, 0.1)
    rows, stats = run(trace(f, target_rps=25), duration_s=500)
    # factor 2.5: 2 copies, or 3 with p = 0.5 -> 12_500, sd sqrt(5000*.25) = 35; allow 150
    assert abs(len(rows) - 12_500) < 150
    assert stats.duplicated == len(rows) - 5000
    t = [r.arrival_s for r in rows]
    assert t == sorted(t) and t[-1] < 500
    # the first copy keeps its row's time (a multiple of 0.1 s); the jittered extra copies
    # land on that grid with probability ~0, so exactly one arrival per row sits on it
    assert sum(abs(x * 10 - round(x * 10)) < 1e-6 for x in t) == 5000


def test_rescaling_is_seeded(tmp_path: Path) -> None:
    f = azure_file(tmp_path, 1000, 0.1)
    spec = trace(f, target_rps=3)
    assert run(spec, 100, seed=1)[0] == run(spec, 100, seed=1)[0]
    assert run(spec, 100, seed=1)[0] != run(spec, 100, seed=2)[0]


def test_clipping_to_max_model_len_is_counted(tmp_path: Path) -> None:
    f = azure_file(tmp_path, 3, 1.0, tokens=[(100, 50), (4000, 200), (5000, 10)])
    rows, stats = run(trace(f, max_model_len=4096), duration_s=10)
    # 150 fits; 4200 > 4096 -> input 4000, output 4096 - 4000 = 96; 5010 -> input 4095, output 1
    assert [(r.input_tokens, r.output_tokens) for r in rows] == [(100, 50), (4000, 96), (4095, 1)]
    assert stats.clipped == 2


def test_mooncake_prefix_identity_is_the_hash_chain(tmp_path: Path) -> None:
    p = tmp_path / "m.jsonl"
    p.write_text('{"timestamp": 0, "input_length": 700, "output_length": 20, "hash_ids": [7, 8]}\n'
                 '{"timestamp": 10, "input_length": 300, "output_length": 10, "hash_ids": [7]}\n'
                 '{"timestamp": 20, "input_length": 50, "output_length": 5}\n')
    rows, _ = run(TraceArrivals(kind="trace", path=str(p), format="mooncake"), 10)
    # the whole chain travels (no single group keyed on the first hash, which in the real
    # conversation trace is 0 for every request); units: 512 + 188 tokens, then 300 of block 7
    assert [r.hash_ids for r in rows] == [(7, 8), (7,), ()]
    specs = [RequestSpec(i, "m", r.arrival_s, r.input_tokens, 1, hash_ids=r.hash_ids) for i, r in enumerate(rows)]
    assert [prefix_units(s) for s in specs] == [((7, 512), (8, 188)), ((7, 300),), ()]


def test_burstgpt_zero_output_sent_with_one_token() -> None:
    spec = TraceArrivals(kind="trace", path=str(DATA / "burstgpt_synthetic_sample.csv"), format="burstgpt")
    rows, stats = run(spec, 10_000)
    assert len(rows) == 300 and stats.zero_output > 0
    assert min(r.output_tokens for r in rows) >= 1 and min(r.input_tokens for r in rows) >= 1
