"""Scenario schema: defaults, overrides, and one clear error per mistake."""
from __future__ import annotations

from pathlib import Path

import pytest

from scalearena.contracts.errors import UserError
from scalearena.harness.config.overrides import apply_overrides
from scalearena.harness.config.scenario import load_scenario, scenario_from_data

REPO = Path(__file__).resolve().parents[4]


def test_valid_scenario_loads_with_defaults(scenario_dict):
    sc = scenario_from_data(scenario_dict, "x.yaml")
    v = sc.cluster.variants[0]
    assert v.start_replicas == 1  # initial_replicas null -> min_replicas
    assert v.termination_grace_s == 30.0
    assert sc.metrics.scrape_interval_s == 15.0
    assert sc.router.admission.kv_threshold == 0.8
    assert [a.label for a in sc.autoscaler_configs()] == ["static"]


@pytest.mark.parametrize(
    ("mutate", "path_fragment", "message_fragment"),
    [
        (lambda d: d.update(bogus=1), "bogus", "unknown field"),
        (lambda d: d["cluster"]["variants"][0].update(max_replicas="many"), "cluster.variants.0.max_replicas", "integer"),
        (lambda d: d["workload"]["arrivals"].update(rate_rps=-1), "workload.arrivals.rate_rps: ", "greater than 0"),
        (lambda d: d["autoscalers"].append({"kind": "nope"}), "autoscalers.1", "'wva'"),
        (lambda d: d.pop("duration_s"), "duration_s", "required field is missing"),
        (lambda d: d["cluster"]["variants"][0].update(min_replicas=5), "cluster.variants.0", "exceeds max_replicas"),
    ],
)
def test_schema_errors_name_the_field(scenario_dict, mutate, path_fragment, message_fragment):
    mutate(scenario_dict)
    with pytest.raises(UserError) as ei:
        scenario_from_data(scenario_dict, "bad.yaml")
    text = ei.value.render()
    assert text.startswith("bad.yaml: ")
    assert path_fragment in text
    assert message_fragment in text


def test_overrides_address_nested_keys_and_list_items(scenario_dict):
    out = apply_overrides(scenario_dict, ["cluster.variants.0.max_replicas=9", "workload.arrivals.rate_rps=3.5"])
    assert out["cluster"]["variants"][0]["max_replicas"] == 9
    assert out["workload"]["arrivals"]["rate_rps"] == 3.5
    assert scenario_dict["cluster"]["variants"][0]["max_replicas"] == 4  # the input is not mutated


def test_override_without_equals_is_a_user_error(scenario_dict):
    with pytest.raises(UserError, match="dotted.key=value"):
        apply_overrides(scenario_dict, ["cluster.variants.0.max_replicas"])


def test_override_list_index_errors_say_what_the_list_holds(scenario_dict):
    n = len(scenario_dict["cluster"]["variants"])  # the fixture's variants: indexes 0..n-1
    with pytest.raises(UserError) as e:
        apply_overrides(scenario_dict, [f"cluster.variants.{n + 4}.max_replicas=12"])
    assert f"cluster.variants has {n} item{'s' * (n != 1)}, no index {n + 4}" in e.value.render()
    assert f"expected an index 0..{n - 1}" in e.value.render()
    with pytest.raises(UserError, match="cluster.variants is a list, 'x' is not an index"):
        apply_overrides(scenario_dict, ["cluster.variants.x.max_replicas=12"])


def test_invalid_yaml_names_the_line(tmp_path):
    p = tmp_path / "broken.yaml"
    p.write_text("name: x\ncluster: [\n")
    with pytest.raises(UserError) as ei:
        load_scenario(p)
    assert f"{p}:" in ei.value.render()
    assert "not valid YAML" in ei.value.render()


def test_seed_override(scenario_file):
    assert load_scenario(scenario_file, seed=99).seed == 99


def test_shipped_scenarios_and_suites_validate():
    from scalearena.harness.config.suite import load_suite

    for p in sorted((REPO / "workloads" / "scenarios").glob("*.yaml")):
        load_scenario(p)
    for p in sorted((REPO / "workloads" / "suites").glob("*.yaml")):
        load_suite(p)


def test_unknown_gpu_and_model_shape_are_named(scenario_dict):
    scenario_dict["cluster"]["variants"][0]["gpu"] = "TPU-v9"
    with pytest.raises(UserError, match=r"cluster.variants.0.gpu: unknown GPU type 'TPU-v9'.*H100-SXM"):
        scenario_from_data(scenario_dict, "bad.yaml")
    scenario_dict["cluster"]["variants"][0]["gpu"] = "H100"  # alias
    scenario_dict["cluster"]["variants"][0]["engine"]["latency"] = {"kind": "roofline", "model_shape": "gpt-9"}
    with pytest.raises(UserError, match=r"model_shape: unknown model shape 'gpt-9'"):
        scenario_from_data(scenario_dict, "bad.yaml")


def test_paper_scenarios_pin_the_emulator_queue_limit():
    # the engine's default follows vLLM (unbounded waiting queue); the paper's experiments ran
    # llm-d-inference-sim with --max-waiting-queue-length 1000 and keep it explicitly
    from pathlib import Path

    import yaml

    root = Path(__file__).resolve().parents[4] / "workloads"
    suite = yaml.safe_load((root / "suites" / "paper.yaml").read_text())
    names = {Path(r["scenario"]).stem for r in suite["runs"]}
    assert names >= {"exp1-staircase", "exp2-cost-aware", "physical-validation"}
    for name in names:
        for v in yaml.safe_load((root / "scenarios" / f"{name}.yaml").read_text())["cluster"]["variants"]:
            assert v["engine"]["max_waiting_queue"] == 1000, (name, v["name"])


@pytest.mark.parametrize(("per_variant", "message"), [
    ({"nope": 3}, "per_variant names no variant of the cluster: 'nope'"),
    ({"VARIANT": -2}, "per_variant.VARIANT: Input should be greater than or equal to 0"),
])
def test_a_static_pools_counts_name_real_variants_and_are_not_negative(scenario_dict, per_variant, message):
    """Both were accepted: an unknown name silently ignored, a negative count clamped (issue 31 item 4)."""
    variant = scenario_dict["cluster"]["variants"][0]["name"]
    scenario_dict["autoscalers"] = [{"kind": "static", "per_variant": {
        (variant if k == "VARIANT" else k): v for k, v in per_variant.items()}}]
    with pytest.raises(UserError, match=message.replace("VARIANT", variant)):
        scenario_from_data(scenario_dict, "x.yaml")
