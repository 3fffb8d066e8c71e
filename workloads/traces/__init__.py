"""Trace readers (Azure LLM inference, Mooncake, BurstGPT) and their replay as arrivals."""
from __future__ import annotations

from scalearena.workloads.traces.base import TraceRow, TraceStats
from scalearena.workloads.traces.replay import READERS, replay

__all__ = ["READERS", "TraceRow", "TraceStats", "replay"]
