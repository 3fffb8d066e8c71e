"""What the CLI tells a user who asks or mistypes: the autoscalers table, its detail view, "did you mean"."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

from scalearena.contracts.errors import UserError
from scalearena.contracts.suggest import closest
from scalearena.controllers.kpa import KPAConfig
from scalearena.harness.cli.main import main
from scalearena.harness.config.scenario import scenario_from_data
from scalearena.harness.config.schema_help import fields_at, params, unit_of


def _invoke(*args: str):
    return CliRunner().invoke(main, list(args), env={"COLUMNS": "80"}, terminal_width=80)


def test_closest_only_offers_near_spellings():
    assert closest("max_replica", ["max_replicas", "min_replicas", "seed"]) == "max_replicas"
    assert closest("WVA", ["wva", "hpa"]) == "wva"  # case-insensitive
    assert closest("seed", ["slo", "duration_s"]) is None  # "seed" vs "slo": ratio 0.57 < 0.75


def test_closest_takes_one_typo_in_a_short_name():
    # ratio 2*2/6 = 0.67 < 0.75 for each, but one letter off: changed, dropped, added, swapped
    assert closest("hpx", ["apa", "hpa", "kpa"]) == "hpa"  # "apa" and "kpa" are two letters off
    assert closest("px", ["pa", "wva"]) is None  # under 3 letters (ratio 2*1/4 = 0.5): one letter is half
    assert closest("kpaa", ["kpa"]) == "kpa" and closest("xpa", ["kpa"]) == "kpa"
    assert closest("hap", ["hpa"]) == "hpa"  # swapped neighbours
    assert closest("wvb", ["kpa", "hpa"]) is None  # two letters off every option


def test_unknown_autoscaler_name_with_a_typo_in_three_letters():
    r = _invoke("autoscalers", "hpx")
    assert r.exit_code == 2
    assert "unknown autoscaler 'hpx'; did you mean 'hpa'?" in r.output


def test_unknown_field_suggests_the_field_valid_at_that_place(scenario_dict):
    scenario_dict["cluster"]["variants"][0]["max_replica"] = 3
    with pytest.raises(UserError, match=r"cluster\.variants\.0\.max_replica: unknown field; "
                                        r"did you mean 'max_replicas'\?"):
        scenario_from_data(scenario_dict, "s.yaml")


def test_unknown_autoscaler_field_suggestion_follows_the_union_tag(scenario_dict):
    scenario_dict["autoscalers"] = [{"kind": "kpa", "stable_windw_s": 30}]
    with pytest.raises(UserError, match="did you mean 'stable_window_s'"):
        scenario_from_data(scenario_dict, "s.yaml")


def test_fields_at_walks_lists_and_tags():
    from scalearena.harness.config.scenario import Scenario

    assert "max_replicas" in fields_at(Scenario, ["cluster", "variants", "0", "x"])
    assert "stable_window_s" in fields_at(Scenario, ["autoscalers", "0", "kpa", "x"])
    assert "tau_kv" not in fields_at(Scenario, ["autoscalers", "0", "kpa", "x"])  # a wva field


def test_unknown_autoscaler_name_suggests():
    r = _invoke("autoscalers", "kpaa")
    assert r.exit_code == 2
    assert "unknown autoscaler 'kpaa'; did you mean 'kpa'?" in r.output


def test_params_flatten_nested_models_with_units():
    by_path = {p.path: p for p in params(KPAConfig)}
    assert by_path["stable_window_s"].default == "60.0" and by_path["stable_window_s"].unit == "s"
    assert by_path["panic_window_percentage"].unit == "%"
    assert "kind" not in by_path and "name" not in by_path
    assert unit_of("ttft_ms") == "ms" and unit_of("tau_kv") == ""


def test_autoscalers_table_fits_80_columns_without_truncation():
    r = _invoke("autoscalers")
    assert r.exit_code == 0, r.output
    assert max(len(line) for line in r.output.splitlines()) <= 80
    assert "…" not in r.output
    for name in ("wva", "hpa", "keda", "multimetric", "kpa", "static", "oracle"):
        assert f"│ {name} " in r.output


def test_autoscaler_detail_lists_every_parameter_with_default_and_source():
    r = _invoke("autoscalers", "kpa")
    assert r.exit_code == 0, r.output
    assert "knative/serving" in r.output  # the upstream named in the policy's module docstring
    assert "…" not in r.output and max(len(line) for line in r.output.splitlines()) <= 80
    for p in params(KPAConfig):
        assert p.path in r.output
    assert "│ stable_window_s" in r.output and "│ 60.0" in r.output


def test_param_types_read_as_written_in_python():
    from scalearena.controllers.hpa import HPAConfig

    by_path = {p.path: p for p in params(HPAConfig)}
    # list[Annotated[PodsMetric | ExternalMetric, Field(discriminator="type")]]: the Annotated wrapper and
    # module paths dropped (it printed as "list[Annotated[scalearena.controllers.hpa.engine.PodsMetric | ...")
    assert by_path["metrics"].type == "list[PodsMetric | ExternalMetric]"
    assert by_path["period_s"].type == "float"


def test_help_lists_lazy_commands_as_click_would_without_importing_them():
    import subprocess
    import sys

    import click

    from scalearena.cli import main as full  # with paper/ added
    from scalearena.harness.cli.docs import docstring_of

    ctx = click.Context(full)
    for name, spec in full.lazy_commands.items():  # the docstring read from source = click's own short help
        for limit in (45, 61):
            assert click.Command(name, help=docstring_of(spec)).get_short_help_str(limit) == \
                full.get_command(ctx, name).get_short_help_str(limit), name
    code = ("import sys; from click.testing import CliRunner; from scalearena.cli import main; "
            "r = CliRunner().invoke(main, ['--help']); assert r.exit_code == 0 and 'serve-router' in r.output; "
            "print(sorted(m for m in ('optuna', 'kubernetes', 'pandas', 'scalearena.harness.tuning.cli') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"  # --help imported none of them (1.8 s -> 0.2 s of CPU)


def test_a_subcommand_that_fails_to_import_is_an_internal_error_not_an_unknown_command(tmp_path, monkeypatch):
    """Issue 29: a broken import in a lazily loaded subcommand used to read "No such command 'report'"."""
    import tempfile

    from click.testing import CliRunner

    from scalearena.harness.cli.main import main

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the internal-error log lands here
    monkeypatch.setattr(main, "lazy_commands", {**main.lazy_commands,
                                                "report": "scalearena.reports.no_such_module:report"})
    r = CliRunner().invoke(main, ["report", "x"])
    assert r.exit_code == 3, r.output
    assert "No such command" not in r.output
    assert "internal error: ModuleNotFoundError: No module named 'scalearena.reports.no_such_module'" in r.output
    logs = list(tmp_path.glob("scalearena-internal-error-*.log"))
    assert len(logs) == 1 and "Traceback" in logs[0].read_text()
