"""Figure data: what the Chart.js specs carry, on small tables worked out by hand.

The pictures themselves are checked in Chromium (tests/integration/test_report_legibility.py);
here the numbers: per-time totals of the run figures, the compare heatmap's colours, the suite
bars' means and error bars over seeds, and the spec conventions the page script resolves.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from scalearena.contracts.records import TimeseriesRecord
from scalearena.reports import run_plots
from scalearena.reports.compare_output import heat_color
from scalearena.reports.load import Run
from scalearena.reports.results import timeseries_frame
from scalearena.reports.suite_plots import grouped_bars


def _ts(t, variant, model, ready, pending, terminating, spec, waiting, offered, queue, kv):
    return TimeseriesRecord(t_s=t, variant=variant, model=model, spec_replicas=spec, ready_replicas=ready,
                            pending_replicas=pending, terminating_replicas=terminating, kv_usage_mean=kv,
                            kv_usage_max=kv, waiting=waiting, running=0, gpu_util_mean=None, offered_rps=offered,
                            completed_rps=0.0, router_queue=queue)


TS = timeseries_frame([
    _ts(5.0, "a", "m1", 2, 1, 0, 3, 4, 2.0, 1, 0.5),
    _ts(5.0, "b", "m1", 1, 0, 1, 1, 1, 2.0, 1, None),  # same model as a: its load and gateway queue count once
    _ts(5.0, "c", "m2", 1, 0, 0, 1, 0, 3.0, 2, 0.9),
    _ts(10.0, "a", "m1", 0, 0, 0, 0, 0, 0.0, 0, None),
])


def test_per_time_totals_by_hand():
    pt = run_plots.per_time(TS)
    first, second = pt.iloc[0], pt.iloc[1]
    # t=5: ready 2 + 1 + 1 = 4; billed (2+1+0) + (1+0+1) + (1+0+0) = 6; spec 3 + 1 + 1 = 5; waiting 4 + 1 + 0 = 5
    assert (first["t_s"], first["ready"], first["billed"], first["spec"], first["waiting"]) == (5.0, 4, 6, 5, 5)
    # offered load and gateway queue once per model: m1 2.0 + m2 3.0 = 5.0 req/s; 1 + 2 = 3 held
    assert (first["offered_rps"], first["router_queue"]) == (5.0, 3)
    # KV weighted by ready replicas of pods with a sample (b has none): (0.5 x 2 + 0.9 x 1) / 3 = 63.33 %
    assert first["kv_mean"] == pytest.approx(63.333, abs=1e-3)
    # t=10: nothing ready, no KV sample -> no mean (a gap in the line, not 0)
    assert second["ready"] == 0 and math.isnan(second["kv_mean"])


def test_replica_steps_hold_the_value_over_the_interval_before_each_sample():
    fig = run_plots.overview(TS, {}, (1.0, "time (s)"))
    (panel,) = fig["panels"]
    replicas_a = next(d for d in panel["data"]["datasets"] if d["label"] == "replicas a")
    # Chart.js "after" draws previous.x -> target.y first: the sample's value covers (previous, t]
    assert replicas_a["stepped"] == "after" and replicas_a["xy"] == [[5.0, 10.0], [2.0, 0.0]]
    assert [i["label"] for i in fig["legend"]] == ["replicas a", "replicas b", "replicas c", "offered load",
                                                   "mean KV usage"]
    assert json.loads(json.dumps(fig)) == fig  # plain JSON: the page embeds it as is


def test_heatmap_colours_are_symmetric_clipped_and_interpolated():
    # ColorBrewer RdYlGn 5: -100 % green 1a9641, 0 pale yellow ffffbf, +100 % red d7191c
    assert (heat_color(-100), heat_color(0), heat_color(100)) == ("#1a9641", "#ffffbf", "#d7191c")
    assert heat_color(6276) == heat_color(100) and heat_color(-500) == heat_color(-100)  # clipped, never stretched
    # +25 %: halfway from ffffbf to fdae61 (+50 %): (255+253)/2 = 254 fe, (255+174)/2 = 214.5 -> 214 d6,
    # (191+97)/2 = 144 -> 90
    assert heat_color(25) == "#fed690"


def _run(autoscaler: str, seed: int, goodput: float) -> Run:
    s = {"scenario": "s", "autoscaler": autoscaler, "goodput_rps": goodput, "failures": {"rejected": 2 * seed},
         "cost_usd": 1.0, "energy_kwh": 1.0, "ttft_ms": {"mean": 1.0}, "itl_ms": {"mean": 1.0}}
    return Run(Path(f"/x/s/{autoscaler}/seed-{seed}"), f"s/{autoscaler}/seed-{seed}", s)


def test_grouped_bars_show_seed_means_with_their_interval():
    fig = grouped_bars("s", [_run("a", 1, 1.0), _run("a", 2, 3.0)], {"a": "#0173b2"})
    goodput, failures = fig["panels"][0], fig["panels"][1]
    (bar,) = goodput["data"]["datasets"]
    # seeds 1.0 and 3.0: mean 2.0, sd sqrt(2), half width t(0.975, 1) = 12.706 x sqrt(2) / sqrt(2) = 12.706
    assert goodput["data"]["labels"] == ["all"] and bar["data"] == [2.0]
    assert bar["errors"][0][0] == 2.0 and bar["errors"][0][1] == pytest.approx(12.7062, abs=1e-3)
    assert goodput["options"]["scales"]["y"]["suggestedMax"] == pytest.approx(14.7062, abs=1e-3)  # whisker inside
    # failures: one dataset per cause stacked on the autoscaler; rejected 2 and 4 -> mean 3, the whisker on the top one
    causes = failures["data"]["datasets"]
    assert [d["stack"] for d in causes] == ["a:a"] * 5 and causes[0]["data"] == [3.0]
    assert causes[-1]["errors"][0][0] == 3.0 and all("errors" not in d or d["errors"] is None for d in causes[:-1])


def _lab(hex_color: str) -> tuple[float, float, float]:
    """sRGB (D65) -> CIE L*a*b*, the textbook formulas (IEC 61966-2-1 linearisation, CIE 1976)."""
    lin = [(c / 255 + 0.055) ** 2.4 / 1.055 ** 2.4 if c / 255 > 0.04045 else c / 255 / 12.92
           for c in (int(hex_color[i:i + 2], 16) for i in (1, 3, 5))]
    x = (0.4124 * lin[0] + 0.3576 * lin[1] + 0.1805 * lin[2]) / 0.95047
    y = 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]
    z = (0.0193 * lin[0] + 0.1192 * lin[1] + 0.9505 * lin[2]) / 1.08883
    f = [t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116 for t in (x, y, z)]
    return 116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])


def test_eight_autoscalers_get_colours_told_apart():
    import itertools
    import math

    from scalearena.reports.figures import SERIES_COLORS

    # the paper suite shows 8 autoscalers; its 8th took gold #b8850a, Delta E 15 from keda's #de8f05.
    # The closest pair left is the palette's own blue #0173b2 / sky blue #56b4e9, Delta E 26.
    eight = SERIES_COLORS[:8]
    closest = min(math.dist(_lab(a), _lab(b)) for a, b in itertools.combinations(eight, 2))
    assert closest > 25
    assert math.dist(_lab("#b8850a"), _lab("#de8f05")) < 16  # the pair this replaced
