"""The Kubernetes HPA (autoscaling/v2) as a policy, registry name ``hpa``.

policy.py: the autoscaler (metrics, config, the paper's defaults); engine.py: one HPA
reconcile over the view (shared with ``keda``); replicas.py: the per-metric replica
proposals of upstream's replica_calculator.go; behavior.py: stabilisation windows and
scaling policies. A package because the four move together and ``keda`` reuses the engine.
"""
from __future__ import annotations

from scalearena.controllers.hpa.policy import HPA, HPAConfig

__all__ = ["HPA", "HPAConfig"]
