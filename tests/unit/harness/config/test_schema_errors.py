"""Validation errors name the field as the user's file spells it: harness/config/schema_help.py ``validated``.

pydantic puts the tag of a tagged-union member (``roofline``, ``inline``) or a member's type name (``int``,
``list[int]``) into an error's location; the user never wrote those, so the path leaves them out, while a
real field that happens to share a tag's name (SteppedArrivals.poisson vs the ``poisson`` arrivals) stays.
"""
from __future__ import annotations

from typing import Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field

from scalearena.contracts.errors import UserError
from scalearena.harness.config.scenario import Scenario
from scalearena.harness.config.schema_help import validated
from tests.conftest import write_yaml

ROOFLINE_NO_HIDDEN = {"kind": "roofline", "model_shape": {"num_layers": 32, "num_heads": 32, "num_kv_heads": 8,
                                                          "intermediate_size": 14336, "vocab_size": 128256}}


def _message(data: dict) -> str:
    with pytest.raises(UserError) as e:
        validated(Scenario, data, "bad.yaml")
    return e.value.render()


def test_inline_shape_path_has_no_union_tags(scenario_dict) -> None:
    scenario_dict["cluster"]["variants"][0]["engine"]["latency"] = ROOFLINE_NO_HIDDEN
    # pydantic's loc: cluster.variants.0.engine.latency.roofline.model_shape.inline.hidden_size; the only
    # missing field of the inline shape is hidden_size (name, head_dim and the MoE fields have defaults)
    assert _message(scenario_dict) == \
        "bad.yaml: cluster.variants.0.engine.latency.model_shape.hidden_size: required field is missing"


def test_wrong_type_for_a_tagged_member_ends_at_the_field(scenario_dict) -> None:
    scenario_dict["cluster"]["variants"][0]["engine"]["latency"] = {"kind": "roofline", "model_shape": 5}
    # pydantic's loc ends in the Tag: ...latency.roofline.model_shape.inline
    assert _message(scenario_dict) == ("bad.yaml: cluster.variants.0.engine.latency.model_shape: Input should be "
                                       "a valid dictionary or instance of ModelShapeSpec; got 5")


def test_a_field_named_like_a_tag_is_kept(scenario_dict) -> None:
    # 'poisson' is both the kind of PoissonArrivals and a field of SteppedArrivals
    scenario_dict["workload"]["arrivals"] = {"kind": "stepped", "steps": [{"duration_s": 60, "rate_rps": 1}],
                                         "poisson": "maybe"}
    assert _message(scenario_dict) == ("bad.yaml: workload.arrivals.poisson: Input should be a valid boolean, unable "
                                       "to interpret input; got 'maybe'")
    scenario_dict["workload"]["arrivals"] = {"kind": "poisson", "rate_rps": -1}
    assert _message(scenario_dict) == "bad.yaml: workload.arrivals.rate_rps: Input should be greater than 0; got -1"


def test_unknown_key_below_a_tagged_union_is_kept_with_its_suggestion(scenario_dict) -> None:
    scenario_dict["cluster"]["variants"][0]["engine"]["latency"] = {"kind": "roofline", "model_shape": "llama3-8b",
                                                                    "tpp": 1}
    assert _message(scenario_dict) == \
        "bad.yaml: cluster.variants.0.engine.latency.tpp: unknown field; did you mean 'tp'?; got 1"
    scenario_dict["cluster"]["variants"][0]["engine"]["latency"] = {"kind": "constant"}
    scenario_dict["autoscalers"] = [{"kind": "static", "replicas": 2}, {"kind": "static", "replica": 2}]
    # loc autoscalers.1.static.replica: the list index stays, the autoscaler's kind goes
    assert _message(scenario_dict) == (
        "bad.yaml: autoscalers.1.replica: unknown field; did you mean 'replicas'?; got 2")


class _Leaf(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["leaf"] = Field(description="tag")
    size: int = Field(description="a number")


class _Tree(BaseModel):
    model_config = ConfigDict(extra="forbid")
    width: int | list[int] = Field(description="a smart union: pydantic names its members int and list[int]")
    leaves: dict[str, _Leaf] = Field(default_factory=dict, description="keys are the user's names")
    span: tuple[int, str] = Field(default=(0, ""), description="a fixed tuple")


def test_smart_union_member_names_dropped_mapping_keys_and_indexes_kept() -> None:
    with pytest.raises(UserError) as e:
        validated(_Tree, {"width": "wide"}, "tree.yaml")
    # loc width.int, then width.list[int]: the same field failing as each union member is named once
    assert e.value.render() == ("tree.yaml: width: Input should be a valid integer, unable to parse string as an "
                                "integer; got 'wide'")
    with pytest.raises(UserError) as e:
        validated(_Tree, {"width": "wide", "span": [1, 2]}, "tree.yaml")
    # two fields wrong: both named, the second after the count of the others
    assert e.value.render() == ("tree.yaml: width: Input should be a valid integer, unable to parse string as an "
                                "integer; got 'wide'; 1 more: span.1: Input should be a valid string; got 2")
    with pytest.raises(UserError) as e:
        validated(_Tree, {"width": 1, "leaves": {"int": {"kind": "leaf", "size": "x"}}}, "tree.yaml")
    assert e.value.render().startswith("tree.yaml: leaves.int.size: Input should be a valid integer")  # a key named int
    with pytest.raises(UserError) as e:
        validated(_Tree, {"width": 1, "span": [1, 2]}, "tree.yaml")
    assert e.value.render() == "tree.yaml: span.1: Input should be a valid string; got 2"


def test_validated_returns_the_model_and_the_cli_exits_2(tmp_path, scenario_dict) -> None:
    assert validated(_Tree, {"width": [1, 2]}, "tree.yaml") == _Tree(width=[1, 2])
    from click.testing import CliRunner

    from scalearena.harness.cli.main import main

    scenario_dict["cluster"]["variants"][0]["engine"]["latency"] = ROOFLINE_NO_HIDDEN
    p = write_yaml(tmp_path / "bad.yaml", scenario_dict)
    r = CliRunner().invoke(main, ["validate", str(p)])
    assert r.exit_code == 2
    assert r.stderr == f"error: {p}: cluster.variants.0.engine.latency.model_shape.hidden_size: required field is " \
                       "missing\n"
