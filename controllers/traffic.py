"""What one adjustment interval's traffic was: request count and mean prompt / output lengths.

Dynamo's planner reads these from its frontend's Prometheus metrics each interval (request count,
average ISL, average OSL). Here they are PromQL through ``view.metrics.query`` (the in-memory
engine in sim, the real Prometheus on local / kind / cluster), from one of two sources:

- ``gateway``: the router's own counters, llm-d / Gateway API Inference Extension EPP
  ``inference_objective_request_total`` and the ``inference_objective_input_tokens`` /
  ``_output_tokens`` histograms' _sum / _count, labelled ``model_name``. They count arrivals,
  which is what demand is. Where they are absent (the simulator and serve-router do not export
  them) the engine source is used and the reason says so.
- ``engine``: vLLM's counters over the model's pods: ``vllm:request_success_total`` (completions),
  ``vllm:prompt_tokens_total`` and ``vllm:generation_tokens_total``. Completions lag arrivals
  while a backlog grows (and saturate at capacity, so a planner reading them alone could never
  see demand above what it serves), so the request count is completions plus the growth of the
  backlog over the interval: in-flight requests on the pods (running + waiting) and those held at
  the gateway, now minus at the previous observation (requests are conserved; failures are not
  counted). ISL = prompt tokens / completions, OSL = generated tokens / completions.
"""
from __future__ import annotations

from dataclasses import dataclass

from scalearena.contracts.errors import MetricsUnavailable
from scalearena.controllers.base import ClusterView
from scalearena.controllers.signals import query_rows


@dataclass(frozen=True)
class Traffic:
    requests: float  # requests in the interval
    isl: float | None  # mean prompt tokens (None: nothing completed to measure it)
    osl: float | None
    source: str  # gateway | engine
    note: str = ""


def _sum(view: ClusterView, expr: str) -> float | None:
    rows = query_rows(view, expr)
    if not rows:
        return None
    return sum(v for _, v in rows if v == v)


def _ratio(num: float | None, den: float | None) -> float | None:
    return num / den if num is not None and den else None


def backlog(view: ClusterView, model: str) -> float:
    """Requests of ``model`` in flight on its ready pods plus those held at the gateway."""
    inflight = sum(p.running + p.waiting for v in view.variants if v.model == model for p in v.pods)
    return float(inflight + view.router_queue.get(model, 0))


def observe(view: ClusterView, model: str, window_s: float, source: str, prev_backlog: float | None) -> Traffic:
    """The last ``window_s`` of ``model``'s traffic; raises ``MetricsUnavailable`` when Prometheus cannot answer."""
    w = f"{max(1, round(window_s))}s"
    sel = f'{{model_name="{model}"}}'
    if source == "gateway":
        req = _sum(view, f"sum(increase(inference_objective_request_total{sel}[{w}]))")
        if req is not None:
            isl = _ratio(_sum(view, f"sum(increase(inference_objective_input_tokens_sum{sel}[{w}]))"),
                         _sum(view, f"sum(increase(inference_objective_input_tokens_count{sel}[{w}]))"))
            osl = _ratio(_sum(view, f"sum(increase(inference_objective_output_tokens_sum{sel}[{w}]))"),
                         _sum(view, f"sum(increase(inference_objective_output_tokens_count{sel}[{w}]))"))
            return Traffic(req, isl, osl, "gateway")
    done = _sum(view, f"sum(increase(vllm:request_success_total{sel}[{w}]))") or 0.0
    isl = _ratio(_sum(view, f"sum(increase(vllm:prompt_tokens_total{sel}[{w}]))"), done)
    osl = _ratio(_sum(view, f"sum(increase(vllm:generation_tokens_total{sel}[{w}]))"), done)
    now = backlog(view, model)
    growth = 0.0 if prev_backlog is None else now - prev_backlog
    note = "no gateway request counter; engine completions + backlog growth" if source == "gateway" else ""
    return Traffic(max(0.0, done + growth), isl, osl, "engine", note)


__all__ = ["Traffic", "observe", "backlog", "MetricsUnavailable"]
