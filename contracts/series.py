"""Prometheus series names and label sets, as the real serving stack exposes them.

One list for every side: the simulator's scrapes, serve-engine's and
serve-router's /metrics, the local backend's kube-state-metrics endpoint, the
PromQL the autoscalers and the harness send, and docs/metrics.md all use
these names, so a query means the same on every backend. ``CATALOGUE`` lists
every native series once with its type, its labels (those the exporter sets
plus those the scrape adds: ``namespace``, ``pod``, ``service``), the
exporter that serves it on a real stack (``engine``: vLLM / serve-engine,
``epp``: the llm-d EPP, ``gateway``: scalearena's gateway — both serve-router
on local —, ``kube-state-metrics``), a histogram's
bucket bounds, and the upstream that defines it; docs/metrics.md carries the
same table (``catalogue_markdown``; tests/unit/contracts/test_series_catalogue.py keeps
them equal). tests/integration/test_native_series.py scrapes the real local
servers through Prometheus and requires every entry of each exporter, with
its labels, type and buckets; an entry with a ``condition`` is emitted only
under that condition, which no scalearena backend meets.
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
Exporter = Literal["engine", "epp", "gateway", "kube-state-metrics"]

# Histogram bucket upper bounds, seconds (+Inf follows).
# vLLM v1 (vllm/v1/metrics/loggers.py).
VLLM_TTFT_BUCKETS: tuple[float, ...] = (
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
    20.0, 40.0, 80.0, 160.0, 640.0, 2560.0,
)
VLLM_ITL_BUCKETS: tuple[float, ...] = (
    0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0,
)
VLLM_E2E_BUCKETS: tuple[float, ...] = (
    0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0,
    960.0, 1920.0, 7680.0,
)
# llm-d router (llm-d/llm-d-router pkg/epp/metrics/llm_d_router_metrics.go: llmdRequestTTFT,
# llmdNormalizedTimePerOutputToken); the predicted ones follow the latency predictor's general buckets.
EPP_TTFT_BUCKETS: tuple[float, ...] = (
    0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 15.0, 20.0,
    30.0, 45.0, 60.0, 120.0,
)
EPP_NTPOT_BUCKETS: tuple[float, ...] = (
    0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0,
)
# Gateway API Inference Extension (pkg/epp/metrics/metrics.go: inputTokens, outputTokens), tokens.
GIE_INPUT_TOKEN_BUCKETS: tuple[float, ...] = (
    1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32778, 65536, 131072, 262144, 524288, 1048576,
)  # 32778 (not 32768) as upstream writes it
GIE_OUTPUT_TOKEN_BUCKETS: tuple[float, ...] = (1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192)
EPP_PRODUCER = "inflight-load-producer"  # producer_name of llm_d_epp_inflight_tokens (the in-flight load producer)
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
    exporter: Exporter
    buckets: tuple[float, ...] = ()  # a histogram's upper bounds (+Inf follows)
    condition: str = ""  # emitted only when this holds (no scalearena backend meets it); "" = always


_PREDICTOR = "the EPP's latency predictor runs (predicted-latency producer); scalearena models none"


def _vllm(name: str, type_: SeriesType, help_: str, extra: tuple[str, ...] = (), buckets: tuple[float, ...] = (),
          source: str = _VLLM_SRC) -> SeriesSpec:
    return SeriesSpec(name, type_, (*_VLLM, *extra), source, help_, "engine", buckets)


def _epp(name: str, type_: SeriesType, help_: str, extra: tuple[str, ...] = (), buckets: tuple[float, ...] = (),
         condition: str = "") -> SeriesSpec:
    return SeriesSpec(name, type_, (*_EPP, *extra), _EPP_SRC, help_, "epp", buckets, condition)


def _ksm(name: str, help_: str) -> SeriesSpec:
    return SeriesSpec(name, "gauge", _KSM, _KSM_SRC, help_, "kube-state-metrics")


CATALOGUE: tuple[SeriesSpec, ...] = (
    _vllm(NUM_RUNNING, "gauge", "requests in model execution batches"),
    _vllm(NUM_WAITING, "gauge", "requests waiting to be scheduled"),
    _vllm(KV_USAGE, "gauge", "KV-cache usage, 1 = 100 %"),
    _vllm(CACHE_CONFIG, "gauge", "info series (value 1) carrying the KV-cache configuration",
          ("block_size", "num_gpu_blocks")),
    _vllm(REQUEST_SUCCESS, "counter", "finished requests", ("finished_reason",)),
    _vllm(PROMPT_TOKENS, "counter", "prefill tokens processed"),
    _vllm(GENERATION_TOKENS, "counter", "tokens generated"),
    _vllm(PREFIX_CACHE_QUERIES, "counter", "prompt tokens looked up in the prefix cache"),
    _vllm(PREFIX_CACHE_HITS, "counter", "prompt tokens found in the prefix cache"),
    _vllm(TTFT_HIST, "histogram", "time to first token, seconds", buckets=VLLM_TTFT_BUCKETS),
    _vllm(ITL_HIST, "histogram", "inter-token latency, seconds", buckets=VLLM_ITL_BUCKETS),
    _vllm(E2E_HIST, "histogram", "end-to-end request latency, seconds", buckets=VLLM_E2E_BUCKETS),
    _vllm(GPU_UTIL, "gauge", "GPU busy fraction", source="DCGM_FI_DEV_GPU_UTIL / 100 (scalearena)"),
    _epp(EPP_QUEUE_SIZE, "gauge", "requests held in the EPP flow-control queue"),
    _epp(EPP_POOL_SATURATION, "gauge", "pool saturation, 0..1+ (above 1: throttling)"),
    _epp(EPP_REQUEST_RUNNING, "gauge", "requests in flight across the pool"),
    _epp(EPP_INFLIGHT_TOKENS, "gauge", "uncached prompt tokens routed to the endpoint, until their first token "
         "(producer_name=inflight-load-producer)", ("endpoint_name", "producer_name")),
    _epp(EPP_TTFT_HIST, "histogram", "observed TTFT per request", ("target_model_name",), EPP_TTFT_BUCKETS),
    _epp(EPP_PREDICTED_TTFT_HIST, "histogram", "predicted TTFT per request", ("target_model_name",),
         condition=_PREDICTOR),
    _epp(EPP_TPOT_HIST, "histogram", "observed normalized time per output token", ("target_model_name",),
         EPP_NTPOT_BUCKETS),
    _epp(EPP_PREDICTED_TPOT_HIST, "histogram", "predicted time per output token", ("target_model_name",),
         condition=_PREDICTOR),
    SeriesSpec(OBJECTIVE_REQUESTS, "counter", _OBJ, _GIE_SRC, "requests received by the router (every arrival)",
               "epp"),
    SeriesSpec(OBJECTIVE_INPUT_TOKENS, "histogram", _OBJ, _GIE_SRC,
               "prompt tokens per request (the simulator writes _sum and _count only)", "epp", GIE_INPUT_TOKEN_BUCKETS),
    SeriesSpec(OBJECTIVE_OUTPUT_TOKENS, "histogram", _OBJ, _GIE_SRC,
               "output tokens per completed request (the simulator writes _sum and _count only)", "epp",
               GIE_OUTPUT_TOKEN_BUCKETS),
    SeriesSpec(ROUTER_QUEUE, "gauge", ("namespace", "model_name"), "scalearena gateway (serve-router)",
               "requests held at the gateway while no engine of the model is ready", "gateway"),
    _ksm(KSM_REPLICAS, "pods targeted by the deployment"),
    _ksm(KSM_REPLICAS_READY, "ready pods of the deployment"),
    _ksm(KSM_REPLICAS_UNAVAILABLE, "pods not yet (or no longer) available"),
    _ksm(KSM_SPEC_REPLICAS, "desired replicas (spec.replicas)"),
)
BY_NAME: dict[str, SeriesSpec] = {s.name: s for s in CATALOGUE}


def of_exporter(exporter: Exporter) -> tuple[SeriesSpec, ...]:
    """The series one exporter serves (those behind a ``condition`` included)."""
    return tuple(s for s in CATALOGUE if s.exporter == exporter)


def epp_labels(model: str, namespace: str = NAMESPACE) -> dict[str, str]:
    """The labels of one model's EPP series: its InferencePool and EPP service are named after the model."""
    return {"namespace": namespace, "service": f"{model}-epp", "model_name": model, "inference_pool": model}


def deployment_values(spec: int, active: int, ready: int) -> tuple[tuple[str, float], ...]:
    """kube-state-metrics' four Deployment gauges: ``status.replicas`` counts the non-terminating pods,
    ``unavailable`` is spec - ready floored at 0 (minReadySeconds 0: a ready pod is available)."""
    return ((KSM_SPEC_REPLICAS, float(spec)), (KSM_REPLICAS, float(active)), (KSM_REPLICAS_READY, float(ready)),
            (KSM_REPLICAS_UNAVAILABLE, float(max(0, spec - ready))))


def catalogue_markdown() -> str:
    """The docs/metrics.md table of native series (one row per series)."""
    rows = ["| series | type | labels | exporter | upstream | meaning |", "| --- | --- | --- | --- | --- | --- |"]
    for s in CATALOGUE:
        labels = ", ".join(f"`{lab}`" for lab in s.labels)
        meaning = s.help + (f" (only when {s.condition})" if s.condition else "")
        rows.append(f"| `{s.name}` | {s.type} | {labels} | {s.exporter} | {s.source} | {meaning} |")
    return "\n".join(rows) + "\n"
