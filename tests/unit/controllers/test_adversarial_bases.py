"""The adversarial suite's autoscaler fuzzing starts from scenarios that are valid as they stand.

If a base scenario is refused, every fuzzed example ends in the same clean error and the family
tests nothing: that happened when llm-d's P/D recipe joined the registry (300 of 300 examples were
exit 2 on "llmd-token-pd scales a prefill/decode pool"). So: each base loads, and together they
fuzz every registered autoscaler exactly once.
"""
from __future__ import annotations

from pathlib import Path

import yaml

from scalearena.controllers.registry import REGISTRY
from scalearena.harness.config.scenario import load_scenario
from tests.adversarial.strategies import ALL_AUTOSCALERS, PD_AUTOSCALERS


def test_autoscaler_fuzz_bases_load_and_cover_the_registry(tmp_path: Path) -> None:
    kinds: list[str] = []
    for name, base in (("aggregated", ALL_AUTOSCALERS), ("pd", PD_AUTOSCALERS)):
        path = tmp_path / f"{name}.yaml"
        path.write_text(yaml.safe_dump(base))
        scenario = load_scenario(path)  # a UserError here is what made the family vacuous
        kinds += [a.kind for a in scenario.autoscaler_configs()]
    assert sorted(kinds) == sorted(REGISTRY.names())
    assert [a["kind"] for a in PD_AUTOSCALERS["autoscalers"]] == ["llmd-token-pd"]  # the one P/D recipe today
