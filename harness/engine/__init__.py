"""The serving model: a vLLM-like engine per pod (``core``), its latency models
(``latency``), the GPU catalog and model shapes (``catalog``) and vLLM's
histograms (``histogram``)."""
from __future__ import annotations

from .catalog import GPUS, MODELS, GPUSpec, ModelShape, gpu_spec, model_shape
from .core import Engine, EngineEvent, EngineMetrics, SubmitResult, fit_limit
from .latency import ConstantModel, RooflineModel, build_latency

__all__ = [
    "GPUS", "MODELS", "ConstantModel", "Engine", "EngineEvent", "EngineMetrics", "GPUSpec", "ModelShape",
    "RooflineModel", "SubmitResult", "build_latency", "fit_limit", "gpu_spec", "model_shape",
]
