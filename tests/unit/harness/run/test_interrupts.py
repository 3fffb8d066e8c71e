"""Issue 17 item 10, in-process: the one SIGINT/SIGTERM handler, the deferred report, suite.json rows."""
from __future__ import annotations

import json
import os
import signal

import pytest
from click.testing import CliRunner

from scalearena.harness.cli import main as cli
from scalearena.harness.run.interrupts import Interrupted, deferred, exit_code, held, interruptible
from scalearena.harness.run.outcome import RunOutcome


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_interruptible_turns_both_signals_into_interrupted(sig, code) -> None:
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(Interrupted) as e, interruptible():
        os.kill(os.getpid(), sig)
    assert exit_code(e.value) == code  # 128 + 2, 128 + 15
    assert signal.getsignal(signal.SIGTERM) is before  # restored


def test_deferred_records_the_first_signal_and_raises_on_the_second() -> None:
    with deferred("note") as got:
        os.kill(os.getpid(), signal.SIGTERM)
        assert got == [signal.SIGTERM]
        with pytest.raises(Interrupted):
            os.kill(os.getpid(), signal.SIGINT)


def test_held_delivers_the_signal_once_the_block_is_done() -> None:
    """The supervisor spawns and registers a child inside held(): a SIGTERM in between must not cut the two
    apart, and must not be lost either."""
    steps = []
    with interruptible(), pytest.raises(Interrupted) as caught:
        with held():
            os.kill(os.getpid(), signal.SIGTERM)
            steps.append("spawned")
            os.kill(os.getpid(), signal.SIGINT)  # a second one while held: only the first is delivered
            steps.append("registered")
        steps.append("after the block")  # never reached: the held SIGTERM is raised as the block ends
    assert steps == ["spawned", "registered"]
    assert caught.value.signum == signal.SIGTERM and caught.value.exit_code == 143  # 128 + 15
    with interruptible(), held():  # nothing arrived: nothing raised
        steps.append("quiet")
    assert steps[-1] == "quiet"


def test_ctrl_c_during_the_report_still_writes_it_and_exits_130(scenario_file, tmp_path, monkeypatch) -> None:
    written = []

    def report(out) -> None:  # the report gets a Ctrl-C half way and carries on
        os.kill(os.getpid(), signal.SIGINT)
        written.append(out)

    monkeypatch.setattr(cli, "_write_report", report)
    out = tmp_path / "o"
    r = CliRunner().invoke(cli.main, ["run", str(scenario_file), "--out", str(out)], catch_exceptions=False)
    assert r.exit_code == 130, r.output
    assert written == [out]
    assert "interrupted: writing the report of the finished runs" in r.output
    doc = json.loads((out / "suite.json").read_text())
    assert [row["status"] for row in doc["runs"]] == ["ok"]  # the run itself had finished


def test_unfinished_rows_say_interrupted_or_cancelled(scenario_file, tmp_path, monkeypatch) -> None:
    from scalearena.harness.config.scenario import load_scenario
    from scalearena.harness.config.suite import plans_for_scenario
    from scalearena.harness.run.runner import SuiteRecorder

    plans = plans_for_scenario(load_scenario(scenario_file), ["static", "hpa", "keda"])
    rec = SuiteRecorder(tmp_path, "t", "sim", plans, None)
    rec.record(RunOutcome(plans[0].rel_dir, "ok", 1.0))
    (tmp_path / plans[1].rel_dir).mkdir(parents=True)  # started (its RunWriter made the folder), never recorded
    rec.close(complete=False)
    doc = json.loads((tmp_path / "suite.json").read_text())
    assert [row["status"] for row in doc["runs"]] == ["ok", "interrupted", "cancelled"]
    assert doc["complete"] is False


def test_an_unrecorded_run_whose_summary_is_complete_says_ok(scenario_file, tmp_path) -> None:
    """A worker stopped while writing a finished run's page never returns its result; the run is still done."""
    from scalearena.harness.config.scenario import load_scenario
    from scalearena.harness.config.suite import plans_for_scenario
    from scalearena.harness.run.runner import SuiteRecorder

    plans = plans_for_scenario(load_scenario(scenario_file), ["static", "hpa", "keda"])
    rec = SuiteRecorder(tmp_path, "t", "sim", plans, None)
    for plan, complete in ((plans[0], True), (plans[1], False)):
        (tmp_path / plan.rel_dir).mkdir(parents=True)
        (tmp_path / plan.rel_dir / "summary.json").write_text(json.dumps({"complete": complete}))
    rec.close(complete=False)
    doc = json.loads((tmp_path / "suite.json").read_text())
    assert [row["status"] for row in doc["runs"]] == ["ok", "interrupted", "cancelled"]
    assert doc["complete"] is False  # one run cancelled, one interrupted
