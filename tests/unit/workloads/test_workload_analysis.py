"""offered_rate and token_histogram on hand-built request lists."""
from __future__ import annotations

import pandas as pd

from scalearena.workloads.analysis import offered_rate, summarize, token_histogram
from scalearena.workloads.base import RequestSpec


def reqs(times: list[float], model: str = "m", n_in: int = 100) -> list[RequestSpec]:
    return [RequestSpec(i, model, t, n_in, 10) for i, t in enumerate(times)]


def test_offered_rate_bins() -> None:
    r = reqs([0.0, 0.5, 1.0, 1.2, 1.4, 1.6, 5.0])
    df = offered_rate(r, bin_s=2.0, duration_s=7.0)
    # bins [0,2): 6 arrivals / 2 s = 3; [2,4): 0; [4,6): 1 / 2 = 0.5; [6,7): cut short, 0 / 1 s
    assert df["t_s"].tolist() == [0.0, 2.0, 4.0, 6.0]
    assert df["rps"].tolist() == [3.0, 0.0, 0.5, 0.0]


def test_offered_rate_partial_last_bin_uses_its_own_width() -> None:
    df = offered_rate(reqs([0.0, 1.0, 2.0, 3.0, 4.0]), bin_s=2.0, duration_s=5.0)
    # [0,2): 2/2 = 1; [2,4): 2/2 = 1; [4,5): 1 arrival over 1 s = 1 (not 0.5)
    assert df["rps"].tolist() == [1.0, 1.0, 1.0]


def test_offered_rate_without_duration_and_by_model() -> None:
    r = reqs([0.1, 0.2, 3.5], "a") + reqs([0.3], "b")
    df = offered_rate(r, bin_s=1.0, by_model=True)
    # last arrival 3.5 -> bins 0..3
    a = df[df.model == "a"]["rps"].tolist()
    b = df[df.model == "b"]["rps"].tolist()
    assert a == [2.0, 0.0, 0.0, 1.0] and b == [1.0, 0.0, 0.0, 0.0]


def test_offered_rate_accepts_a_requests_frame() -> None:
    frame = pd.DataFrame({"arrival_s": [0.0, 0.5, 1.5], "input_tokens": [1, 2, 3], "output_tokens": [1, 1, 1]})
    assert offered_rate(frame, bin_s=1.0, duration_s=2.0)["rps"].tolist() == [2.0, 1.0]


def test_token_histogram() -> None:
    r = [RequestSpec(i, "m", 0.0, n, 1) for i, n in enumerate([10, 20, 20, 40])]
    h = token_histogram(r, "input", bins=[0, 15, 30, 45])
    assert h["count"].tolist() == [1, 2, 1]
    assert h["fraction"].tolist() == [0.25, 0.5, 0.25]


def test_summarize() -> None:
    s = summarize([RequestSpec(i, "m", 0.0, n, 5) for i, n in enumerate([10, 20, 30])], duration_s=3.0)
    assert s["requests"] == 3 and s["mean_rps"] == 1.0 and s["input_tokens_mean"] == 20.0
