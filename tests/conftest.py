"""Shared fixtures: a small valid scenario as a dict and as a file."""
from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

SMALL_SCENARIO: dict[str, Any] = {
    "name": "small",
    "duration_s": 60,
    "seed": 7,
    "cluster": {
        "variants": [
            {
                "name": "va-a100",
                "model": "m",
                "gpu": "A100-80GB",
                "cost": 1.0,
                "min_replicas": 1,
                "max_replicas": 4,
                "startup_s": 10,
                "engine": {
                    "kv_cache_blocks": 1024,
                    "block_size": 16,
                    "latency": {"kind": "constant", "ttft_ms": 100, "itl_ms": 5},
                },
            }
        ]
    },
    "workload": {
        "arrivals": {"kind": "constant", "rate_rps": 2},
        "input_tokens": {"kind": "fixed", "value": 128},
        "output_tokens": {"kind": "fixed", "value": 32},
    },
    "autoscalers": [{"kind": "static", "replicas": 2}],
}


@pytest.fixture
def scenario_dict() -> dict[str, Any]:
    return copy.deepcopy(SMALL_SCENARIO)


@pytest.fixture
def scenario_file(tmp_path: Path, scenario_dict: dict[str, Any]) -> Path:
    p = tmp_path / "small.yaml"
    p.write_text(yaml.safe_dump(scenario_dict))
    return p


def write_yaml(path: Path, data: Any) -> Path:
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.fixture(autouse=True, scope="session")
def _frontier_cache(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The oracle frontier's run cache (harness/frontier_cache.py) in a folder of the test session, never the
    user's ~/.cache; subprocesses (the CLI tests) inherit it."""
    import os

    old = os.environ.get("SCALEARENA_CACHE_DIR")
    os.environ["SCALEARENA_CACHE_DIR"] = str(tmp_path_factory.mktemp("scalearena-cache"))
    yield
    if old is None:
        os.environ.pop("SCALEARENA_CACHE_DIR", None)
    else:
        os.environ["SCALEARENA_CACHE_DIR"] = old
