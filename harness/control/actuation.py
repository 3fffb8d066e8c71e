"""Published actuation: a decision reaches the Deployment through a metric, a scrape and an HPA sync.

Upstream WVA does not scale its Deployments itself in the common path
(controllers/wva/actuation.py): it publishes ``wva_desired_replicas``;
Prometheus scrapes the controller's exporter; prometheus-adapter answers the
HPA controller's external-metrics request with an instant query (the value
of the last scrape); and the actuation HPA (harness/kube/scenario.py
``wva_objects``: target AverageValue 1, tolerance 0, no stabilization,
10 Pods per 15 s) writes it into the Deployment at its next sync. Only a
scale-up from zero is direct (the HPA is disabled at 0 replicas). So a WVA
move lands at the first HPA sync after the first scrape after the decision,
which is what the real stack of ``--cluster kwok`` showed (docs/fidelity.md).

``PublishedActuation`` holds each published value with its time and, at an
HPA sync, gives the count the HPA would write: the last value published at
or before the last scrape, limited to 10 pods per sync from the current
count. Upstream sources: kube-controller-manager
``pkg/controller/podautoscaler/replica_calculator.go``
(``GetExternalPerPodMetricReplicas``: ``ceil(sum / target)`` when the
usage ratio is outside the tolerance, which is 0 here) and
``horizontal.go`` (``normalizeDesiredReplicasWithBehaviors``; scaling is
disabled while the target has 0 replicas).

Written here: the delay is a property of the stack around our own policy,
which no library models.
"""
from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable

HPA_SYNC_S = 15.0  # kube-controller-manager --horizontal-pod-autoscaler-sync-period default
POD_STEP = 10  # the actuation HPA's behavior: 10 Pods per 15 s, up and down (scenario.py wva_objects)


class PublishedActuation:
    """The published gauge of each variant and what an HPA reading it applies.

    ``last_scrape(now)``: the time of the last scrape at or before ``now`` (None before the first):
    the simulator's own scrape events; on local processes, Prometheus' grid."""

    def __init__(self, last_scrape: Callable[[float], float | None], sync_period_s: float = HPA_SYNC_S) -> None:
        self.last_scrape, self.sync_period_s = last_scrape, sync_period_s
        self._times: dict[str, list[float]] = {}
        self._values: dict[str, list[int]] = {}

    def publish(self, variant: str, now: float, desired: int) -> None:
        """The gauge set to ``desired`` at ``now`` (every decision sets it, a hold included)."""
        times, values = self._times.setdefault(variant, []), self._values.setdefault(variant, [])
        if values and values[-1] == desired:
            return
        times.append(now)
        values.append(desired)

    def scraped(self, variant: str, now: float) -> int | None:
        """The value Prometheus holds at ``now``: the gauge as the last scrape read it (None: none yet)."""
        at = self.last_scrape(now)
        times = self._times.get(variant)
        if at is None or not times:
            return None
        i = bisect_left(times, at)  # published before the scrape (a scrape runs before a same-time decision)
        return self._values[variant][i - 1] if i else None

    def sync(self, variant: str, now: float, spec: int) -> int | None:
        """The replicas the actuation HPA writes at a sync at ``now`` with the Deployment at ``spec``;
        None where it writes nothing (no value scraped yet, the target at 0, or no change)."""
        value = self.scraped(variant, now)
        if value is None or spec == 0:
            return None
        want = max(spec - POD_STEP, min(spec + POD_STEP, value))
        return None if want == spec else want
