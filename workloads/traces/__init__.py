"""Trace readers (Azure LLM inference, Mooncake, BurstGPT) and their replay as arrivals."""
from __future__ import annotations

from .base import TraceRow, TraceStats
from .replay import READERS, replay

__all__ = ["READERS", "TraceRow", "TraceStats", "replay"]
