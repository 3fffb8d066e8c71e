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
    """The oracle frontier's run cache (harness/sizing/frontier_cache.py) in a folder of the test session, never the
    user's ~/.cache; subprocesses (the CLI tests) inherit it."""
    import os

    old = os.environ.get("SCALEARENA_CACHE_DIR")
    os.environ["SCALEARENA_CACHE_DIR"] = str(tmp_path_factory.mktemp("scalearena-cache"))
    yield
    if old is None:
        os.environ.pop("SCALEARENA_CACHE_DIR", None)
    else:
        os.environ["SCALEARENA_CACHE_DIR"] = old


_REAL_HOME: dict[str, str | None] = {}


def pytest_configure(config: pytest.Config) -> None:
    """The test session's HOME is a folder in the system temp folder, so nothing a test starts (Ray's auth token,
    Chromium's profile, kubectl's discovery cache) writes into the user's home. What the tests need from the
    real home is pinned first: the built Kubernetes tools (SCALEARENA_TOOLS_DIR) and Go's caches and settings
    (GOCACHE, GOMODCACHE, GOPATH, GOENV), each only where the environment does not set it already."""
    import os
    import tempfile

    real = Path.home()
    pinned = {"SCALEARENA_TOOLS_DIR": real / ".cache" / "scalearena" / "bin", "GOCACHE": real / ".cache" / "go-build",
              "GOMODCACHE": real / "go" / "pkg" / "mod", "GOPATH": real / "go", "GOENV": real / ".config" / "go" / "env"}
    for key, path in pinned.items():
        os.environ.setdefault(key, str(path))
    for key in ("HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME"):
        _REAL_HOME[key] = os.environ.get(key)
    home = tempfile.mkdtemp(prefix="scalearena-test-home-")
    os.environ["HOME"] = home
    for key, sub in (("XDG_CACHE_HOME", ".cache"), ("XDG_CONFIG_HOME", ".config"), ("XDG_DATA_HOME", ".local/share")):
        os.environ[key] = str(Path(home) / sub)


def pytest_unconfigure(config: pytest.Config) -> None:
    import os
    import shutil

    home = os.environ.get("HOME", "")
    for key, value in _REAL_HOME.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    if Path(home).name.startswith("scalearena-test-home-"):
        shutil.rmtree(home, ignore_errors=True)
