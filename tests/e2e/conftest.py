"""The kwok tier's one fixture: the upstream programs built from source (skipped, or failed under
SCALEARENA_REQUIRE_KWOK=1, where Go is missing)."""
from __future__ import annotations

import pytest

from tests.e2e.kwokkit import need_go


@pytest.fixture(scope="module")
def tools_built() -> None:
    from scalearena.harness.kube import tools

    need_go()
    tools.ensure(progress=print)
