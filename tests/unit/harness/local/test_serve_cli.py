"""serve-engine / serve-router options: bad values end in one `error:` line and exit 2, never a server;
and the router's endpoints documents are checked before they are applied.

Before: malformed `--engine-spec` / `--router-spec` JSON, a JSON array there, or an out-of-range
router field were exit 3 (internal error, traceback logged); an out-of-range engine field printed
pydantic's multi-line dump; a file that is not a tokenizer.json was exit 3; `--time-scale nan`
started a server, and `--time-scale inf` one that spun at 50 % CPU and outlived SIGTERM; an unknown
`--gpu` was accepted. `serve` is replaced by a stub that fails the test if a server would start.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from scalearena.contracts.errors import UserError
from scalearena.harness.cli import main as cli
from scalearena.harness.local import engine_server, router_server
from scalearena.harness.local.openai_api import PromptCounter

ENGINE = ["serve-engine", "--model", "m", "--port", "0"]
ROUTER = ["serve-router", "--port", "0"]


@pytest.fixture(autouse=True)
def started(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The configs a server would have started with (the stub returns at once)."""
    seen: list[Any] = []

    async def serve(cfg: Any) -> None:
        seen.append(cfg)
    monkeypatch.setattr(engine_server, "serve", serve)
    monkeypatch.setattr(router_server, "serve", serve)
    return seen


@pytest.mark.parametrize(("argv", "line"), [
    (ENGINE + ["--engine-spec", "{bad"], "error: --engine-spec: not valid JSON: Expecting property name enclosed "
     "in double quotes at column 2 (expected a scenario's engine section as a JSON object)"),
    (ENGINE + ["--engine-spec", "[1]"],
     "error: --engine-spec: got an array (expected a scenario's engine section as a JSON object)"),
    (ENGINE + ["--engine-spec", '{"max_num_seqs": 1e9}'],  # contracts/limits: at most 65,536 sequences
     "error: --engine-spec: max_num_seqs: Input should be less than or equal to 65536; got 1000000000.0"),
    (ENGINE + ["--max-num-seqs", "0"],  # a flag merged into the spec is named by its field
     "error: serve-engine flags: max_num_seqs: Input should be greater than or equal to 1; got 0"),
    (ENGINE + ["--gpu", "XYZ", "--engine-spec", '{"latency": {"kind": "roofline", "model_shape": "qwen3-0.6b"}}'],
     "error: --gpu: unknown GPU type 'XYZ' (expected one of A100-80GB, A100-40GB, H100-SXM, H100-PCIE, H200, "
     "L40S, L4)"),
    (ENGINE + ["--gpu-spec", "7"], "error: --gpu-spec: got a number (expected a scenario's cluster.gpu_types "
     "entry as a JSON object)"),
    (ENGINE + ["--kv-transfer", '{"bandwidth_gbps": -1}'],
     "error: --kv-transfer: bandwidth_gbps: Input should be greater than 0; got -1"),
    (ENGINE + ["--time-scale", "nan"], "error: --time-scale: got nan (expected a number > 0 and <= 1000)"),
    (ENGINE + ["--time-scale", "inf"], "error: --time-scale: got inf (expected a number > 0 and <= 1000)"),
    (ENGINE + ["--failure-injection-rate", "nan"],
     "error: --failure-injection-rate: got nan (expected a percentage from 0 to 100)"),
    (ENGINE + ["--stream-tick", "0"], "error: --stream-tick: got 0 s (expected at least 1 ms)"),
    (ROUTER + ["--header-timeout", "0s"], "error: --header-timeout: got 0 s (expected at least 1 ms)"),
    (ROUTER + ["--router-spec", "{x"], "error: --router-spec: not valid JSON: Expecting property name enclosed "
     "in double quotes at column 2 (expected a scenario's router section as a JSON object)"),
    (ROUTER + ["--router-spec", '{"refresh_s": -1}'],
     "error: --router-spec: refresh_s: Input should be greater than 0; got -1"),
    (ROUTER + ["--time-scale", "1001"], "error: --time-scale: got 1001.0 (expected a number > 0 and <= 1000)"),
])
def test_bad_server_options_are_one_error_line(started: list[Any], argv: list[str], line: str) -> None:
    r = CliRunner().invoke(cli.main, argv)
    assert r.exit_code == 2, r.output
    assert r.output.strip() == line
    assert started == []


def test_a_file_that_is_not_a_tokenizer_is_a_user_error(tmp_path: Path) -> None:
    bad = tmp_path / "tokenizer.json"
    bad.write_text("not json")
    with pytest.raises(UserError, match=r"^--tokenizer .*tokenizer\.json: the tokenizers library cannot read it: "
                       r".*\(expected a Hugging Face tokenizer\.json\)$"):
        PromptCounter(str(bad))


def test_a_gpu_name_the_constant_model_never_reads_is_not_checked(started: list[Any]) -> None:
    """The kube backend passes a scenario's own GPU type by name only (no --gpu-spec) to constant-latency
    engines; refusing it there would break those runs."""
    r = CliRunner().invoke(cli.main, ENGINE + ["--gpu", "my-own-gpu"])
    assert r.exit_code == 0, r.output
    assert started[0].gpu == "my-own-gpu"


def test_good_options_reach_the_server(started: list[Any]) -> None:
    """The limits' own edges start a server (so the cases above fail on their option, not on a broken command)."""
    r = CliRunner().invoke(cli.main, ENGINE + ["--time-scale", "1000", "--gpu", "H100", "--failure-injection-rate",
                                               "100", "--engine-spec", '{"max_num_seqs": 65536}'])
    assert r.exit_code == 0, r.output
    (cfg,) = started
    assert (cfg.time_scale, cfg.gpu, cfg.failure_injection_rate, cfg.engine_spec.max_num_seqs) == \
        (1000.0, "H100", 100.0, 65536)


def test_endpoint_documents_are_checked_before_they_are_applied() -> None:
    from scalearena.harness.local.router_server import endpoint_entries

    good = {"pod": "p0", "variant": "v", "model": "m", "url": "http://x", "state": "ready", "role": "decode"}
    assert endpoint_entries({"endpoints": [good]}) == [good]
    assert endpoint_entries({}) == []  # no engines (yet)
    for doc, what in (([good], 'expected {"endpoints": [...]}'), ({"endpoints": good}, 'expected {"endpoints"'),
                      ({"endpoints": [{**good, "model": None}]}, "entry 0:"),
                      ({"endpoints": [good, {**good, "state": 5}]}, "entry 1:"),
                      ({"endpoints": [{**good, "role": "both-ish"}]}, "role both|prefill|decode")):
        with pytest.raises(ValueError, match=re.escape(what)):
            endpoint_entries(doc)


def test_kind_passes_a_scenario_gpu_types_datasheet_to_the_roofline_engine(started: list[Any]) -> None:
    """On kind a roofline variant runs serve-engine; with the scenario's own GPU type it was given the
    name only and refused it at start (pods crash-looping). The rendered args now carry --gpu-spec,
    and those very args start the engine with that datasheet."""
    from scalearena.harness.config.scenario import scenario_from_data
    from scalearena.harness.kube.render import render
    from scalearena.harness.kube.scenario import variant_objects
    from tests.conftest import SMALL_SCENARIO

    mine = {"peak_tflops": {"bf16": 500}, "hbm_tb_s": 4.0, "memory_gib": 96, "tdp_w": 600, "price_per_hour": 3.0}
    v = {**SMALL_SCENARIO["cluster"]["variants"][0], "gpu": "my-gpu",
         "engine": {"latency": {"kind": "roofline", "model_shape": "qwen3-0.6b"}}}
    sc = scenario_from_data({**SMALL_SCENARIO, "cluster": {"variants": [v], "gpu_types": {"my-gpu": mine}}}, "t.yaml")
    root = Path(__file__).resolve().parents[4]
    (dep,) = [o for o in variant_objects(sc, render(root / "manifests/overlays/kind")) if o["kind"] == "Deployment"
              and o["metadata"]["labels"].get("scalearena.io/component") == "variant"]
    args = [a.replace("$(POD_NAME)", "pod-0") for a in dep["spec"]["template"]["spec"]["containers"][0]["args"]]
    r = CliRunner().invoke(cli.main, ["serve-engine", *args])
    assert r.exit_code == 0, r.output
    gpu = started[0].gpu
    # 500 TFLOP/s bf16, 4 TB/s, 96 GiB as given (hardware.GPUTypeSpec.to_gpu)
    assert (gpu.name, gpu.peak_bf16_flops, gpu.hbm_bytes_per_s, gpu.memory_gib) == ("my-gpu", 500e12, 4e12, 96)
