"""The one place a ``ClusterView`` is built, for every backend and the in-cluster controller.

Before this module each backend assembled the view itself and the copies
drifted: the oracle got no forecast on kind/cluster, and only the simulator
derived the KV block count from GPU memory, so a policy sized replicas
differently on sim and local for the same scenario. Here the static facts of
a variant (``VariantInfo``, KV blocks included), the forecast, the replica
states from the ``Actuator`` and the pod samples from the ``MetricsSource``
meet once. A test (tests/unit/harness/control/test_backend_conformance.py) fails if
``ClusterView`` or ``VariantView`` is constructed anywhere else in the harness.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

import numpy as np

from scalearena.contracts.errors import MetricsUnavailable
from scalearena.controllers.base import (
    Admission,
    ArrivalForecast,
    ClusterView,
    PodMetrics,
    ReplicaProfile,
    StepModel,
    VariantView,
)
from scalearena.harness.config.engine_spec import step_model
from scalearena.harness.control.ports import MetricsSource, ReplicaStatus
from scalearena.harness.sim.engine.latency import build_latency
from scalearena.harness.sizing.replica_profile import replica_profile


@dataclass(frozen=True)
class VariantInfo:
    """What does not change during a run about one variant (its Deployment spec)."""

    name: str
    model: str
    gpu: str
    gpus_per_replica: int
    cost: float
    min_replicas: int
    max_replicas: int
    startup_s: float | None = None
    engine: Mapping[str, Any] = field(default_factory=dict)  # VariantView.engine: settings incl. kv_cache_blocks
    step_model: StepModel | None = None  # VariantView.step_model: the roofline step-time model, if any
    profile: ReplicaProfile | None = None  # VariantView.profile: the swept per-replica latency table
    admission: Admission | None = None  # VariantView.admission: the gateway's saturation test
    role: str = "both"  # VariantView.role: llm-d.ai/role (both | prefill | decode)
    termination_grace_s: float | None = None  # VariantView.termination_grace_s


def engine_settings(spec: Any, gpu: Any, where: str) -> dict[str, Any]:
    """A variant's engine settings as a policy sees them, ``kv_cache_blocks`` always filled in:
    explicit, or derived from GPU memory and the model shape exactly as the engine derives it
    (``harness.sim.engine.latency.build_latency``; ``gpu`` is a catalog name or a ``GPUSpec``)."""
    engine = spec.engine.model_dump(mode="json")
    engine["kv_cache_blocks"] = build_latency(spec.engine, gpu, where=where)[1]
    return engine


def admission(router: Any) -> Admission | None:
    """The ``Admission`` of a scenario's router (``harness.config.scenario.RouterSpec``); None when it admits all."""
    adm = router.admission
    if adm.kind == "none":
        return None
    return Admission(adm.kind, float(adm.kv_threshold), int(adm.queue_threshold))


def variant_info(spec: Any, gpu: Any, index: int, admission: Admission | None = None) -> VariantInfo:
    """``VariantInfo`` of the scenario's ``cluster.variants[index]`` (a ``harness.config.scenario.VariantSpec``)."""
    return VariantInfo(
        name=spec.name, model=spec.model, gpu=spec.gpu, gpus_per_replica=spec.gpus_per_replica, cost=spec.cost,
        min_replicas=spec.min_replicas, max_replicas=spec.max_replicas, startup_s=spec.startup_s,
        engine=(engine := engine_settings(spec, gpu, f"cluster.variants[{index}].engine")),
        step_model=step_model(engine, gpu), profile=replica_profile(engine, gpu), admission=admission,
        role=spec.role, termination_grace_s=spec.termination_grace_s,
    )


def scenario_variants(scenario: Any) -> tuple[VariantInfo, ...]:
    """Every variant of a ``harness.config.scenario.Scenario`` (its GPU looked up in the scenario's catalog)."""
    adm = admission(scenario.router)
    return tuple(variant_info(v, scenario.cluster.gpu(v.gpu), i, adm) for i, v in enumerate(scenario.cluster.variants))


def forecast_from_requests(requests: Sequence[Any], models: Iterable[str]) -> tuple[ArrivalForecast, ...]:
    """The run's arrival schedule per model, in schedule order (what the ``oracle`` reads)."""
    out = []
    for m in models:
        rs = [r for r in requests if r.model == m]
        out.append(ArrivalForecast(m, tuple(r.arrival_s for r in rs), tuple(r.input_tokens for r in rs),
                                   tuple(r.output_tokens for r in rs)))
    return tuple(out)


def _plan_views(variants: Sequence[VariantInfo]) -> list[VariantView]:
    """The views the oracle would plan on (replica counts play no part in its plan)."""
    return [VariantView(
        name=i.name, model=i.model, gpu=i.gpu, gpus_per_replica=i.gpus_per_replica, cost=i.cost,
        min_replicas=i.min_replicas, max_replicas=i.max_replicas, spec_replicas=0, ready=0, pending=0,
        terminating=0, pods=(), metrics_available=True, startup_s=i.startup_s, engine=i.engine,
        step_model=i.step_model, role=i.role, termination_grace_s=i.termination_grace_s) for i in variants]


def oracle_plan(variants: Sequence[VariantInfo], forecast: Sequence[ArrivalForecast]) -> dict[str, Any] | None:
    """The oracle's schedule for a run (``Oracle.capacity_plan`` at its default settings, on the views
    it would decide on: replica counts play no part in it), up to the last scheduled arrival; None
    without a forecast. reports/provisioning.py compares every autoscaler's replicas with it."""
    from scalearena.controllers.oracle import Oracle, OracleConfig

    last = max((max(f.arrival_s) for f in forecast if len(f.arrival_s)), default=None)
    if last is None:
        return None
    return Oracle(OracleConfig()).capacity_plan(_plan_views(variants), forecast, float(last) + 1e-6)


class OraclePlanStream:
    """``oracle_plan`` of a request stream, built window by window as the requests are sent.

    The simulator does not hold the run's schedule (``LazyForecast``), so it hands every request to
    ``add`` in send order; each aligned window's requests are kept until the window is over and then
    planned by the oracle's own ``window_replicas`` on a forecast of just that window (the window
    ``capacity_plan`` would bisect out of the whole schedule: the same requests in the same order),
    so ``plan()`` equals ``oracle_plan`` of the whole schedule; memory: one window of requests."""

    def __init__(self, variants: Sequence[VariantInfo]) -> None:
        from scalearena.controllers.oracle import Oracle, OracleConfig

        self._oracle = Oracle(OracleConfig())
        self._w = self._oracle.config.window_s
        views = _plan_views(variants)
        self._by_model: dict[str, list[VariantView]] = {}
        for v in views:
            self._by_model.setdefault(v.model, []).append(v)
        self._replicas: dict[str, list[int]] = {v.name: [] for v in views}
        self._floor = {v.name: v.min_replicas for v in views}
        # model -> its open window: (start, end, index, its arrivals, input tokens and output tokens, and
        # the three lists' appends, bound once: add() runs once per request)
        self._open: dict[str, tuple[Any, ...]] = {}
        self._last = -math.inf  # the latest arrival of a closed window (-inf: none yet)

    def add(self, model: str, arrival_s: float, input_tokens: int, output_tokens: int) -> None:
        cur = self._open.get(model)
        if cur is None or not cur[0] <= arrival_s < cur[1]:  # the first of its window (or of an unknown model)
            if model not in self._by_model:
                return
            w = self._w
            b = math.floor(arrival_s / w)
            while b > 0 and arrival_s < b * w:  # the window bisect would put it in: [b * w, (b + 1) * w)
                b -= 1
            while arrival_s >= (b + 1) * w:
                b += 1
            self._close(model, b)
            arr: list[float] = []
            ins: list[int] = []
            outs: list[int] = []
            cur = self._open[model] = (b * w, (b + 1) * w, b, arr, ins, outs, arr.append, ins.append, outs.append)
        cur[6](arrival_s)
        cur[7](input_tokens)
        cur[8](output_tokens)

    def _close(self, model: str, until: int) -> None:
        """Plan the model's open window and every empty one before window ``until``."""
        cur = self._open.pop(model, None)
        if cur is not None:
            self._last = max(self._last, max(cur[3]))
        vs = self._by_model[model]
        done = len(self._replicas[vs[0].name])
        for b in range(done, until):
            if cur is not None and b == cur[2]:
                # as arrays: the oracle reads them with numpy (one conversion here, none per variant)
                fc = ArrivalForecast(model, np.asarray(cur[3], dtype=np.float64), np.asarray(cur[4], dtype=np.int64),
                                     np.asarray(cur[5], dtype=np.int64))
            else:
                fc = ArrivalForecast(model, (), (), ())
            for name, n in self._oracle.window_replicas(model, fc, vs, b).items():
                self._replicas[name].append(n)

    def plan(self) -> dict[str, Any] | None:
        """The plan up to the last request added (None when none was)."""
        last = max([self._last, *(max(cur[3]) for cur in self._open.values())])
        if last == -math.inf:
            return None
        n = max(1, math.ceil((float(last) + 1e-6) / self._w - 1e-9))
        for model in self._by_model:
            self._close(model, n)
        return {"window_s": self._w, "replicas": {k: v[:n] for k, v in self._replicas.items()},
                "floor": dict(self._floor)}


class LazyForecast(Sequence[ArrivalForecast]):
    """``forecast_from_requests`` of a request stream, made only when a policy first reads it.

    The simulator streams a run's requests from the generator instead of holding them (a day at
    100 RPS is 8.6 M requests); only the ``oracle`` reads the schedule ahead, so only its runs
    pay for it: ``requests()`` regenerates the same seeded stream, and the tuples are built then."""

    def __init__(self, requests: Callable[[], Iterable[Any]], models: Iterable[str]) -> None:
        self._requests, self._models = requests, list(models)
        self._made: tuple[ArrivalForecast, ...] | None = None

    def _forecast(self) -> tuple[ArrivalForecast, ...]:
        if self._made is None:
            cols: dict[str, tuple[list[float], list[int], list[int]]] = {m: ([], [], []) for m in self._models}
            for r in self._requests():
                c = cols.get(r.model)
                if c is not None:
                    c[0].append(r.arrival_s)
                    c[1].append(r.input_tokens)
                    c[2].append(r.output_tokens)
            self._made = tuple(ArrivalForecast(m, tuple(a), tuple(i), tuple(o)) for m, (a, i, o) in cols.items())
        return self._made

    @property
    def made(self) -> bool:
        """Whether a policy has read it (and it holds the whole schedule)."""
        return self._made is not None

    def __len__(self) -> int:
        return len(self._models)

    @overload
    def __getitem__(self, i: int) -> ArrivalForecast: ...

    @overload
    def __getitem__(self, i: slice) -> Sequence[ArrivalForecast]: ...

    def __getitem__(self, i: int | slice) -> ArrivalForecast | Sequence[ArrivalForecast]:
        return self._forecast()[i]


def metrics_router_queue(metrics: Any, models: Iterable[str]) -> dict[str, int]:
    """Gateway queue per model from a source that exports it (the EPP's queue metric); unreadable -> absent."""
    fn = getattr(metrics, "router_queue", None)
    if fn is None:
        return {}
    out: dict[str, int] = {}
    for m in sorted(set(models)):
        try:
            out[m] = int(fn(m))
        except MetricsUnavailable:
            pass
    return out


def build_view(now: float, variants: Sequence[VariantInfo], replicas: Mapping[str, ReplicaStatus],
               metrics: MetricsSource, *, router_queue: Mapping[str, int] | None = None,
               gpu_capacity: Mapping[str, int] | None = None, forecast: Sequence[ArrivalForecast] = (),
               with_pods: bool = True, metrics_errors: dict[str, str] | None = None) -> ClusterView:
    """The view a policy decides on at ``now``.

    Per variant: replica counts from ``replicas``; the latest sample of each *ready* pod from
    ``metrics`` (a failed read -> no pods, ``metrics_available=False``, its message in
    ``metrics_errors``); no pod reads for a missing target or when ``with_pods`` is False (the
    scale-from-zero loop reads only the gateway queue).
    """
    metrics.evaluate_at(now)
    out = []
    for info in variants:
        st = replicas[info.name]
        pods: tuple[PodMetrics, ...] = ()
        available = True
        if with_pods and st.target_exists:
            try:
                ready = set(st.ready)
                pods = tuple(p for p in metrics.latest_pod_samples(info.name) if p.pod in ready)
            except MetricsUnavailable as e:
                available = False
                if metrics_errors is not None:
                    metrics_errors[info.name] = str(e)
        out.append(VariantView(
            name=info.name, model=info.model, gpu=info.gpu, gpus_per_replica=info.gpus_per_replica, cost=info.cost,
            min_replicas=info.min_replicas, max_replicas=info.max_replicas, spec_replicas=st.spec,
            ready=len(st.ready), pending=st.pending, terminating=st.terminating, pods=pods,
            metrics_available=available, target_exists=st.target_exists, startup_s=info.startup_s,
            engine=info.engine, step_model=info.step_model, starting=st.starting, profile=info.profile,
            admission=info.admission, role=info.role, termination_grace_s=info.termination_grace_s,
        ))
    return ClusterView(now=now, variants=tuple(out), metrics=metrics, router_queue=dict(router_queue or {}),
                       gpu_capacity=gpu_capacity, forecast=forecast)
