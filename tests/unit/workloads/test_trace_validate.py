"""Issue 17 items 4, 6, 9: `validate` reads the whole trace (streaming) and names file:line for the
first bad row; broken bytes are errors, not crashes; a trace that replays nothing is refused."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from scalearena.contracts.errors import UserError
from scalearena.harness.cli import main as cli
from scalearena.workloads.spec import TraceArrivals
from scalearena.workloads.traces import TraceStats, replay
from tests.conftest import write_yaml

AZURE_HEAD = b"TIMESTAMP,ContextTokens,GeneratedTokens\n"


def azure_rows(n: int) -> bytes:
    # one row per second from 18:17:00; n <= 60 keeps them in one minute
    return b"".join(b"2023-11-16 18:17:%02d.0000000,100,10\n" % i for i in range(n))


def trace_scenario(tmp_path: Path, scenario_dict, content: bytes, fmt: str = "azure", **arrivals) -> Path:
    (tmp_path / "t.trace").write_bytes(content)
    scenario_dict["workload"] = {"arrivals": {"kind": "trace", "format": fmt, "path": "t.trace", **arrivals}}
    return write_yaml(tmp_path / "s.yaml", scenario_dict)


def validate(path: Path):
    return CliRunner().invoke(cli.main, ["validate", str(path)], catch_exceptions=False)


def test_good_trace_is_read_whole(tmp_path, scenario_dict) -> None:
    r = validate(trace_scenario(tmp_path, scenario_dict, AZURE_HEAD + azure_rows(30)))
    assert r.exit_code == 0, r.output
    assert "traces: 30 rows" in r.output


@pytest.mark.parametrize(
    ("content", "fmt", "where", "fragment"),
    [
        # rows at t = 0..59 s are lines 2..61; line 62 (bad) lies past the 60 s run: only a whole read finds it
        (AZURE_HEAD + azure_rows(60) + b"yesterday,1,1\n", "azure", "t.trace:62", "TIMESTAMP"),
        (AZURE_HEAD + azure_rows(3) + b"2023-11-16 18:17:04.0,10\xff0,1\n", "azure", "t.trace:5:25", "not UTF-8"),
        # byte 25: "2023-11-16 18:17:04.0" is 21 bytes, then "," (22), "10" (23-24), 0xff (25)
        (AZURE_HEAD + azure_rows(2) + b"2023-11-16 18:17:03.0,9999999,1\n", "azure", "t.trace:4",
         "exceeds the limit of 1048576"),
        (AZURE_HEAD + b"x" * (2 * 1024 * 1024), "azure", "t.trace:2", "line longer than"),
        (b'{"timestamp": 1, "input_length": 5, "output_length": 1}\n{"timestamp": Infinity, "input_length": 5, '
         b'"output_length": 1}\n', "mooncake", "t.trace:2", "timestamp"),
        (b'{"timestamp": ' + b"9" * 5000 + b', "input_length": 5, "output_length": 1}\n', "mooncake",
         "t.trace:1", "unreadable JSON value"),
        (b"[" * 100000 + b"\n", "mooncake", "t.trace:1", "(json)"),
        (AZURE_HEAD, "azure", "t.trace", "the trace has no rows"),
        (b"", "burstgpt", "t.trace:1", "missing from the header"),
    ],
)
def test_broken_trace_is_one_error_with_line(tmp_path, scenario_dict, content, fmt, where, fragment) -> None:
    r = validate(trace_scenario(tmp_path, scenario_dict, content, fmt))
    assert r.exit_code == 2, r.output
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), r.output
    assert where in r.output and fragment in r.output, r.output


def test_replay_of_an_empty_window_is_an_error(tmp_path) -> None:
    # rows at 0..9 s; the window starts at 100 s, so nothing is replayed: an error, not a run of 0 requests
    path = tmp_path / "t.csv"
    path.write_bytes(AZURE_HEAD + azure_rows(10))
    spec = TraceArrivals(kind="trace", path=str(path), format="azure", start_s=100)
    stats = TraceStats(path=str(path))
    with pytest.raises(UserError, match=r"no row of the trace falls in the replay window.*10 rows read"):
        list(replay(spec, 60.0, np.random.default_rng(0), stats))


def test_suite_validate_reads_its_scenarios_traces(tmp_path, scenario_dict) -> None:
    # the suite's scenario replays a trace whose 4th line is broken: validating the suite names it
    trace_scenario(tmp_path, scenario_dict, AZURE_HEAD + azure_rows(2) + b"not a time,1,1\n")
    suite = tmp_path / "suite.yaml"
    suite.write_text("name: t\nautoscalers: [static]\nruns:\n  - scenario: s.yaml\n")
    r = validate(suite)
    assert r.exit_code == 2 and "t.trace:4" in r.output and "TIMESTAMP" in r.output, r.output
