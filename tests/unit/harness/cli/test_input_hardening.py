"""Issue 17 items 4, 5, 6, 9: hostile or absurd input ends in one `error:` line and exit 2, fast.

Run in-process through click's CliRunner (a subprocess per case would cost seconds each); the
alias bomb is the 1.6 KB "billion laughs" shape from the issue, 9 levels of 9 aliases = 9**9 values.
"""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from scalearena.harness.cli import main as cli
from scalearena.harness.config import scenario
from tests.conftest import write_yaml


def invoke(*args: str):
    return CliRunner().invoke(cli.main, list(args), catch_exceptions=False)


def one_error(result, *fragments: str) -> None:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    for f in fragments:
        assert f in result.output, (f, result.output)


def alias_bomb() -> str:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, 10):
        refs = ", ".join([f"*a{i - 1}"] * 9)
        lines.append(f"a{i}: &a{i} [{refs}]")
    return "\n".join(lines) + "\n"


def test_alias_bomb_is_refused_before_expansion(tmp_path: Path) -> None:
    p = tmp_path / "bomb.yaml"
    p.write_text(alias_bomb())
    assert p.stat().st_size < 2000
    one_error(invoke("validate", str(p)), str(p), "too many values after expanding aliases")


def test_a_few_aliases_are_fine(tmp_path: Path, scenario_dict) -> None:
    text = yaml.safe_dump(scenario_dict).replace("engine:", "engine: &eng", 1)
    p = tmp_path / "ok.yaml"
    p.write_text(text + "x-unused: *eng\n")  # an alias used once (it is an unknown key, so exit 2 names it)
    one_error(invoke("validate", str(p)), "x-unused: unknown field")


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (b"&a [*a]\n", "an alias refers to a mapping or list that contains it"),
        (b"[" * 5000 + b"]" * 5000, "nested"),
        (b"name: caf\xe9\n", "not UTF-8 text: byte 0xe9 at offset 9"),
        (b"seed: " + b"7" * 5000 + b"\n", "unreadable value"),
    ],
)
def test_unreadable_yaml_is_one_error(tmp_path: Path, content: bytes, fragment: str) -> None:
    p = tmp_path / "bad.yaml"
    p.write_bytes(content)
    one_error(invoke("validate", str(p)), str(p), fragment)


@pytest.mark.parametrize(
    ("path", "value", "fragment"),
    [
        (("duration_s",), 1e12, "duration_s"),
        (("duration_s",), float("inf"), "finite number"),
        (("workload", "arrivals", "rate_rps"), float("inf"), "rate_rps"),
        (("workload", "arrivals", "rate_rps"), 1e6, "exceeds the limit of 10000"),
        (("metrics", "scrape_interval_s"), 1e-9, "shorter than the limit of 0.01 s"),
        (("cluster", "variants", 0, "min_replicas"), 100000, "replicas exceeds the limit of 1000"),
        (("cluster", "variants", 0, "cost"), float("inf"), "cost"),
        (("autoscalers", 0), {"kind": "hpa", "period_s": 1e-9}, "period_s"),
        (("workload", "input_tokens", "value"), 10**9, "input_tokens"),
        (("faults",), [{"kind": "metrics_outage", "start_s": 50, "end_s": 10}], "end_s 10 must be after start_s 50"),
        (("seed",), 2**70, "seed"),
        # derived costs (issue 31): each field within its own limit, their product or steps not
        (("workload", "arrivals"), {"kind": "flash_crowd", "base_rps": 10000, "factor": 1000, "start_s": 10,
                                    "duration_s": 5}, "workload 0 peaks at 10,000,000 requests/s; the limit is 10,000"),
        (("router", "refresh_s"), 1e-9, "router.refresh_s: 1e-09 s is shorter than the limit of 0.001 s"),
        # KEDA polling at 0.01 s (the minimum interval) over a week: 604,800 / 0.01 = 60,480,000 steps (and the
        # drain's) > 5,000,000; it used to validate and then hang
        (("autoscalers", 0), {"kind": "keda", "polling_interval_s": 0.01}, "autoscaler keda polling_interval_s 0.01 s"),
    ],
)
def test_absurd_values_are_refused_by_the_schema(tmp_path, scenario_dict, path, value, fragment) -> None:
    node = scenario_dict
    for k in path[:-1]:
        node = node.setdefault(k, {}) if isinstance(node, dict) else node[k]
    node[path[-1]] = value
    if path == ("autoscalers", 0) and value.get("kind") == "keda":
        scenario_dict["duration_s"] = 604_800  # a week: the most a scenario may last
    p = tmp_path / "absurd.yaml"
    p.write_text(yaml.safe_dump(scenario_dict).replace("1.0e+12", "1e12"))
    one_error(invoke("validate", str(p)), str(p), fragment)


def test_request_count_over_the_limit_is_refused(tmp_path, scenario_dict) -> None:
    # 9000 rps (under the per-rate limit of 10000) x 3000 s = 27,000,000 requests > MAX_REQUESTS 20,000,000
    scenario_dict["workload"]["arrivals"]["rate_rps"] = 9000
    scenario_dict["duration_s"] = 3000
    one_error(invoke("validate", str(write_yaml(tmp_path / "big.yaml", scenario_dict))), "27,000,000 requests")


def test_diurnal_nan_phase_is_refused(tmp_path, scenario_dict) -> None:
    scenario_dict["workload"]["arrivals"] = {"kind": "diurnal", "mean_rps": 2, "amplitude_rps": 1,
                                             "period_s": 60, "phase_s": float("nan")}
    one_error(invoke("validate", str(write_yaml(tmp_path / "nan.yaml", scenario_dict))), "phase_s")


@pytest.mark.parametrize(
    ("override", "fragment"),
    [("duration_s=[1", "--set duration_s"), ("duration_s=.inf", "duration_s"), ("duration_s=1e12", "a week")],
)
def test_bad_set_values_are_one_error(scenario_file, tmp_path, override, fragment) -> None:
    one_error(invoke("run", str(scenario_file), "--set", override, "--out", str(tmp_path / "o")), fragment)
    assert not (tmp_path / "o").exists()  # refused before anything was written


@pytest.mark.parametrize("name", ["[/x]", ":x: ^[a-z0-9]*$", "[bold]b[/bold]"])
def test_user_text_is_never_markup(tmp_path, scenario_dict, name) -> None:
    scenario_dict["name"] = name
    r = invoke("validate", str(write_yaml(tmp_path / "m.yaml", scenario_dict)))
    one_error(r, f"got {name!r}")  # printed as written: no MarkupError, no emoji, no lost brackets


def test_a_closed_stdout_ends_quietly_with_141(scenario_file, monkeypatch) -> None:
    def gone(*a, **k):
        raise BrokenPipeError(32, "Broken pipe")  # what print() raises under `| head` once head has quit

    monkeypatch.setattr(scenario, "load_scenario", gone)  # validate imports it when it runs
    r = invoke("validate", str(scenario_file))
    assert r.exit_code == 141  # 128 + SIGPIPE, as a shell reports cat's
    assert "internal error" not in r.output and "error" not in r.output


def test_unexpected_exception_is_internal_error_exit_3(scenario_file, monkeypatch) -> None:
    def boom(*a, **k):
        raise ZeroDivisionError("a bug, not bad input")

    monkeypatch.setattr(scenario, "load_scenario", boom)
    r = invoke("validate", str(scenario_file))
    assert r.exit_code == 3
    assert r.output.startswith("error: internal error: ZeroDivisionError: a bug, not bad input")
    log = r.output.split("traceback in ")[1].split(";")[0]
    text = Path(log).read_text()
    assert "Traceback" in text and "ZeroDivisionError" in text and "boom" in text
    Path(log).unlink()


def test_unwritable_out_is_one_error(scenario_file) -> None:
    one_error(invoke("run", str(scenario_file), "--out", "/proc/x"), "--out /proc/x: cannot write results there")


def test_corrupt_parquet_under_report_is_one_error(tmp_path) -> None:
    import json

    (tmp_path / "summary.json").write_text(json.dumps({"scenario": "s", "autoscaler": "a", "complete": True}))
    (tmp_path / "requests.parquet").write_bytes(b"not parquet")
    one_error(invoke("report", str(tmp_path)), "requests.parquet: cannot read parquet")
