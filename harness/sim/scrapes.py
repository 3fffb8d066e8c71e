"""The simulator's Prometheus: scrapes of the engines, kube-state-metrics and the gateway into ``MemoryMetrics``.

A mixin of ``loop.Simulation``. By default one chain of scrapes reads everything at one phase (the first at 0,
the next at a seeded offset in (0, interval], then every interval); a scenario's ``phases`` may set the engines'
offset and give the gateway, kube-state-metrics and each pod it lists a chain of its own, at the offsets a real
run's Prometheus had (its targets each scrape at their own hash offset: harness/config/phase_spec.py).
"""
from __future__ import annotations

import random
from typing import Any

from mypy_extensions import trait

from scalearena.harness.metrics.memory import Sample, last_on_grid
from scalearena.harness.sim.engine.cluster import READY, Deployment, Pod
from scalearena.harness.sim.events import SCRAPE
from scalearena.harness.sim.state import SimState


@trait
class Scrapes(SimState):
    """Needs the Simulation's state (see loop.Simulation)."""

    sc: Any
    deps: list[Deployment]
    metrics: Any
    models: list[str]
    gateway: dict[str, list[Any]]
    flows: dict[str, Any]
    _objective: dict[str, list[float]]
    _last_scrape: float | None
    _scrape_phase: float
    _pool_phase: float | None
    _kube_state_phase: float | None  # phases.kube_state_scrape_s: kube-state-metrics on a chain of its own
    _pod_chains: dict[str, int]  # variant -> pods given a chain of their own so far (phases.pod_scrape_s)

    def start_scrapes(self) -> tuple[float, float | None]:
        """Book the first scrapes; returns the offsets of the engines' chain and of the gateway's own, if any.

        Prometheus scrapes on its own phase, not in step with the controllers' loops (which start at t = 0 unless
        ``phases.control_lead_s`` says otherwise): the first scrape at 0 fills the view, the next at a seeded
        offset in (0, interval]; aligned loops would hide the scrape interval entirely (every decision would see
        a fresh scrape). A scenario's ``phases`` may set the offsets a real run measured: the engines' and the
        gateway's scrapes then each keep their own chain, and listed pods their own (``pod_ready_scrape``)."""
        sc = self.sc
        interval = sc.metrics.scrape_interval_s
        seeded = interval * (1.0 - random.Random(f"scrape-phase-{sc.seed}").random())
        self.push(0.0, SCRAPE)
        self._kube_state_phase = None
        if (x := sc.phases.kube_state_scrape_s) is not None:
            self._kube_state_phase = (x % interval) or interval
            self.push(0.0, SCRAPE, "kube_state")
        if sc.phases.gateway_scrape_s is not None:
            self.push(0.0, SCRAPE, "pool")
            return sc.phases.scrape_offset(True, interval, seeded), sc.phases.scrape_offset(False, interval, seeded)
        return sc.phases.scrape_offset(True, interval, seeded), None

    def on_scrape(self, t: float, what: Any) -> None:
        """A scrape of the engines and the gateway (``what`` None), of the gateway alone (``"pool"``) or of
        kube-state-metrics alone (``"kube_state"``) where ``phases`` gives it a chain of its own, or of one pod on
        its own chain (``what``: the pod; the chain ends with the pod's readiness); each chain books its next."""
        if isinstance(what, Pod):
            what.chained = what.state == READY  # a pod no longer ready ends its chain (serve books it again)
            if what.chained:
                m = what.engine.metrics(t)
                self.drain(what, t)
                self._record_pod(what, m, t)
                self.push(t + self.sc.metrics.scrape_interval_s, SCRAPE, what)
            return
        split = self._pool_phase is not None
        if what == "kube_state":
            self.scrape_kube_state(t)
        elif what != "pool":
            self.scrape_engines(t, pools=not split)
        else:
            self.scrape_pools(t)
        nxt = t + self.sc.metrics.scrape_interval_s
        phase = {"pool": self._pool_phase, "kube_state": self._kube_state_phase}.get(what, self._scrape_phase)
        if t == 0.0 and phase is not None and phase < self.sc.metrics.scrape_interval_s:
            nxt = phase
        self.push(nxt, SCRAPE, what)

    def scrape_engines(self, t: float, pools: bool) -> None:
        """Every ready pod's engine metrics and, unless they have a chain of their own, the Deployments'
        kube-state-metrics; with ``pools``, the gateway's pool metrics in the same round (the default: one
        scrape phase)."""
        acc: dict[str, list[float]] = {m: [0.0, 0.0, 0.0] for m in self.models}  # -> saturation, in flight, pods
        if self._kube_state_phase is None:
            self.scrape_kube_state(t)
        for d in self.deps:
            for pod, m in self._ready_metrics(d, t, acc):
                if pod.scrape_offset is None:
                    self._record_pod(pod, m, t)
        if pools:
            self.record_pools(t, acc)
        self.metrics.end_scrape(t)
        self._last_scrape = t

    def _record_pod(self, pod: Pod, m: Any, t: float) -> None:
        dt = t - (pod.last_scrape if pod.last_scrape is not None else t)
        util = None if dt <= 0 else min(1.0, (m.busy_s - pod.last_busy) / dt)
        pod.last_busy, pod.last_scrape = m.busy_s, t
        self.metrics.record(pod.variant, pod.name, Sample(
            t, m.kv_usage, m.waiting, m.running, util, float(m.request_success_total),
            m.ttft.cumulative(), m.itl.cumulative(), m.e2e.cumulative(),
            float(m.prefix_cache_queries), float(m.prefix_cache_hits),
            float(m.prompt_tokens_total), float(m.generation_tokens_total), float(pod.routed.inflight_tokens),
            (m.ttft.sum, m.itl.sum, m.e2e.sum),
        ))

    def pod_ready_scrape(self, pod: Pod, t: float) -> None:
        """A pod joins (or rejoins, from standby): the k-th of its variant to, where ``phases.pod_scrape_s`` lists a
        k-th offset, is scraped at that offset of every interval (a real run's k-th pod's phase), the first at or
        after ``t``; a pod past the list stays with the engines' chain."""
        if pod.scrape_offset is None:
            offsets = self.sc.phases.pod_scrape_s.get(pod.variant) or []
            k = self._pod_chains.get(pod.variant, 0)
            if k >= len(offsets):
                return
            self._pod_chains[pod.variant] = k + 1
            pod.scrape_offset = offsets[k]
        if not pod.chained:
            pod.chained = True
            self.push(t + (pod.scrape_offset - t) % self.sc.metrics.scrape_interval_s, SCRAPE, pod)

    def scrape_kube_state(self, t: float) -> None:
        """kube-state-metrics: every Deployment's desired, non-terminating and ready replicas."""
        for d in self.deps:
            self.metrics.record_deployment(d.name, t, d.replicas, len(d.active()), d.count(READY))

    def scrape_pools(self, t: float) -> None:
        acc: dict[str, list[float]] = {m: [0.0, 0.0, 0.0] for m in self.models}
        for d in self.deps:
            self._ready_metrics(d, t, acc)
        self.record_pools(t, acc)

    def _ready_metrics(self, d: Deployment, t: float, acc: dict[str, list[float]]) -> list[tuple[Pod, Any]]:
        """(pod, its engine metrics at t) of every ready pod, each added to its model's pool as the EPP's
        utilization detector sees it: an endpoint's score is max(waiting / queue threshold, KV usage / KV
        threshold), the pool's the max over its endpoints."""
        adm, pool = self.sc.router.admission, acc.setdefault(d.spec.model, [0.0, 0.0, 0.0])
        out = []
        for pod in d.pods:
            if pod.state == READY:
                m = pod.engine.metrics(t)
                self.drain(pod, t)
                pool[0] = max(pool[0], m.waiting / max(1, adm.queue_threshold), m.kv_usage / adm.kv_threshold)
                pool[1] += m.waiting + m.running
                pool[2] += 1
                out.append((pod, m))
        return out

    def record_pools(self, t: float, acc: dict[str, list[float]]) -> None:
        for model, (saturation, in_flight, endpoints) in acc.items():
            held = len(self.gateway.get(model, ()))  # no ready endpoint: the detector fails closed at 1.0
            self.metrics.record_pool(model, t, held + len(self.flows.get(model, ())), saturation if endpoints else 1.0,
                                     int(in_flight), _objective(self._objective.get(model)), held)

    def scraped_by(self, now: float) -> float | None:
        """The time of the last scrape of a published target's exporter at or before ``now``: the engines' (events
        run in time order: their last is at or before ``now``), or, where ``phases.published_scrape_s`` sets its
        own offset, the last of 0 and offset + k x interval."""
        x = self.sc.phases.published_scrape_s
        if x is None:
            return self._last_scrape
        at = last_on_grid(now, self.sc.metrics.scrape_interval_s, x)
        return at if at > 0 else (0.0 if now >= 0 else None)


def _objective(counts: list[float] | None) -> tuple[float, float, float, float]:
    """The EPP request counters of one model (received, prompt tokens, output tokens, completed)."""
    a, b, c, d = counts or (0.0, 0.0, 0.0, 0.0)
    return a, b, c, d
