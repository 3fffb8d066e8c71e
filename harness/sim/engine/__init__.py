"""The serving model: a vLLM-like engine per pod (``core``), its latency models
(``latency``), the GPU catalog and model shapes (``catalog``) and vLLM's
histograms (``histogram``)."""
from __future__ import annotations

from scalearena.harness.sim.engine.catalog import GPUS, MODELS, GPUSpec, ModelShape, gpu_spec, model_shape
from scalearena.harness.sim.engine.core import Engine, EngineEvent, EngineMetrics, SubmitResult, fit_limit
from scalearena.harness.sim.engine.latency import ConstantModel, RooflineModel, build_latency

__all__ = [
    "GPUS", "MODELS", "ConstantModel", "Engine", "EngineEvent", "EngineMetrics", "GPUSpec", "ModelShape",
    "RooflineModel", "SubmitResult", "build_latency", "fit_limit", "gpu_spec", "model_shape",
]
