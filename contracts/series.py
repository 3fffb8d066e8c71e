"""Prometheus series names and label sets, as the real serving stack exposes them.

One list for every side: the simulator's scrapes, serve-engine's /metrics,
the PromQL the autoscalers and the harness send, and docs/metrics.md all
use these names, so a query means the same on every backend. ``CATALOGUE``
lists every native series once with its type, its labels (those the exporter
sets plus those the scrape adds: ``namespace``, ``pod``, ``service``) and the
upstream that defines it; docs/metrics.md carries the same table
(``catalogue_markdown``; tests/unit/test_series_catalogue.py keeps them equal).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# The namespace label every backend's series carry (the kube backend's namespace; sim and local use the
# same value), so an object's ``namespace="${NAMESPACE}"`` selector means the same everywhere.
NAMESPACE = "scalearena"

# vLLM (vllm/v1/metrics/loggers.py) and llm-d-inference-sim, which copies the names.
KV_USAGE = "vllm:kv_cache_usage_perc"
NUM_WAITING = "vllm:num_requests_waiting"
NUM_RUNNING = "vllm:num_requests_running"
REQUEST_SUCCESS = "vllm:request_success_total"
CACHE_CONFIG = "vllm:cache_config_info"
TTFT_HIST = "vllm:time_to_first_token_seconds"
ITL_HIST = "vllm:inter_token_latency_seconds"
E2E_HIST = "vllm:e2e_request_latency_seconds"
PROMPT_TOKENS = "vllm:prompt_tokens_total"
GENERATION_TOKENS = "vllm:generation_tokens_total"
PREFIX_CACHE_QUERIES = "vllm:prefix_cache_queries_total"
PREFIX_CACHE_HITS = "vllm:prefix_cache_hits_total"
# Busy fraction per scrape interval (DCGM_FI_DEV_GPU_UTIL/100 on real GPUs).
GPU_UTIL = "gpu_utilization"

# llm-d EPP (llm-d router, pkg/epp/metrics; llm-d guides/workload-autoscaling).
EPP_QUEUE_SIZE = "llm_d_epp_flow_control_queue_size"
EPP_POOL_SATURATION = "llm_d_epp_flow_control_pool_saturation"
EPP_REQUEST_RUNNING = "llm_d_epp_request_running"
EPP_INFLIGHT_TOKENS = "llm_d_epp_inflight_tokens"
EPP_TTFT_HIST = "llm_d_epp_request_ttft_seconds"
EPP_PREDICTED_TTFT_HIST = "llm_d_epp_request_predicted_ttft_seconds"
EPP_TPOT_HIST = "llm_d_epp_request_ntpot_seconds"
EPP_PREDICTED_TPOT_HIST = "llm_d_epp_request_predicted_tpot_seconds"
# Gateway API Inference Extension EPP request metrics (pkg/epp/metrics): what the router received.
OBJECTIVE_REQUESTS = "inference_objective_request_total"
OBJECTIVE_INPUT_TOKENS = "inference_objective_input_tokens"
OBJECTIVE_OUTPUT_TOKENS = "inference_objective_output_tokens"

# kube-state-metrics (docs/metrics/workload/deployment-metrics.md).
KSM_REPLICAS = "kube_deployment_status_replicas"
KSM_REPLICAS_READY = "kube_deployment_status_replicas_ready"
KSM_REPLICAS_UNAVAILABLE = "kube_deployment_status_replicas_unavailable"
KSM_SPEC_REPLICAS = "kube_deployment_spec_replicas"

# scalearena's gateway (serve-router, manifests/base/gateway.yaml; the sim's gateway queue): requests held for
# lack of a ready engine, per model (what a ScaledObject reads to scale from zero).
ROUTER_QUEUE = "scalearena_router_queue_size"

SeriesType = Literal["gauge", "counter", "histogram"]
_VLLM = ("namespace", "pod", "model_name")
_VLLM_SRC = "vLLM vllm/v1/metrics/loggers.py"
_EPP = ("namespace", "service", "model_name", "inference_pool")
_EPP_SRC = "llm-d EPP (docs/operations/observability, guides/workload-autoscaling)"
_OBJ = ("namespace", "service", "model_name", "target_model_name")
_GIE_SRC = "Gateway API Inference Extension EPP (pkg/epp/metrics)"
_KSM = ("namespace", "deployment")
_KSM_SRC = "kube-state-metrics deployment-metrics.md"


@dataclass(frozen=True)
class SeriesSpec:
    """One native series: a histogram's name is its family (``_bucket``/``_sum``/``_count`` follow)."""

    name: str
    type: SeriesType
    labels: tuple[str, ...]
    source: str
    help: str


CATALOGUE: tuple[SeriesSpec, ...] = (
    SeriesSpec(NUM_RUNNING, "gauge", _VLLM, _VLLM_SRC, "requests in model execution batches"),
    SeriesSpec(NUM_WAITING, "gauge", _VLLM, _VLLM_SRC, "requests waiting to be scheduled"),
    SeriesSpec(KV_USAGE, "gauge", _VLLM, _VLLM_SRC, "KV-cache usage, 1 = 100 %"),
    SeriesSpec(CACHE_CONFIG, "gauge", (*_VLLM, "block_size", "num_gpu_blocks"), _VLLM_SRC,
               "info series (value 1) carrying the KV-cache configuration"),
    SeriesSpec(REQUEST_SUCCESS, "counter", (*_VLLM, "finished_reason"), _VLLM_SRC, "finished requests"),
    SeriesSpec(PROMPT_TOKENS, "counter", _VLLM, _VLLM_SRC, "prefill tokens processed"),
    SeriesSpec(GENERATION_TOKENS, "counter", _VLLM, _VLLM_SRC, "tokens generated"),
    SeriesSpec(PREFIX_CACHE_QUERIES, "counter", _VLLM, _VLLM_SRC, "prompt tokens looked up in the prefix cache"),
    SeriesSpec(PREFIX_CACHE_HITS, "counter", _VLLM, _VLLM_SRC, "prompt tokens found in the prefix cache"),
    SeriesSpec(TTFT_HIST, "histogram", _VLLM, _VLLM_SRC, "time to first token, seconds"),
    SeriesSpec(ITL_HIST, "histogram", _VLLM, _VLLM_SRC, "inter-token latency, seconds"),
    SeriesSpec(E2E_HIST, "histogram", _VLLM, _VLLM_SRC, "end-to-end request latency, seconds"),
    SeriesSpec(GPU_UTIL, "gauge", _VLLM, "DCGM_FI_DEV_GPU_UTIL / 100 (scalearena)", "GPU busy fraction"),
    SeriesSpec(EPP_QUEUE_SIZE, "gauge", _EPP, _EPP_SRC, "requests held in the EPP flow-control queue"),
    SeriesSpec(EPP_POOL_SATURATION, "gauge", _EPP, _EPP_SRC, "pool saturation, 0..1+ (above 1: throttling)"),
    SeriesSpec(EPP_REQUEST_RUNNING, "gauge", _EPP, _EPP_SRC, "requests in flight across the pool"),
    SeriesSpec(EPP_INFLIGHT_TOKENS, "gauge", (*_EPP, "endpoint_name", "producer_name"), _EPP_SRC,
               "uncached prompt tokens routed to the endpoint, until their first token (producer_name="
               "inflight-load-producer)"),
    SeriesSpec(EPP_TTFT_HIST, "histogram", (*_EPP, "target_model_name"), _EPP_SRC, "observed TTFT per request"),
    SeriesSpec(EPP_PREDICTED_TTFT_HIST, "histogram", (*_EPP, "target_model_name"), _EPP_SRC,
               "predicted TTFT per request"),
    SeriesSpec(EPP_TPOT_HIST, "histogram", (*_EPP, "target_model_name"), _EPP_SRC,
               "observed normalized time per output token"),
    SeriesSpec(EPP_PREDICTED_TPOT_HIST, "histogram", (*_EPP, "target_model_name"), _EPP_SRC,
               "predicted time per output token"),
    SeriesSpec(OBJECTIVE_REQUESTS, "counter", _OBJ, _GIE_SRC, "requests received by the router (every arrival)"),
    SeriesSpec(OBJECTIVE_INPUT_TOKENS, "histogram", _OBJ, _GIE_SRC,
               "prompt tokens per request (the simulator writes _sum and _count only)"),
    SeriesSpec(OBJECTIVE_OUTPUT_TOKENS, "histogram", _OBJ, _GIE_SRC,
               "output tokens per completed request (the simulator writes _sum and _count only)"),
    SeriesSpec(ROUTER_QUEUE, "gauge", ("namespace", "model_name"), "scalearena gateway (serve-router)",
               "requests held at the gateway while no engine of the model is ready"),
    SeriesSpec(KSM_REPLICAS, "gauge", _KSM, _KSM_SRC, "pods targeted by the deployment"),
    SeriesSpec(KSM_REPLICAS_READY, "gauge", _KSM, _KSM_SRC, "ready pods of the deployment"),
    SeriesSpec(KSM_REPLICAS_UNAVAILABLE, "gauge", _KSM, _KSM_SRC, "pods not yet (or no longer) available"),
    SeriesSpec(KSM_SPEC_REPLICAS, "gauge", _KSM, _KSM_SRC, "desired replicas (spec.replicas)"),
)
BY_NAME: dict[str, SeriesSpec] = {s.name: s for s in CATALOGUE}


def catalogue_markdown() -> str:
    """The docs/metrics.md table of native series (one row per series)."""
    rows = ["| series | type | labels | upstream | meaning |", "| --- | --- | --- | --- | --- |"]
    for s in CATALOGUE:
        labels = ", ".join(f"`{lab}`" for lab in s.labels)
        rows.append(f"| `{s.name}` | {s.type} | {labels} | {s.source} | {s.help} |")
    return "\n".join(rows) + "\n"
