"""The adversarial suite (issue 17): hostile scenarios, traces and overrides never hang, crash,
exhaust memory or print a traceback; each ends in `ok` or exactly one `error:` line with exit 2.

Bounded for `make test`: a few hundred (220) derandomized examples in all (times SCALEARENA_FUZZ_SCALE,
tests/fuzz_settings.py; `make fuzz` runs 25 times as many), each run by the real CLI in
a child process under a 3 GiB address-space limit and a time limit (tests/adversarial/sandbox.py).
docs/reliability.md has the figures from the larger run of benchmarks/reliability.py.
"""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import given

from tests.adversarial.sandbox import Sandbox
from tests.adversarial.strategies import (
    BASE,
    autoscaler_overrides,
    mutated_scenarios,
    mutated_traces,
    overrides,
    trace_scenario,
)
from tests.fuzz_settings import fuzz

pytestmark = pytest.mark.slow  # sandboxed CLI processes, hang and memory limits

VALIDATE_TIMEOUT_S = 20.0  # validate streams every request of a scenario (at most MAX_REQUESTS)
RUN_TIMEOUT_S = 60.0  # a 60 s simulated run of the small scenario


@pytest.fixture(scope="module")
def sandbox():
    box = Sandbox()
    yield box
    box.close()


def _judge(outcome, what: str, names: tuple[str, ...] = ()) -> None:
    """Acceptable, and a refusal of a file's content names one of the files (issue 31: every error names its
    file; a line like "error: duration_s: ..." leaves the user to guess which of their files it means)."""
    assert outcome.acceptable, f"{outcome.kind} for {what}:\n{outcome.output[-2000:]}"
    if outcome.kind == "clean" and names:
        line = next(ln for ln in outcome.output.splitlines() if ln.startswith("error: "))
        assert any(n in line for n in names), f"the error names none of {names}: {line[:300]}"


@fuzz(80)
@given(content=mutated_scenarios())
def test_hostile_scenario_files(sandbox, tmp_path_factory, content: bytes) -> None:
    path = tmp_path_factory.mktemp("sc") / "s.yaml"
    path.write_bytes(content)
    _judge(sandbox.invoke(["validate", str(path)], VALIDATE_TIMEOUT_S), content[:300], ("s.yaml",))


@fuzz(60)
@given(trace=mutated_traces())
def test_hostile_trace_files(sandbox, tmp_path_factory, trace: tuple[str, bytes]) -> None:
    fmt, content = trace
    d = tmp_path_factory.mktemp("tr")
    (d / "t.trace").write_bytes(content)
    (d / "s.yaml").write_bytes(trace_scenario(fmt, "t.trace"))
    _judge(sandbox.invoke(["validate", str(d / "s.yaml")], VALIDATE_TIMEOUT_S), f"{fmt}: {content[:300]!r}",
           ("s.yaml", "t.trace"))


@fuzz(40)
@given(items=overrides())
def test_hostile_overrides(sandbox, tmp_path_factory, items: list[str]) -> None:
    d = tmp_path_factory.mktemp("ov")
    (d / "s.yaml").write_text(yaml.safe_dump(BASE))
    args = ["run", str(d / "s.yaml"), "--autoscaler", "static", "--out", str(d / "out")]
    for item in items:
        args += ["--set", item]
    _judge(sandbox.invoke(args, RUN_TIMEOUT_S), " ".join(items)[:300])


@fuzz(40)
@given(case=autoscaler_overrides())
def test_hostile_autoscaler_parameters(sandbox, tmp_path_factory, case: tuple[dict, str, list[str]]) -> None:
    scenario, kind, items = case
    d = tmp_path_factory.mktemp("as")
    (d / "s.yaml").write_text(yaml.safe_dump(scenario))
    args = ["run", str(d / "s.yaml"), "--autoscaler", kind, "--out", str(d / "out")]
    for item in items:
        args += ["--set", item]
    _judge(sandbox.invoke(args, RUN_TIMEOUT_S), f"{kind}: {' '.join(items)[:300]}")


def test_sandbox_reports_hangs_and_memory_exhaustion(tmp_path: Path) -> None:
    """The judge itself: a limit that is hit is observed, not fatal (a 1 MiB address space cannot even
    import the CLI, so the child dies; 0.01 s is too short for any answer)."""
    assert Sandbox(memory_limit=1024**2).invoke(["--version"], 30).kind == "crash"
    hang_box = Sandbox()
    try:
        assert hang_box.invoke(["--version"], 0.01).kind == "hang"
    finally:
        hang_box.close()
