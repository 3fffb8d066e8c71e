"""Warm-start histories read from trace files for the autoscalers that forecast (``planner``).

Policies do no I/O (controllers/ may import only contracts), so the harness reads a planner's
``warmup_trace`` when the scenario loads, as it reads a ``kind: kubernetes`` autoscaler's object
files: the trace's per-interval load (workloads/traces/intervals.py, at the planner's
``throughput_adjustment_interval_s``) goes into ``warmup_trace.points``. A relative path is against
the scenario file. A bad trace is the readers' one-line error naming the file and line, with the
autoscaler it belongs to.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from scalearena.contracts.errors import UserError
from scalearena.workloads.traces.intervals import interval_history


def compile_warmup(sc: Any, base_dir: Path | None) -> Any:
    """``sc`` (a ``harness.config.scenario.Scenario``) with every planner's ``warmup_trace.points`` read."""
    if not any(getattr(a, "warmup_trace", None) is not None for a in sc.autoscalers):
        return sc
    out = []
    for i, a in enumerate(sc.autoscalers):
        tr = getattr(a, "warmup_trace", None)
        if tr is not None:
            path = Path(tr.path)
            if not path.is_absolute() and base_dir is not None:
                path = (base_dir / path).resolve()
            try:
                hist = interval_history(str(path), tr.format, a.throughput_adjustment_interval_s,
                                        time_scale=tr.time_scale, start_s=tr.start_s, window_s=tr.window_s)
            except UserError as e:
                raise UserError(f"{e.message} (warmup_trace of autoscalers.{i}, {a.label})", where=e.where,
                                expected=e.expected) from None
            points = [{"requests": h.requests, "isl": h.isl, "osl": h.osl} for h in hist]
            read = type(tr).model_validate({**tr.model_dump(), "path": str(path), "points": points})
            a = a.model_copy(update={"warmup_trace": read})
        out.append(a)
    return sc.model_copy(update={"autoscalers": out})
