"""The CLI: bad input -> one line on stderr, exit 2, no traceback."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from scalearena.cli import main
from scalearena.harness.run.outcome import RunOutcome
from tests.conftest import write_yaml


@dataclass
class Outcome:
    returncode: int
    stdout: str
    stderr: str


def scalearena(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> Outcome:
    """The CLI in-process (click's CliRunner): same exit code and streams as `python -m scalearena`."""
    old = Path.cwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        r = CliRunner().invoke(main, list(args), env=env)
    finally:
        os.chdir(old)
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise r.exception
    return Outcome(r.exit_code, r.stdout, r.stderr)


@pytest.mark.parametrize(
    ("mutate", "fragment"),
    [
        (lambda d: d.update(extra_key=True), "extra_key: unknown field"),
        (lambda d: d["cluster"]["variants"][0].update(cost="cheap"), "cluster.variants.0.cost"),
        (lambda d: d["autoscalers"].__setitem__(0, {"kind": "magic"}), "autoscalers.0"),
        (lambda d: d["workload"]["arrivals"].update(rate_rps=-2), "workload.arrivals.rate_rps: Input should be greater than 0; got -2"),
        (lambda d: d["cluster"]["variants"][0]["engine"].update(latency={"kind": "roofline", "model_shape": {
            "hidden_size": 4096, "num_layers": 32, "num_heads": 32, "num_kv_heads": 5, "intermediate_size": 14336,
            "vocab_size": 128256}}), "cluster.variants.0.engine.latency.model_shape.num_kv_heads: 5 must divide num_heads 32"),
    ],
)
def test_validate_bad_scenario_exits_2_with_field_path(tmp_path, scenario_dict, mutate, fragment):
    mutate(scenario_dict)
    p = write_yaml(tmp_path / "bad.yaml", scenario_dict)
    r = scalearena("validate", str(p))
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    assert str(p) in r.stderr and fragment in r.stderr
    assert len(r.stderr.strip().splitlines()) <= 2  # one message (rich may wrap a long line once)


def test_validate_good_scenario(scenario_file):
    r = scalearena("validate", str(scenario_file))
    assert r.returncode == 0, r.stderr
    assert "ok: scenario 'small'" in r.stdout


def test_validate_warns_with_counts_when_requests_cannot_fit(tmp_path, scenario_dict):
    # 8 blocks x 16 = 128 tokens on the only variant; prompts uniform 64..128 + 32 output tokens: every
    # prompt above 96 cannot fit. 2 rps x 60 s = 120 requests; the count of misfits is the uniform share,
    # so it lies strictly between 0 and 120 and equals what the generator draws (checked via the engine rule).
    from scalearena.harness.config.scenario import load_scenario
    from scalearena.workloads.generate import iter_requests

    scenario_dict["cluster"]["variants"][0]["engine"]["kv_cache_blocks"] = 8
    scenario_dict["workload"]["input_tokens"] = {"kind": "uniform", "min": 64, "max": 128}
    p = write_yaml(tmp_path / "long.yaml", scenario_dict)
    reqs = list(iter_requests(load_scenario(p)))
    expect = sum(1 for r in reqs if r.input_tokens + 32 > 128)
    assert 0 < expect < len(reqs)
    r = scalearena("validate", str(p))
    assert r.returncode == 0, r.stderr
    assert f"{expect} of {len(reqs)} requests for model 'm'" in r.stderr
    assert "more than 128 tokens" in r.stderr and "too_long" in r.stderr


def test_unknown_autoscaler_on_run_exits_2(scenario_file, tmp_path):
    r = scalearena("run", str(scenario_file), "--autoscaler", "nope", "--out", str(tmp_path / "o"))
    assert r.returncode == 2
    assert "unknown autoscaler 'nope'" in r.stderr and "Traceback" not in r.stderr


def test_bad_set_override_exits_2(scenario_file, tmp_path):
    r = scalearena("run", str(scenario_file), "--set", "duration_s", "--out", str(tmp_path / "o"))
    assert r.returncode == 2
    assert "dotted.key=value" in r.stderr


def test_unknown_cluster_is_a_usage_error(scenario_file):
    r = scalearena("run", str(scenario_file), "--cluster", "mars")
    assert r.returncode == 2
    assert "mars" in r.stderr and "Traceback" not in r.stderr


def test_kind_without_kind_on_path_exits_2_with_one_error(scenario_file, tmp_path):
    env_path = str(tmp_path / "empty-bin")  # a PATH without kind, kubectl or docker
    os.makedirs(env_path)
    r = scalearena("run", str(scenario_file), "--cluster", "kind", "--out", str(tmp_path / "o"),
                   env={"PATH": env_path})
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    assert r.stderr.count("error:") == 1 and "error: PATH: CLUSTER=kind needs" in r.stderr
    assert not (tmp_path / "o" / "report.html").exists()  # nothing ran, so no empty report


def test_run_without_out_writes_a_fresh_timestamped_folder(scenario_file, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    (work / "results").mkdir()  # an older result in results/ must not be touched or re-rendered
    (work / "results" / "keep.txt").write_text("old")
    r = scalearena("run", str(scenario_file), "--autoscaler", "static", cwd=work)
    assert r.returncode == 0, r.stderr
    (folder,) = (work / "results" / "runs").iterdir()
    assert folder.name.startswith("small-") and folder.name.endswith("Z")
    assert (folder / "suite.json").is_file() and list(folder.rglob("summary.json"))
    assert sorted(p.name for p in (work / "results").iterdir()) == ["keep.txt", "runs"]


def test_local_without_prometheus_fails_before_any_progress(scenario_file, tmp_path):
    env_path = str(tmp_path / "empty-bin")
    os.makedirs(env_path)
    r = scalearena("run", str(scenario_file), "--cluster", "local", "--out", str(tmp_path / "o"),
                   env={"PROMETHEUS_BIN": None, "PATH": env_path})  # type: ignore[dict-item]
    assert r.returncode == 2
    assert r.stderr.startswith("error: prometheus is not installed"), r.stderr  # nothing printed before it
    assert not (tmp_path / "o").exists()


def test_summary_table_shows_the_reports_cost_unit(capsys):
    from scalearena.harness.cli.progress import print_table

    def row(name: str, usd: float | None) -> RunOutcome:
        s = {"goodput_rps": 5.383, "throughput_rps": 5.522, "failures": {"rejected": 44}, "ttft_ms": {"p99": 2146.2},
             "replicas": {"mean": 8.18}, "cost": 1.466, "gpu_hours": 1.466, "cost_usd": usd}
        return RunOutcome(name, "ok", summary=s)

    print_table([row("a/hpa", 10.09), row("a/wva", 7.03)])  # priced: USD, as the pages show (was variant-cost 1.47)
    out = capsys.readouterr().out
    assert "cost USD" in out and "10.09" in out and "7.03" in out and "1.47" not in out
    print_table([row("a/hpa", 10.09), row("a/wva", None)])  # one run without prices: GPU-hours for all
    out = capsys.readouterr().out
    assert "GPU-hours" in out and "1.466" in out and "10.09" not in out


@pytest.mark.parametrize("command", ["run", "suite"])
def test_jobs_below_one_is_refused_before_anything_runs(tmp_path, command):
    # --jobs 0 ran one job silently; now click refuses it (exit 2) before the scenario is even read
    r = scalearena(command, str(tmp_path / "never-read.yaml"), "--jobs", "0", "--out", str(tmp_path / "out"))
    assert r.returncode == 2 and "'--jobs': 0 is outside 1.." in r.stderr
    assert not (tmp_path / "out").exists()


def test_the_command_group_loads_no_run_machinery():
    import subprocess
    import sys

    # `scalearena --version`, report, compare, autoscalers: the group itself must not pull in pandas, the
    # scenario models or the simulator (1.36 -> 0.33 s of CPU for --version when this was made lazy)
    code = ("import sys, scalearena.harness.cli.main; "
            "print(sorted(m for m in ('pandas', 'pyarrow', 'scalearena.harness.config.scenario', 'scalearena.harness.run.runner',"
            " 'scalearena.harness.sim.engine') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_an_infrastructure_failure_is_one_line_and_exit_1() -> None:
    """RunFailed (a component that would not start, a failed build) from any command: exit 1 (the input was fine),
    one error line, no 'internal error' and no traceback file."""
    import click

    from scalearena.contracts.errors import RunFailed
    from scalearena.harness.cli.main import ArenaGroup

    @click.group(cls=ArenaGroup)
    def group() -> None:
        pass

    @group.command("up")
    def up() -> None:
        raise RunFailed("kwok: kube-scheduler exited; command: kube-scheduler --no-such-flag | log x: unknown flag")

    r = CliRunner().invoke(group, ["up"])
    assert r.exit_code == 1
    assert r.output.strip() == ("error: kwok: kube-scheduler exited; command: kube-scheduler --no-such-flag | log x: "
                                "unknown flag")


def test_error_lines_escape_control_characters(tmp_path):
    """A value with a terminal escape (ESC [2J clears the screen), a bell or a right-to-left override, quoted into
    an error line, came out raw: pydantic's union-tag message and a missing file's name. Now each is its escape."""
    scenario = tmp_path / "s.yaml"
    scenario.write_text('autoscalers: [{kind: "hp\\x1b[2Ja"}]\nname: "x\\u202ey"\n', encoding="utf-8")
    r = scalearena("validate", str(scenario))
    assert r.returncode == 2
    assert "\x1b" not in r.stderr and "\u202e" not in r.stderr and "\x07" not in r.stderr
    assert "'hp\\x1b[2Ja'" in r.stderr and "x\\u202ey" in r.stderr, r.stderr
    missing = scalearena("run", str(tmp_path / "a\x1b[31m\x07.yaml"))
    assert missing.returncode == 2 and "a\\x1b[31m\\x07.yaml: file not found" in missing.stderr, missing.stderr
    forged = scalearena("run", str(tmp_path / "x.yaml\nerror: all runs passed"))  # a newline forged a second line
    assert forged.returncode == 2 and forged.stderr.count("\n") == 1, forged.stderr
    assert "x.yaml\\nerror: all runs passed: file not found" in forged.stderr
