"""Backend registry: strict options from flags, environment variables only as documented overrides."""
from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from scalearena.contracts.errors import UserError
from scalearena.harness.cli.main import main
from scalearena.harness.run.registry import (
    BACKENDS,
    KubeOptions,
    LocalOptions,
    build_backend,
    parse_option_flags,
    resolve_options,
)

ROOT = Path(__file__).resolve().parents[4]


def test_every_option_is_described_and_every_model_forbids_unknown_keys() -> None:
    for entry in BACKENDS.values():
        assert entry.options.model_config.get("extra") == "forbid", entry.name
        for name, field in entry.options.model_fields.items():
            assert field.description, f"{entry.name}.{name}"
        assert set(entry.env) <= set(entry.options.model_fields), entry.name


def test_flags_win_over_the_environment_which_wins_over_the_default() -> None:
    env = {"SCALEARENA_TIME_SCALE": "5"}
    assert resolve_options("local", {}, env={}) == LocalOptions(time_scale=1.0)
    assert resolve_options("local", {}, env=env) == LocalOptions(time_scale=5.0)
    assert resolve_options("local", {"time_scale": "2.5"}, env=env) == LocalOptions(time_scale=2.5)
    got = resolve_options("kind", {"gateway": "epp"}, env={"SCALEARENA_LOAD": "in-cluster", "SCALEARENA_GATEWAY": "x"})
    assert got == KubeOptions(gateway="epp", load="in-cluster")


def test_unknown_option_names_it_and_the_known_ones() -> None:
    with pytest.raises(UserError) as e:
        resolve_options("local", {"time_scael": "5"}, env={})
    text = e.value.render()
    assert "time_scael" in text and "--backend-option" in text and "time_scale, api, prompt" in text
    with pytest.raises(UserError, match="unknown option 'time_scale' for --cluster sim"):
        resolve_options("sim", {"time_scale": "5"}, env={})


def test_a_bad_environment_value_names_the_variable() -> None:
    with pytest.raises(UserError) as e:
        resolve_options("local", {}, env={"SCALEARENA_TIME_SCALE": "0"})
    assert "$SCALEARENA_TIME_SCALE time_scale" in e.value.render()
    with pytest.raises(UserError, match="--backend-option gateway"):
        resolve_options("cluster", {"gateway": "nginx"}, env={})


def test_flag_parsing_and_unknown_cluster() -> None:
    assert parse_option_flags(["time_scale=5", "api=chat"]) == {"time_scale": "5", "api": "chat"}
    with pytest.raises(UserError, match="KEY=VALUE"):
        parse_option_flags(["time_scale"])
    with pytest.raises(UserError, match="one of sim, local, kind, kwok, cluster"):
        build_backend("moon")


def test_built_backends_carry_the_options() -> None:
    local = build_backend("local", {"time_scale": "4", "api": "chat"})
    assert (local.time_scale, local.api, local.prompt, local.locust_workers) == (4.0, "chat", "words", 1)
    assert build_backend("local", {"locust_workers": "3"}).locust_workers == 3


def test_locust_workers_from_the_flag_or_the_environment_within_bounds() -> None:
    assert resolve_options("local", {}, env={"SCALEARENA_LOCUST_WORKERS": "4"}) == LocalOptions(locust_workers=4)
    assert resolve_options("local", {"locust_workers": "2"}, env={"SCALEARENA_LOCUST_WORKERS": "4"}).locust_workers == 2
    for bad in ("0", "65", "two"):
        with pytest.raises(UserError, match="locust_workers"):
            resolve_options("local", {"locust_workers": bad}, env={})
    with pytest.raises(UserError, match="unknown option 'locust_workers' for --cluster sim"):
        resolve_options("sim", {"locust_workers": "2"}, env={})
    kube = build_backend("cluster", {"image_prefix": "reg.example/org", "gateway": "epp", "keep": "true"})
    assert (kube.mode, kube.image_prefix, kube.gateway, kube.keep) == ("cluster", "reg.example/org", "epp", True)


def test_cli_refuses_an_unknown_backend_option_before_any_run(tmp_path: Path) -> None:
    out = tmp_path / "out"
    r = CliRunner().invoke(main, ["run", str(ROOT / "workloads/scenarios/exp1-staircase.yaml"), "--out", str(out),
                                  "--backend-option", "speed=9"])
    assert r.exit_code == 2
    assert "unknown option 'speed' for --cluster sim" in r.output
    assert not out.exists()  # refused before the results folder was made
