"""Tunable parameters: declared on the config models (contracts/tunable.py), adjusted by --param (harness/tuning/space.py)."""
from __future__ import annotations

from typing import Literal

import pytest
from pydantic import BaseModel, Field

from scalearena.contracts.errors import UserError
from scalearena.contracts.tunable import Tunable, declared, tune, tune_choices
from scalearena.controllers.hpa import HPAConfig
from scalearena.controllers.keda import KEDAConfig
from scalearena.controllers.kubernetes import KubernetesConfig
from scalearena.controllers.registry import REGISTRY
from scalearena.controllers.wva.config import WVAConfig
from scalearena.harness.tuning.space import apply, build_space, field_problem


@pytest.mark.parametrize("name", REGISTRY.names())
def test_every_declared_range_is_accepted_by_its_model_and_holds_the_default(name: str) -> None:
    cfg = REGISTRY.default_config(name)
    for t in cfg.tunables():
        ends = t.choices if t.kind == "categorical" else (t.low, t.high)
        for end in ends:
            assert field_problem(cfg, t.path, end) is None, (name, t.path, end)
        assert t.default is None or t.contains(t.default), (name, t.path, t.default, t.describe())


@pytest.mark.parametrize("name", REGISTRY.names())
def test_every_registered_autoscaler_declares_a_space(name: str) -> None:
    assert REGISTRY.default_config(name).tunables()


def test_the_issue_named_parameters_are_declared() -> None:
    # issue 15: "WVA tau_kv, gamma_kv; HPA targets and stabilisation windows; SLO-aware theta_up/theta_dn;
    # planner predictor"
    def paths(name: str) -> set[str]:
        return {t.path for t in REGISTRY.default_config(name).tunables()}

    assert {"tau_kv", "gamma_kv"} <= paths("wva")
    assert {"metrics.0.average_value", "downscale_stabilization_s",
            "behavior.scale_up.stabilization_window_seconds"} <= paths("hpa")
    assert {"env.THETA_UP", "env.THETA_DN"} <= paths("llmd-slo")
    assert {"predictor.kind", "predictor.log1p"} <= paths("planner")


def test_a_recipe_placeholder_range_is_read_as_its_declared_kind_and_kept_within_its_tune_entry() -> None:
    # llmd-slo declares THETA_UP 0.3 .. 1.2 (env "0.55"); --param reads it as the declared float, not as text
    cfg = REGISTRY.default_config("llmd-slo")
    space = {t.path: t for t in build_space(cfg, ["env.THETA_UP=0.35:0.5", "env.SMOOTHING=30s,60s"]).params}
    up = space["env.THETA_UP"]
    assert (up.kind, up.low, up.high, up.default) == ("float", 0.35, 0.5, 0.55)
    assert space["env.SMOOTHING"].choices == ("30s", "60s")  # undeclared text placeholder: a choice
    assert apply(cfg, {"env.THETA_UP": 0.4}).env["THETA_UP"] == "0.4"
    # the model checks env against its tune: entry, so a range beyond it is refused before anything runs
    with pytest.raises(UserError) as err:
        build_space(cfg, ["env.THETA_UP=0.1:0.5"])
    assert str(err.value) == ("--param env.THETA_UP=0.1:0.5: llmd-slo refuses env.THETA_UP = 0.1: tune: env "
                              "THETA_UP = 0.1 lies outside 0.3 .. 1.2 (expected a range within its tune: entry "
                              "THETA_UP; widen that entry under the autoscaler in the scenario to search further)")
    wider = type(cfg).model_validate({"tune": {"THETA_UP": {"low": 0.1, "high": 1.2}}})  # merged on the recipe's
    assert build_space(wider, ["env.THETA_UP=0.1:0.5"]).params[0].low == 0.1
    with pytest.raises(UserError) as err:  # a value the model cannot read is refused, with its reason
        build_space(cfg, ["env.THETA_UP=a,b"])
    assert str(err.value) == ("--param env.THETA_UP=a,b: llmd-slo refuses env.THETA_UP = 'a': "
                              "tune: env THETA_UP = 'a' is not a float")


class _Toy(BaseModel):
    a: int = Field(default=3, description="an int", json_schema_extra=tune(1, 9))
    b: float | None = Field(default=None, description="a float or unset", json_schema_extra=tune(0.1, 10.0, log=True))
    c: Literal["x", "y"] = Field(default="x", description="a choice", json_schema_extra=tune_choices("x", "y"))
    d: float = Field(default=1.0, description="not tunable")


def test_declared_reads_kind_range_and_default_from_the_field() -> None:
    got = {t.path: t for t in declared(_Toy(a=4), prefix="toy.")}
    assert sorted(got) == ["toy.a", "toy.b", "toy.c"]  # d declares no range
    assert (got["toy.a"].kind, got["toy.a"].low, got["toy.a"].high, got["toy.a"].default) == ("int", 1, 9, 4)
    assert (got["toy.b"].kind, got["toy.b"].log, got["toy.b"].default) == ("float", True, None)
    assert (got["toy.c"].kind, got["toy.c"].choices) == ("categorical", ("x", "y"))
    assert got["toy.b"].describe() == "0.1 .. 10 (log)"


def test_declarations_refuse_a_range_that_cannot_be_searched() -> None:
    with pytest.raises(ValueError, match="low < high"):
        tune(2, 2)
    with pytest.raises(ValueError, match="log-scale"):
        tune(0, 1, log=True)
    with pytest.raises(ValueError, match="two choices"):
        tune_choices("only")


def test_hpa_space_has_one_target_per_metric_scaled_to_that_metric() -> None:
    cfg = HPAConfig.model_validate({"metrics": [
        {"type": "Pods", "metric": "vllm:num_requests_waiting", "average_value": 3},
        {"type": "Pods", "metric": "vllm:kv_cache_usage_perc", "average_value": 0.5},
        {"type": "External", "signal": "queue", "value": 10}]})
    space = {t.path: t for t in cfg.tunables()}
    # waiting: 3 / 4 = 0.75 .. 3 x 4 = 12 on a log scale; KV usage: 0.1 .. 1 linear; External value 10: 2.5 .. 40
    assert (space["metrics.0.average_value"].low, space["metrics.0.average_value"].high) == (0.75, 12.0)
    assert space["metrics.0.average_value"].log
    assert (space["metrics.1.average_value"].low, space["metrics.1.average_value"].high) == (0.1, 1.0)
    assert (space["metrics.2.value"].low, space["metrics.2.value"].high, space["metrics.2.value"].default) \
        == (2.5, 40.0, 10)
    assert space["behavior.scale_up.stabilization_window_seconds"].default == 0  # the API-server default
    assert "downscale_stabilization_s" in space  # behavior leaves the scale-down window unset


def test_hpa_with_an_explicit_scale_down_window_tunes_that_window_instead() -> None:
    cfg = HPAConfig.model_validate({"behavior": {"scale_down": {"stabilization_window_seconds": 120}}})
    paths = {t.path: t.default for t in cfg.tunables()}
    assert paths["behavior.scale_down.stabilization_window_seconds"] == 120
    assert "downscale_stabilization_s" not in paths  # ignored by the HPA while the window is set


def test_keda_with_triggers_tunes_each_threshold_not_the_shorthand() -> None:
    cfg = KEDAConfig.model_validate({"triggers": [{"name": "q", "query": "queue", "threshold": 2},
                                                  {"name": "r", "query": "running_sum", "threshold": 16}]})
    paths = {t.path: (t.low, t.high) for t in cfg.tunables()}
    assert paths["triggers.0.threshold"] == (0.5, 8.0)  # 2 / 4 .. 2 x 4
    assert paths["triggers.1.threshold"] == (4.0, 64.0)
    assert "threshold" not in paths


def test_kubernetes_placeholders_are_tunable_through_env(tmp_path) -> None:
    cfg = KubernetesConfig.model_validate({"objects": ["x.yaml"], "env": {"THETA_UP": "0.55", "N": "3"},
                                           "tune": {"THETA_UP": {"low": 0.4, "high": 0.8},
                                                    "N": {"low": 1, "high": 8, "type": "int"}}})
    got = {t.path: t for t in cfg.tunables()}
    assert (got["env.THETA_UP"].default, got["env.THETA_UP"].kind) == (0.55, "float")
    assert (got["env.N"].default, got["env.N"].kind) == (3, "int")
    patched = apply(cfg, {"env.THETA_UP": 0.61, "env.N": 5})
    assert patched.env == {"THETA_UP": "0.61", "N": "5"}  # text, as envsubst writes it
    with pytest.raises(ValueError, match="not a key of env"):
        KubernetesConfig.model_validate({"objects": ["x.yaml"], "tune": {"X": {"low": 0, "high": 1}}})
    with pytest.raises(ValueError, match="outside 0.6 .. 0.8"):
        KubernetesConfig.model_validate({"objects": ["x.yaml"], "env": {"X": "0.5"},
                                         "tune": {"X": {"low": 0.6, "high": 0.8}}})


def test_param_items_replace_pin_and_add_parameters() -> None:
    cfg = WVAConfig(gamma_kv=0.3)
    space = build_space(cfg, ["tau_kv=0.6:0.9", "tau_q=5", "period_s=10:60:log", "mode=constrained,unconstrained"])
    got = {t.path: t for t in space.params}
    assert (got["tau_kv"].low, got["tau_kv"].high, got["tau_kv"].default) == (0.6, 0.9, 0.8)
    assert "tau_q" not in got and space.fixed == {"tau_q": 5}
    assert (got["period_s"].low, got["period_s"].high, got["period_s"].log) == (10, 60, True)
    assert got["mode"].choices == ("constrained", "unconstrained")
    assert space.default()["gamma_kv"] == 0.3  # the scenario's value, not the model's 0.1


@pytest.mark.parametrize(("item", "message"), [
    ("tau_kv=0.5:1.5", "--param tau_kv=0.5:1.5: wva refuses tau_kv = 1.5: Input should be less than or equal to 1"),
    ("min_non_saturated_for_scale_down=1:4", "refuses min_non_saturated_for_scale_down = 1: Input should be greater"),
    ("min_non_saturated_for_scale_down=2.5:4", "is a whole number"),
    ("tau_kvv=0.1:0.2", "wva has no parameter 'tau_kvv'; did you mean 'tau_kv'?"),
    ("tau_kv=0.9:0.5", "low 0.9 must be below high 0.5"),
    ("tau_kv=a:1", "'a' is not a finite number"),
    ("tau_kv", "missing '='"),
    ("tau_q=0:20:log", "a log range needs low > 0"),
    ("period_s=0.001:1", "shorter than the limit of 0.01 s"),
])
def test_a_range_the_model_refuses_names_the_parameter_and_the_reason(item: str, message: str) -> None:
    with pytest.raises(UserError) as err:
        build_space(WVAConfig(), [item])
    assert message in str(err.value)


def test_apply_sets_nested_paths_and_reports_a_refused_combination() -> None:
    hpa = apply(HPAConfig(), {"metrics.1.average_value": 0.7, "behavior.scale_up.stabilization_window_seconds": 30})
    assert hpa.metrics[1].average_value == 0.7
    assert hpa.behavior is not None and hpa.behavior.scale_up.stabilization_window_seconds == 30
    with pytest.raises(ValueError, match=r"gamma_kv \(0.5\) must be below tau_kv \(0.5\)"):
        apply(WVAConfig(), {"tau_kv": 0.5, "gamma_kv": 0.5})


def test_tunable_checks_its_own_range() -> None:
    with pytest.raises(ValueError, match="low <= high"):
        Tunable("x", "float", 1.0, low=2.0, high=1.0)
    t = Tunable("x", "int", 3, low=1, high=5)
    assert t.contains(1) and t.contains(5) and not t.contains(6) and not t.contains(True)
