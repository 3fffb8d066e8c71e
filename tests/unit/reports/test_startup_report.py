"""Start-ups in the run report (reports/startup_plots.py): the per-phase table worked by hand, the
timeline's texts inside its canvas, and the page showing both."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from scalearena.reports import startup_plots
from scalearena.reports.report import write_run_report


def pod(name: str, created: float, spans: list[tuple[str, float, float]], ready: float | None = None,
        ended: float | None = None) -> dict[str, Any]:
    stage = {"scheduling": "Pending", "node_provisioning": "Pending", "image_pull": "ContainerCreating",
             "weight_load": "Running", "warmup": "Running"}
    return {"pod": name, "variant": "va", "created_s": created, "start": "cold", "node": None, "end": "deleted",
            "ended_s": ended, "ready_s": ready,
            "phases": [{"phase": p, "stage": stage[p], "start_s": a, "end_s": b} for p, a, b in spans]}


PODS = [
    {"pod": "va-0", "variant": "va", "created_s": 0.0, "start": "initial", "phases": [], "ready_s": 0.0,
     "ended_s": None, "end": "running", "node": None},
    pod("va-1", 10, [("scheduling", 10, 11), ("node_provisioning", 11, 311), ("image_pull", 311, 423),
                     ("weight_load", 423, 455), ("warmup", 455, 515)], ready=515),
    pod("va-2", 20, [("scheduling", 20, 21), ("weight_load", 21, 53), ("warmup", 53, 113)], ready=113, ended=400),
]


def test_phase_table_in_lifecycle_order() -> None:
    rows = {r["phase"]: r for r in startup_plots.phase_table(PODS)}
    assert [r["phase"] for r in startup_plots.phase_table(PODS)] == \
        ["scheduling", "node_provisioning", "image_pull", "weight_load", "warmup"]
    assert rows["scheduling"]["count"] == 2 and rows["scheduling"]["p50"] == 1.0
    # weight load 32 s both times; warm-up 60 s both; node provisioning once, 300 s
    assert (rows["weight_load"]["p95"], rows["warmup"]["max"]) == (32.0, 60.0)
    assert rows["node_provisioning"] == {"phase": "node_provisioning", "stage": "Pending", "count": 1,
                                         "p50": 300.0, "p95": 300.0, "max": 300.0}


def test_timeline_bars_per_phase_for_started_pods_only() -> None:
    spec = startup_plots.timeline(PODS, 600.0, (1.0, "time (s)"))
    assert spec is not None and spec["id"] == "startups"
    (chart,) = spec["panels"]
    bars = {ds["label"]: ds["data"] for ds in chart["data"]["datasets"]}
    assert chart["options"]["scales"]["y"]["labels"] == ["va-1", "va-2"]  # va-0 was Ready at t=0
    assert bars["node provisioning"] == [{"y": "va-1", "x": [11, 311], "s": 300}]
    # Ready from the last phase's end until the pod went (va-2 at 400) or the run ended (va-1, 600)
    assert bars["ready"] == [{"y": "va-1", "x": [515, 600], "s": 85}, {"y": "va-2", "x": [113, 400], "s": 287}]
    assert [item["label"] for item in spec["legend"]][:2] == ["scheduling", "node provisioning"]
    minutes = startup_plots.timeline([dict(PODS[1], pod=f"va-{i}") for i in range(60)], 600.0, (60.0, "time (min)"))
    assert minutes is not None and "first 40 of 60" in minutes["caption"]
    assert minutes["panels"][0]["data"]["datasets"][0]["data"][0]["x"] == [0.1667, 0.1833]  # 10 s, 11 s in min
    assert startup_plots.timeline(PODS[:1], 600.0, (1.0, "time (s)")) is None


def test_run_page_shows_the_start_up_table_and_timeline(tmp_path: Path) -> None:
    from scalearena.reports.demo import write_demo_results

    write_demo_results(tmp_path, autoscalers=(("hpa", 45.0),))
    run_dir = next(p.parent for p in tmp_path.rglob("summary.json"))
    (run_dir / "pods.jsonl").write_text("".join(json.dumps(p) + "\n" for p in PODS))
    html = Path(write_run_report(run_dir, force=True)).read_text()
    assert 'id="fig-startups"' in html and "Start-up phases" in html
    assert "node provisioning</td><td class=\"l\">Pending</td><td>1</td><td>300.0</td>" in html


@pytest.mark.parametrize("bad", ["", "{not json\n", '{"pod": "x"}\n'])
def test_unreadable_pod_rows_are_skipped(tmp_path: Path, bad: str) -> None:
    from scalearena.reports.load import Run

    (tmp_path / "pods.jsonl").write_text(bad + json.dumps(PODS[1]) + "\n")
    assert [p["pod"] for p in Run(tmp_path, "s/a", {}).pods] == ["va-1"]


def test_a_slept_pod_is_ready_between_its_start_up_and_its_sleep_and_after_its_wake() -> None:
    slept = {"pod": "va-10", "variant": "va", "created_s": 10.0, "start": "cold", "node": None, "end": "running",
             "ended_s": None, "ready_s": 30.0,
             "phases": [{"phase": "startup", "stage": "Running", "start_s": 10.0, "end_s": 30.0},
                        {"phase": "asleep", "stage": "Asleep", "start_s": 100.0, "end_s": 200.0},
                        {"phase": "wake", "stage": "Running", "start_s": 200.0, "end_s": 201.5}]}
    spec = startup_plots.timeline([slept, dict(slept, pod="va-9")], 600.0, (1.0, "time (s)"))
    assert spec is not None
    chart = spec["panels"][0]
    assert chart["options"]["scales"]["y"]["labels"] == ["va-9", "va-10"]  # natural order, not "va-10" < "va-9"
    ready = [b for ds in chart["data"]["datasets"] if ds["label"] == "ready" for b in ds["data"] if b["y"] == "va-10"]
    assert [b["x"] for b in ready] == [[30, 100], [201.5, 600]]
