"""The simulator's compiled core (harness/sim/native.py) against its pure-Python reference.

The same scenarios run in two processes, one importing the compiled modules (``SCALEARENA_NATIVE=1``)
and one the ``.py`` files (``SCALEARENA_NATIVE=0``); every file of every run must be equal byte for
byte. The scenarios cover what the engine, router and event loop do: constant and roofline latency,
saturation and flow-control admission, prefix caching, prefill/decode disaggregation, cold-start
phases with node pools, sleep mode and a warm buffer, pod crashes, metrics outages and slow cold
starts. Also: a build is used only when it matches the sources there now (no build, a stale one,
another Python, a missing file: the pure modules run), and the Makefile rebuilds it when any of
its modules changes."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from scalearena.harness.sim import native

ROOT = Path(__file__).resolve().parents[4]
SCENARIOS = ROOT / "workloads" / "scenarios"
FAULTS = ("faults=[{kind: pod_crash, at_s: 200}, {kind: metrics_outage, start_s: 250, end_s: 320},"
          " {kind: slow_cold_start, start_s: 100, end_s: 400, factor: 2}]")
CASES = [  # (scenario, autoscaler, overrides)
    ("exp1-staircase.yaml", "wva", [FAULTS]),
    ("exp2-cost-aware.yaml", "hpa", ["duration_s=300"]),
    ("hetero-roofline.yaml", "wva", ["duration_s=300"]),
    ("flow-control-overload.yaml", "static", ["duration_s=120"]),
    ("prefix-cache-mooncake.yaml", "static", []),
    ("pd-disaggregated.yaml", "hpa", ["duration_s=300"]),
    ("cold-start-nodes.yaml", "hpa", ["duration_s=900", "cluster.variants.0.sleep_mode={level: 1, max_sleeping: 4}",
                                      "cluster.variants.0.warm_buffer=1"]),
]
RUNNER = """
import json, sys
from pathlib import Path
from scalearena.harness.sim import native
from scalearena.harness.sim.backend import SimBackend
from scalearena.harness.config.scenario import load_scenario
from scalearena.reports.results import RunWriter

out, cases = Path(sys.argv[1]), json.loads(sys.argv[2])
for i, (path, label, overrides) in enumerate(cases):
    sc = load_scenario(path, overrides)
    writer = RunWriter(out / str(i), {})
    SimBackend().run(sc, sc.autoscaler(label), writer, None)
    writer.finish()
print(json.dumps({"active": native.active()}))
"""


def run_cases(out: Path, mode: str) -> bool:
    cases = [(str(SCENARIOS / f), label, overrides) for f, label, overrides in CASES]
    env = {**os.environ, native.ENV: mode}
    r = subprocess.run([sys.executable, "-c", RUNNER, str(out), json.dumps(cases)], env=env, capture_output=True,
                       text=True, check=False, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-4000:]
    return bool(json.loads(r.stdout.strip().splitlines()[-1])["active"])


@pytest.mark.slow
def test_compiled_core_gives_the_pure_python_results_byte_for_byte(tmp_path: Path) -> None:
    ok, why = native.check()
    if not ok:
        pytest.skip(f"no usable compiled build: {why}")
    assert run_cases(tmp_path / "compiled", "1") is True
    assert run_cases(tmp_path / "pure", "0") is False
    compiled = sorted(p.relative_to(tmp_path / "compiled") for p in (tmp_path / "compiled").rglob("*") if p.is_file())
    pure = sorted(p.relative_to(tmp_path / "pure") for p in (tmp_path / "pure").rglob("*") if p.is_file())
    assert compiled == pure
    assert len({p.parts[0] for p in compiled}) == len(CASES)
    differ = [str(p) for p in compiled if (tmp_path / "compiled" / p).read_bytes() != (tmp_path / "pure" / p).read_bytes()]
    assert not differ, f"compiled and pure-Python runs differ in {differ}"
    for i in range(len(CASES)):  # each case really served requests
        assert json.loads((tmp_path / "pure" / str(i) / "summary.json").read_text())["requests_ok"] > 0


def fake_build(out: Path) -> None:
    """A build directory whose manifest matches the sources there now, with empty extension files."""
    manifest = {"python": sys.version, "ext_suffix": native._SUFFIX, "mypy": "test",
                "modules": {m: native.digest(native.source(m).read_bytes()) for m in native.MODULES},
                "typed": {m: native.digest(native.source(m).read_bytes()) for m in native.TYPED}}
    (out / "lib").mkdir(parents=True)
    (out / "manifest.json").write_text(json.dumps(manifest))
    for name in (native._SHARED, *native._FULL):
        f = native._ext(name, out)
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_bytes(b"")


def test_a_build_runs_only_when_it_matches_the_sources(tmp_path: Path) -> None:
    assert native.check(tmp_path / "none") == (False, "not built (make venv builds it)")
    fake_build(tmp_path / "b")
    assert native.check(tmp_path / "b")[0]
    manifest = json.loads((tmp_path / "b" / "manifest.json").read_text())
    stale = {**manifest, "modules": {**manifest["modules"], "harness.sim.engine.core": native.digest(b"old")}}
    (tmp_path / "b" / "manifest.json").write_text(json.dumps(stale))
    assert native.check(tmp_path / "b") == (
        False, "stale: harness/sim/engine/core.py changed since the build (make venv rebuilds it)")
    # a module read for its types only (RequestSpec, whose fields the compiled code reads by position)
    stale = {**manifest, "typed": {**manifest["typed"], "workloads.base": native.digest(b"old")}}
    (tmp_path / "b" / "manifest.json").write_text(json.dumps(stale))
    assert native.check(tmp_path / "b") == (
        False, "stale: workloads/base.py changed since the build (make venv rebuilds it)")
    (tmp_path / "b" / "manifest.json").write_text(json.dumps({k: v for k, v in manifest.items() if k != "typed"}))
    assert native.check(tmp_path / "b")[1] == "built for another module list (make venv rebuilds it)"
    (tmp_path / "b" / "manifest.json").write_text(json.dumps({**manifest, "python": "2.7"}))
    assert not native.check(tmp_path / "b")[0]
    (tmp_path / "b" / "manifest.json").write_text(json.dumps(manifest))
    native._ext("scalearena.harness.sim.router", tmp_path / "b").unlink()
    assert native.check(tmp_path / "b")[1].startswith("incomplete build")


def test_this_process_runs_the_build_only_when_it_is_current() -> None:
    import scalearena.harness.sim.engine.core as core

    use, _ = native.decision()
    assert native.active() is use
    assert core.__file__.endswith(native._SUFFIX) is use
    if os.environ.get(native.ENV) != "0":
        assert use is native.check()[0]


def test_the_makefile_rebuilds_when_a_compiled_module_changes() -> None:
    make = (ROOT / "Makefile").read_text().replace("\\\n", " ")  # continuation lines joined
    listed = re.search(r"^NATIVE_SRC := (.*)$", make, re.M)
    assert listed is not None
    files = set(listed.group(1).split())
    assert {str(native.source(m).relative_to(ROOT)) for m in (*native.MODULES, *native.TYPED)} <= files


def test_the_build_says_what_it_waits_for_on_stderr(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    from scalearena.harness.sim import native_build

    before = []  # what stderr held when the compiler started

    def compiler(cmd: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
        # the mypyc step, faked: it writes the (empty) extension files into the build's lib folder, cmd[3]
        before.append(capsys.readouterr().err)
        for name in (native._SHARED, *native._FULL):
            f = native._ext(name, Path(cmd[3]).parent)
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_bytes(b"")
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(native_build.subprocess, "run", compiler)
    monkeypatch.setattr(native_build, "OUT", tmp_path / "native")
    assert native_build.main([]) == 0
    assert before == ["native: building the compiled simulator core with mypyc (harness/sim/native.py; first run only,"
                      " and again when one of its modules changes; ~20 s)...\n"]
    err = capsys.readouterr().err.splitlines()  # after the compiler: one line, done and its time
    assert len(err) == 1
    assert re.fullmatch(rf"native: built in \d+\.\d s: compiled \(mypyc [^,]+, {len(native.MODULES)} modules\), "
                        rf"in {re.escape(str(tmp_path / 'native'))}", err[0]), err
    assert native.check(tmp_path / "native")[0]
