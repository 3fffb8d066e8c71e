"""How WVA's decisions reach a Deployment on Kubernetes.

Two strategies, as upstream:

* ``MetricPublisher`` — the common path. Publishes, per variant,
  ``wva_desired_replicas``, ``wva_current_replicas``, ``wva_desired_ratio``
  (gauges) and ``wva_replica_scaling_total`` (counter), labelled
  ``variant_name``, ``namespace``, ``accelerator_type`` (the counter also
  ``direction`` and ``reason``), on /metrics. An HPA reads the desired gauge as
  an External metric with AverageValue 1 (prometheus-adapter), or KEDA with a
  prometheus trigger, threshold 1, activationThreshold 0; they do the scaling.
* ``ScaleActuator`` — patches the Deployment's scale subresource. Used for
  scale-from-zero (an HPA without HPAScaleToZero cannot leave 0) and when the
  controller runs with ``--actuator direct``. A 409 conflict re-reads the
  scale and retries.

A private ``CollectorRegistry`` keeps the series apart from the process
defaults, so tests can read exactly what an HPA would see.
"""
from __future__ import annotations

import time
from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge

from scalearena.harness.kube.wva.kubeapi import Conflict, KubeAPI

LABELS = ("variant_name", "namespace", "accelerator_type")


def desired_ratio(desired: int, current: int) -> float:
    """desired / current; desired itself when current is 0 (a 0 -> N wake-up reads as N)."""
    return float(desired) if current == 0 else desired / current


class MetricPublisher:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self.desired = Gauge("wva_desired_replicas", "Replicas WVA wants for the variant.", LABELS,
                             registry=self.registry)
        self.current = Gauge("wva_current_replicas", "Replicas the variant's Deployment has.", LABELS,
                             registry=self.registry)
        self.ratio = Gauge("wva_desired_ratio", "Desired over current replicas (desired when current is 0).",
                           LABELS, registry=self.registry)
        self.scaling = Counter("wva_replica_scaling", "Scaling operations WVA asked for.",
                               LABELS + ("direction", "reason"), registry=self.registry)

    def publish(self, variant: str, namespace: str, accelerator: str, desired: int, current: int) -> None:
        labels = (variant, namespace, accelerator)
        self.desired.labels(*labels).set(desired)
        self.current.labels(*labels).set(current)
        self.ratio.labels(*labels).set(desired_ratio(desired, current))

    def count_scaling(self, variant: str, namespace: str, accelerator: str, direction: str, reason: str) -> None:
        self.scaling.labels(variant, namespace, accelerator, direction, reason).inc()

    def forget(self, variant: str, namespace: str, accelerator: str) -> None:
        """Drop a deleted variant's gauges (a stale gauge would keep an HPA at its last value)."""
        for g in (self.desired, self.current, self.ratio):
            try:
                g.remove(variant, namespace, accelerator)
            except KeyError:
                pass

    def value(self, name: str, **labels: str) -> float | None:
        return self.registry.get_sample_value(name, labels)


class ScaleActuator:
    """Patch ``deployments/scale``; retries a 409 conflict after re-reading the scale."""

    def __init__(self, api: KubeAPI, retries: int = 3, sleep: Callable[[float], None] = time.sleep) -> None:
        self.api = api
        self.retries = retries
        self.sleep = sleep

    def scale(self, namespace: str, deployment: str, replicas: int) -> bool:
        """Set spec.replicas; False when it was already there. Raises the last Conflict after retries."""
        for attempt in range(self.retries + 1):
            current = self.api.get_scale(namespace, deployment)
            if int(current.get("spec", {}).get("replicas", 0)) == replicas:
                return False
            body = {"metadata": {"resourceVersion": current["metadata"]["resourceVersion"]},
                    "spec": {"replicas": replicas}}
            try:
                self.api.patch_scale(namespace, deployment, body)
                return True
            except Conflict:
                if attempt == self.retries:
                    raise
                self.sleep(0.05 * (2 ** attempt))
        return False  # unreachable
