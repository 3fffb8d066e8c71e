"""kube-state-metrics for CLUSTER=local: the run's Deployments as /metrics in the harness process.

A local run has no API server, so nothing would export
``kube_deployment_*``; yet llm-d's recipes and users' own objects read them
(ready vs provisioned replicas in the SLO-aware formula, unavailable replicas
in a queue guard). The harness owns the ReplicaSet logic (pods.PodSet), so it
serves the four Deployment gauges of contracts/series.py itself, one
Deployment per variant (``deployment`` = the variant's name), in the run's
namespace, computed from the pods at each scrape with the same rule as the
simulator (``deployment_values``: status.replicas = pods not terminating,
ready = Ready pods, unavailable = spec - ready, floored at 0). Its
Prometheus scrapes it as job ``kube-state-metrics`` (``honor_labels``: the
series carry their own ``namespace``, as kube-state-metrics' do).

A prometheus-client WSGI server on 127.0.0.1 (a daemon thread), port 0: the
kernel picks the port and ``address`` reads it back.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from prometheus_client import CollectorRegistry, start_wsgi_server
from prometheus_client.core import GaugeMetricFamily, Metric

from scalearena.contracts.series import BY_NAME, NAMESPACE, deployment_values
from scalearena.harness.control.ports import ReplicaStatus
from scalearena.harness.local.supervisor import LOOPBACK


class DeploymentCollector:
    """The four gauges per variant from the last ``ReplicaStatus`` the run's loop handed over (``update``):
    the scrape thread reads that snapshot, never the pods the loop is changing."""

    def __init__(self, variants: Sequence[str], namespace: str = NAMESPACE) -> None:
        self.variants, self.namespace = list(variants), namespace
        self.status: dict[str, ReplicaStatus] = {}

    def update(self, status: dict[str, ReplicaStatus]) -> None:
        self.status = dict(status)  # one reference swap: the scrape sees the old or the new, whole

    def collect(self) -> Iterator[Metric]:
        status = self.status
        families = {name: GaugeMetricFamily(name, BY_NAME[name].help, labels=["namespace", "deployment"])
                    for name, _ in deployment_values(0, 0, 0)}
        for variant in self.variants:
            st = status.get(variant)
            if st is None:
                continue
            active = len(st.ready) + st.pending  # every pod but the terminating ones
            for name, value in deployment_values(st.spec, active, len(st.ready)):
                families[name].add_metric([self.namespace, variant], value)
        yield from families.values()


class KubeStateExporter:
    """``start()`` serves /metrics on 127.0.0.1; ``stop()`` shuts it down."""

    def __init__(self, collector: DeploymentCollector) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(collector)
        self._server: Any = None

    def start(self) -> str:
        self._server, _ = start_wsgi_server(0, addr=LOOPBACK, registry=self.registry)
        return self.address

    @property
    def address(self) -> str:
        return f"{LOOPBACK}:{self._server.server_port}"

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
