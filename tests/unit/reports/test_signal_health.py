"""Signals an autoscaler never received are flagged at the end of a run (reports/signal_health.py)."""
from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result

from scalearena.cli import main
from scalearena.reports.signal_health import flat_text, missing_text, signal_health

ROOT = Path(__file__).resolve().parents[3]


def _hpa(t: float, ok: bool, label: str = "external:q") -> dict:
    rule = "metric" if ok else "metric_invalid"
    return {"t_s": t, "autoscaler": "mine", "reasons": [{"rule": rule, "message": f"{label}: no rows", "values": {
        "metric": label}}]}


def _keda(value: float | None, matched: bool) -> dict:
    return {"autoscaler": "k", "reasons": [{"rule": "trigger" if value is not None else "trigger_error",
                                            "message": "keda: query failed",
                                            "values": {"triggers": {"q0": {"query": "up", "value": value,
                                                                           "matched": matched}}}}]}


def test_counts_reads_and_flags_only_the_signal_that_never_had_a_value() -> None:
    decisions = [_hpa(0, False), _hpa(15, False), _hpa(30, False),
                 _hpa(0, True, "pods:w"), _hpa(15, False, "pods:w")]
    rows, missing = signal_health(decisions)
    # external:q: 3 reads, all invalid -> missing; pods:w: 2 reads, 1 valid -> not missing
    assert rows == [{"autoscaler": "mine", "signal": "external:q", "reads": 3, "valid": 0, "unmatched": 0,
                     "constant": None},
                    {"autoscaler": "mine", "signal": "pods:w", "reads": 2, "valid": 1, "unmatched": 0,
                     "constant": None}]  # no usage in these reasons: nothing to call constant
    assert [(m["signal"], m["why"]) for m in missing] == [("external:q", "external:q: no rows")]
    assert missing_text(missing[0]) == "mine read external:q 3 times and it never had a value: external:q: no rows"


def test_a_keda_trigger_read_as_zero_from_no_series_is_missing() -> None:
    _, missing = signal_health([_keda(0.0, False), _keda(0.0, False)])
    assert [(m["signal"], m["reads"], m["unmatched"]) for m in missing] == [("q0", 2, 2)]
    assert "matched no series" in missing_text(missing[0])
    # one read from a series is enough; a failed read (value None) counts as a read without a value
    _, missing = signal_health([_keda(0.0, False), _keda(None, True), _keda(3.0, True)])
    assert missing == []
    _, missing = signal_health([_keda(None, True)])
    assert [m["why"] for m in missing] == ["keda: query failed"]


def test_multimetric_without_gpu_utilization_is_flagged() -> None:
    d = {"autoscaler": "multimetric", "reasons": [{"rule": "signals", "message": "", "values": {
        "gpu_raw": None, "gpu_smoothed": None, "queue": 0, "kv_mean": 0.1, "p99_ms": None}}]}
    _, missing = signal_health([d, d])
    assert [m["signal"] for m in missing] == ["gpu_raw"]  # kv_mean had a value; p99 is not required


def _run_byo(out: Path, duration_s: int, override: str) -> Result:
    """``scalearena run`` of the byo-objects example, shortened to ``duration_s`` without drain, one --set more."""
    r = CliRunner().invoke(main, ["run", str(ROOT / "workloads/scenarios/byo-objects.yaml"), "--out", str(out),
                                  "--set", f"duration_s={duration_s}", "--set", "drain_s=0", "--set", override])
    assert r.exit_code == 0, r.output
    return r


def test_a_user_hpa_selecting_another_model_is_flagged_in_summary_json(tmp_path: Path) -> None:
    """The byo-objects example with MODEL=Qwen/Qwen3-0.6B and no --model-name mapping: the External
    metric's selector asks model_name="Qwen/Qwen3-0.6B", where the run exports model_name="qwen3-0.6b",
    so it has no rows in any sync; the hpa preset beside it reads its signals and is not flagged."""
    out = tmp_path / "out"
    r = _run_byo(out, 60, "autoscalers.1.env.MODEL=Qwen/Qwen3-0.6B")
    mine = json.loads((out / "byo-objects" / "my-hpa" / "summary.json").read_text())
    preset = json.loads((out / "byo-objects" / "hpa" / "summary.json").read_text())
    assert preset["signals_missing"] == []
    flagged = {m["signal"] for m in mine["signals_missing"]}
    assert any(s.startswith("external:") for s in flagged), mine["signals"]
    # the HPA syncs every 15 s over 60 s of load: 60 / 15 = 4 syncs at least read it
    assert all(m["reads"] >= 4 for m in mine["signals_missing"])
    assert "my-hpa never received a value for external:" in r.output
    # the banner at the top of the run page, and once per signal on the suite page linking to it
    assert 'id="signals-missing"' in (out / "byo-objects" / "my-hpa" / "report.html").read_text()
    assert 'id="signals-missing"' not in (out / "byo-objects" / "hpa" / "report.html").read_text()
    suite = (out / "report.html").read_text()
    assert suite.count('<a href="./byo-objects/my-hpa/report.html">byo-objects/my-hpa</a>') == len(flagged)


def test_flat_signal_is_named_only_when_the_autoscaler_never_scaled() -> None:
    def trig(v: float) -> dict:
        return {"autoscaler": "q", "reasons": [{"rule": "trigger", "message": "", "values": {"triggers": {
            "queue": {"query": "q", "value": v, "matched": True}, "running": {"query": "r", "value": v + 1,
                                                                               "matched": True}}}}]}
    rows, _ = signal_health([trig(0.0), trig(0.0), trig(0.0)])
    assert [(r["signal"], r["constant"]) for r in rows] == [("queue", 0.0), ("running", 1.0)]
    lines = flat_text({"signals": rows, "scaling_actions": 0})
    assert lines == ["q read queue as 0 in all 3 reads and never scaled", "q read running as 1 in all 3 reads and "
                     "never scaled"]
    assert flat_text({"signals": rows, "scaling_actions": 2}) == []  # it scaled: it reacted to something
    rows, _ = signal_health([trig(0.0), trig(2.0)])
    assert [r["constant"] for r in rows] == [None, None]


def test_llmd_queue_behind_a_rejecting_router_reads_zero_all_run(tmp_path: Path) -> None:
    """byo-objects' router rejects at saturation (admission: saturation), so no request ever waits at the
    gateway: the queue recipe's epp-queue-size reads 0 in every poll and it never scales."""
    out = tmp_path / "out"
    _run_byo(out, 120, "autoscalers=[{kind: llmd-queue}]")
    summary = json.loads((out / "byo-objects" / "llmd-queue" / "summary.json").read_text())
    assert summary["scaling_actions"] == 0 and summary["signals_missing"] == []
    assert any(line.startswith("llmd-queue read epp-queue-size as 0 in all") for line in flat_text(summary))
    assert 'id="signals-flat"' in (out / "byo-objects" / "llmd-queue" / "report.html").read_text()


def test_validate_warns_for_objects_whose_queries_select_nothing(tmp_path: Path) -> None:
    """The shipped byo-objects example validates clean; the same file with MODEL=Qwen/Qwen3-0.6B (a model name
    the scenario does not serve, not mapped) validates (exit 0) with one warning per signal of my-hpa that the
    simulator's first 120 s never gave a value, and the listing marks that query NO SERIES."""
    good = CliRunner().invoke(main, ["validate", str(ROOT / "workloads/scenarios/byo-objects.yaml")])
    assert good.exit_code == 0 and "warning" not in good.output, good.output
    text = (ROOT / "workloads/scenarios/byo-objects.yaml").read_text()
    bad = tmp_path / "byo.yaml"
    bad.write_text(text.replace("../../manifests", str(ROOT / "manifests")).replace("MODEL: qwen3-0.6b",
                                                                                     "MODEL: Qwen/Qwen3-0.6B"))
    r = CliRunner().invoke(main, ["validate", str(bad)])
    assert r.exit_code == 0, r.output
    warned = [line for line in r.output.splitlines() if line.startswith("warning:")]
    assert any("autoscaler 'my-hpa': external:model_requests_queued had no value in the first 120 s" in w
               for w in warned), r.output
    assert all("exports namespace 'scalearena', model_name 'qwen3-0.6b', EPP service 'qwen3-0.6b-epp'" in w
               and "--model-name SERVED=MODEL" in w
               for w in warned)
    assert ('external:model_requests_queued: sum(model:requests_queued:sum{model_name="Qwen/Qwen3-0.6B",'
            'namespace="scalearena"})  [NO SERIES: read 9 times, never a value]') in r.output  # 120 s / 15 s + 1

