"""Row types of the results files (column names fixed by docs/architecture.md, "Run records").

requests.parquet: one ``RequestRecord`` per request sent — every request is
accounted for exactly once with a final status.
timeseries.parquet: one ``TimeseriesRecord`` per variant per sample time.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Literal

Status = Literal["ok", "rejected", "killed", "timeout", "too_long", "error"]
STATUSES: tuple[str, ...] = ("ok", "rejected", "killed", "timeout", "too_long", "error")
# too_long: prompt + max_tokens can never fit (max_model_len or the whole KV cache), HTTP 400 at admission;
# kept apart from ``error`` (crashes, cut streams) because it is the workload's fault, not the system's.
FAILURE_CAUSES: tuple[str, ...] = ("rejected", "killed", "timeout", "too_long", "error")


@dataclass(slots=True)
class RequestRecord:
    request_id: int
    model: str
    arrival_s: float  # when the client sent it (scheduled time on sim)
    first_token_s: float | None  # None if no token came back
    end_s: float  # when the request finished, failed or was given up on
    input_tokens: int
    output_tokens: int  # tokens actually generated
    status: str  # one of STATUSES
    http_status: int  # 200 ok, 429 rejected, 400 too_long, 503, 500 error, 0 timeout / killed mid-stream
    variant: str | None  # variant that served it (None: rejected at the gateway)
    pod: str | None
    ttft_ms: float | None  # first_token_s - arrival_s
    itl_ms: float | None  # mean gap between output tokens after the first
    e2e_ms: float  # end_s - arrival_s
    scheduled_s: float | None = None  # open-loop schedule time (local/kube; send lag = arrival_s - scheduled_s)
    requested_output_tokens: int | None = None  # output tokens asked for (max_tokens)
    prefill_pod: str | None = None  # P/D: the pod that prefilled it (``pod`` decoded it); None: aggregated


REQUEST_COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(RequestRecord))


@dataclass(slots=True)
class TimeseriesRecord:
    t_s: float  # sample time, seconds from start
    variant: str
    model: str
    spec_replicas: int  # desired replicas on the deployment
    ready_replicas: int
    pending_replicas: int  # created, not ready yet (cold start)
    terminating_replicas: int
    kv_usage_mean: float | None  # mean vllm:kv_cache_usage_perc over ready pods (true value, not scraped)
    kv_usage_max: float | None
    waiting: int  # sum of vllm:num_requests_waiting over the variant's pods
    running: int  # sum of vllm:num_requests_running
    gpu_util_mean: float | None  # busy fraction since the previous sample, mean over ready pods
    offered_rps: float  # arrivals for this variant's model per second since the previous sample
    completed_rps: float  # requests of this variant finished ok per second since the previous sample
    router_queue: int  # requests for this model held at the gateway (no ready pod; sim: + flow-control queues)
    standby_replicas: int = 0  # warm buffer and slept pods: hold GPUs (billed), not replicas, not serving


TIMESERIES_COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(TimeseriesRecord))
