"""scalearena: a benchmark harness for autoscalers of LLM inference serving."""
from __future__ import annotations

__version__ = "0.1.0"
