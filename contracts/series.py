"""Prometheus series names, as the real serving stack exposes them.

One list for every side: the simulator's scrapes, serve-engine's /metrics,
the PromQL the autoscalers and the harness send, and docs/metrics.md all
use these names, so a query means the same on every backend.
"""
from __future__ import annotations

# vLLM (vllm/v1/metrics/loggers.py) and llm-d-inference-sim, which copies the names.
KV_USAGE = "vllm:kv_cache_usage_perc"
NUM_WAITING = "vllm:num_requests_waiting"
NUM_RUNNING = "vllm:num_requests_running"
REQUEST_SUCCESS = "vllm:request_success_total"
CACHE_CONFIG = "vllm:cache_config_info"
TTFT_HIST = "vllm:time_to_first_token_seconds"
ITL_HIST = "vllm:inter_token_latency_seconds"
E2E_HIST = "vllm:e2e_request_latency_seconds"
# Busy fraction per scrape interval (DCGM_FI_DEV_GPU_UTIL/100 on real GPUs).
GPU_UTIL = "gpu_utilization"
