"""Suite expansion: scenarios x autoscalers x sweep values x seeds -> run folders."""
from __future__ import annotations

import pytest

from scalearena.contracts.errors import UserError
from scalearena.harness.config.suite import load_suite
from tests.conftest import write_yaml


def test_sweep_and_seeds_expand_to_one_folder_each(tmp_path, scenario_dict):
    write_yaml(tmp_path / "sc.yaml", scenario_dict)
    suite = {
        "name": "s",
        "autoscalers": ["static"],
        "seeds": [1, 2],
        "runs": [{"scenario": "sc.yaml", "sweep": {"key": "workload.arrivals.rate_rps", "values": [2, 3.5],
                                                   "label": "rate"}}],
    }
    _, plans = load_suite(write_yaml(tmp_path / "suite.yaml", suite))
    # 1 autoscaler x 2 rates x 2 seeds = 4 runs
    assert [p.rel_dir for p in plans] == [
        "small/static/rate-2/seed-1",
        "small/static/rate-2/seed-2",
        "small/static/rate-3.5/seed-1",
        "small/static/rate-3.5/seed-2",
    ]
    assert [p.scenario.workloads[0].arrivals.rate_rps for p in plans] == [2, 2, 3.5, 3.5]
    assert [p.scenario.seed for p in plans] == [1, 2, 1, 2]


def test_all_autoscalers_keeps_scenario_configs(tmp_path, scenario_dict):
    from scalearena.controllers.registry import REGISTRY

    write_yaml(tmp_path / "sc.yaml", scenario_dict)
    _, plans = load_suite(write_yaml(tmp_path / "suite.yaml", {"name": "s", "runs": [{"scenario": "sc.yaml"}]}))
    # every registered autoscaler but the P/D recipe, which needs prefill/decode pools this scenario lacks
    assert sorted(p.label for p in plans) == sorted(n for n in REGISTRY.names() if n != "llmd-token-pd")
    static = next(p for p in plans if p.label == "static")
    assert static.autoscaler.replicas == 2  # the scenario's own static config, not the default


def test_missing_scenario_file_is_named(tmp_path):
    p = write_yaml(tmp_path / "suite.yaml", {"name": "s", "runs": [{"scenario": "gone.yaml"}]})
    with pytest.raises(UserError, match="runs.0.scenario = gone.yaml"):
        load_suite(p)


def test_unknown_autoscaler_lists_allowed_names(tmp_path, scenario_dict):
    write_yaml(tmp_path / "sc.yaml", scenario_dict)
    p = write_yaml(tmp_path / "suite.yaml", {"name": "s", "autoscalers": ["hpaa"], "runs": [{"scenario": "sc.yaml"}]})
    with pytest.raises(UserError, match="unknown autoscaler 'hpaa'.*expected one of .*hpa"):
        load_suite(p)


@pytest.mark.parametrize(("seeds", "message"), [
    ([-1], "seeds.0: Input should be greater than or equal to 0"),
    ([2**64], "seeds.0: Input should be less than or equal to 9223372036854775807"),
    (list(range(1001)), "seeds: List should have at most 1000 items"),
    ([], "seeds: List should have at least 1 item"),
])
def test_seeds_are_bounded_like_a_scenarios_seed(tmp_path, scenario_dict, seeds, message):
    """A suite's seeds: passed validation with -1, 2**64 and 10**100 (issue 31) and failed in the run."""
    write_yaml(tmp_path / "sc.yaml", scenario_dict)
    p = write_yaml(tmp_path / "suite.yaml", {"name": "s", "seeds": seeds, "runs": [{"scenario": "sc.yaml"}]})
    with pytest.raises(UserError, match=message):
        load_suite(p)
