"""Console-script entry point (`scalearena`).

The command group lives in harness/cli/main.py; commands of packages that sit above the harness in the
layering (paper/, which plans its runs through the harness) are mounted here, at the top, so the
harness never names a package that imports it (tests/unit/test_layering.py holds that).
"""
from __future__ import annotations

from scalearena.harness.cli.main import main

main.add_lazy_commands({"paper": "scalearena.paper.cli:paper"})

__all__ = ["main"]
