"""Console-script entry point (`scalearena`); the commands live in harness/cli.py."""
from __future__ import annotations

from scalearena.harness.cli import main

__all__ = ["main"]
