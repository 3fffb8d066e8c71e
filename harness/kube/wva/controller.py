"""WVA as a Kubernetes controller: the shared policy, Kubernetes adapters around it.

Each optimisation cycle (``reconcile``, every 30 s — on the period only, as the
simulated WVA decides; ``__main__.run_cycles``) does what upstream WVA's reconciler does:

1. list the VariantAutoscalings of the namespace and resolve each
   ``scaleTargetRef`` (missing -> TargetResolved=False/TargetNotFound, and
   actuation for that variant pauses);
2. build a ``ClusterView`` from the Deployments, their pods and Prometheus
   (unreachable -> MetricsAvailable=False, and the last known good replica
   count is held whatever the policy says);
3. run the policy through the registry contract, ``decide(now, view)`` — the
   same code as on the simulator;
4. publish ``wva_*`` for the HPA/KEDA that actuates, patch the scale
   subresource directly when a variant leaves 0 (or in ``direct`` mode);
5. write status conditions when they change (409 -> re-read and retry).

``reconcile_fast`` (every 100 ms) is the scale-from-zero loop: it only asks
Prometheus how many requests the gateway holds for models whose variants are
all at 0, and wakes them through ``decide_fast``.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from scalearena.controllers.base import Autoscaler, ClusterView, Decision, MetricsReader
from scalearena.harness.config.engine_spec import step_model
from scalearena.harness.control.ports import Clock, ReplicaStatus, WallClock
from scalearena.harness.control.view import VariantInfo, build_view, metrics_router_queue
from scalearena.harness.kube.wva.actuator import MetricPublisher, ScaleActuator
from scalearena.harness.kube.wva.kubeapi import Conflict, KubeAPI, NotFound, Obj, selector_string
from scalearena.harness.kube.wva.status import (
    METRICS_AVAILABLE,
    OPTIMIZATION_READY,
    TARGET_RESOLVED,
    Condition,
    build_status,
    status_changed,
)

log = logging.getLogger("scalearena.wva")
MetricsFactory = Callable[[Mapping[str, str]], MetricsReader]  # {variant: model} -> reader
ACTUATORS = ("hpa", "keda", "direct")
DEFAULT_MIN, DEFAULT_MAX = 1, 10
ENGINE_FLAGS = {  # Deployment arg -> VariantView.engine key (simulator and vLLM spellings)
    "--max-num-seqs": "max_num_seqs", "--kv-cache-size": "kv_cache_blocks",
    "--num-gpu-blocks-override": "kv_cache_blocks", "--block-size": "block_size",
    "--max-waiting-queue-length": "max_waiting_queue",
}


@dataclass
class VariantState:
    """One VariantAutoscaling and its target as read this cycle."""

    va: Obj
    deployment: Obj | None
    pods: list[Obj] = field(default_factory=list)
    metrics_available: bool = True
    metrics_error: str = ""

    @property
    def name(self) -> str:
        return str(self.va["metadata"]["name"])

    @property
    def model(self) -> str:
        return str(self.va["spec"]["modelID"])

    @property
    def accelerator(self) -> str:
        return str(self.va["spec"].get("accelerator", "unknown"))

    @property
    def target(self) -> str:
        return str(self.va["spec"]["scaleTargetRef"]["name"])

    @property
    def spec_replicas(self) -> int:
        return int((self.deployment or {}).get("spec", {}).get("replicas", 1) or 0) if self.deployment else 0


def engine_from_args(deployment: Obj) -> dict[str, Any]:
    containers = deployment.get("spec", {}).get("template", {}).get("spec", {}).get("containers", [])
    out: dict[str, Any] = {}
    args = list(containers[0].get("args", [])) if containers else []
    for i, a in enumerate(args):
        flag, eq, value = a.partition("=")
        if not eq and i + 1 < len(args) and not args[i + 1].startswith("--"):
            value = args[i + 1]
        if flag in ENGINE_FLAGS and value.isdigit():
            out[ENGINE_FLAGS[flag]] = int(value)
    return out


class PodCounts(NamedTuple):
    """A variant's pods as the API server lists them (ready names; the others counted)."""

    ready: list[str]
    pending: int  # not Ready and not terminating: phase Pending, or Running with Ready false
    terminating: int  # deletionTimestamp set
    starting: int  # of ``pending``: phase Running, Ready not True (the server is still loading)


def pod_counts(pods: list[Obj]) -> PodCounts:
    """Group pods as ``ReplicaStatus`` needs them. A Running pod whose Ready condition is not True is
    ``starting`` (the HPA's missing-pod rule applies to it); only phase-Pending pods are unready
    (kubernetes replica_calculator.go ``groupPods``)."""
    ready: list[str] = []
    pending = terminating = starting = 0
    for p in pods:
        if p.get("metadata", {}).get("deletionTimestamp"):
            terminating += 1
            continue
        status = p.get("status", {}) or {}
        conds = status.get("conditions", []) or []
        phase = status.get("phase")
        if any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds):
            ready.append(p["metadata"]["name"])
        elif phase in ("Pending", "Running", None):
            pending += 1
            starting += phase == "Running"
    return PodCounts(ready, pending, terminating, starting)


def variant_info(st: VariantState) -> VariantInfo:
    """A VariantAutoscaling's static facts; engine settings from its Deployment's container args."""
    spec = st.va["spec"]
    dep = st.deployment or {}
    startup = dep.get("metadata", {}).get("annotations", {}).get("scalearena.io/startup-s")
    return VariantInfo(
        name=st.name, model=st.model, gpu=st.accelerator, gpus_per_replica=int(spec.get("acceleratorCount", 1)),
        cost=float(spec.get("variantCost", "10.0")), min_replicas=int(spec.get("minReplicas", DEFAULT_MIN)),
        max_replicas=int(spec.get("maxReplicas", DEFAULT_MAX)), startup_s=float(startup) if startup else None,
        engine=(engine := engine_from_args(dep) if dep else {}),
        step_model=step_model(engine, st.accelerator) if dep else None,
        role=dep.get("metadata", {}).get("labels", {}).get("llm-d.ai/role", "both"))


def replica_status(st: VariantState) -> ReplicaStatus:
    c = pod_counts(st.pods)
    return ReplicaStatus(spec=st.spec_replicas, ready=tuple(c.ready), pending=c.pending, terminating=c.terminating,
                         target_exists=st.deployment is not None, starting=c.starting)


class WVAKubeController:
    def __init__(self, api: KubeAPI, policy: Autoscaler, metrics: MetricsFactory, namespace: str, *,
                 actuator: str = "hpa", publisher: MetricPublisher | None = None,
                 scaler: ScaleActuator | None = None, clock: Clock | None = None,
                 status_retries: int = 3) -> None:
        if actuator not in ACTUATORS:
            raise ValueError(f"actuator {actuator!r}: expected one of {ACTUATORS}")
        self.api, self.policy, self.namespace, self.mode = api, policy, namespace, actuator
        self.metrics_factory = metrics
        self.publisher = publisher or MetricPublisher()
        self.scaler = scaler or ScaleActuator(api)
        self.clock = clock or WallClock()  # unix time: status timestamps and PromQL read the wall clock
        self.status_retries = status_retries
        self._reader: tuple[tuple[tuple[str, str], ...], MetricsReader] | None = None
        self._held: dict[str, int] = {}  # last desired published per variant (the state held on outages)
        self._states: dict[str, VariantState] = {}

    # ---- reading the cluster -------------------------------------------------------------------
    def metrics_reader(self, variants: Mapping[str, str]) -> MetricsReader:
        key = tuple(sorted(variants.items()))
        if self._reader is None or self._reader[0] != key:
            self._reader = (key, self.metrics_factory(dict(variants)))
        return self._reader[1]

    def read_states(self) -> dict[str, VariantState]:
        states: dict[str, VariantState] = {}
        for va in self.api.list_variant_autoscalings(self.namespace):
            st = VariantState(va=va, deployment=None)
            try:
                st.deployment = self.api.get_deployment(self.namespace, st.target)
            except NotFound:
                st.deployment = None
            if st.deployment is not None:
                sel = st.deployment.get("spec", {}).get("selector", {}).get("matchLabels", {})
                st.pods = self.api.list_pods(self.namespace, selector_string(sel)) if sel else []
            states[st.name] = st
        return states

    def build_view(self, now: float, states: dict[str, VariantState], with_pods: bool = True) -> ClusterView:
        """The view from the VariantAutoscalings, their Deployments and Prometheus, through the
        harness's one view builder (harness.control.view)."""
        reader = self.metrics_reader({n: s.model for n, s in states.items()})
        ordered = sorted(states.values(), key=lambda s: s.name)
        errors: dict[str, str] = {}
        view = build_view(
            now, [variant_info(st) for st in ordered], {st.name: replica_status(st) for st in ordered},
            reader,  # type: ignore[arg-type]
            router_queue=metrics_router_queue(reader, (s.model for s in ordered)), with_pods=with_pods,
            metrics_errors=errors)
        for name, message in errors.items():
            states[name].metrics_available, states[name].metrics_error = False, message
        return view

    # ---- the loops -----------------------------------------------------------------------------
    def reconcile(self) -> list[Decision]:
        now = self.clock.now()
        states = self.read_states()
        view = self.build_view(now, states)
        decisions = {d.variant: d for d in self.policy.decide(now, view)}
        for name in set(self._states) - set(states):  # deleted VariantAutoscalings
            old = self._states[name]
            self.publisher.forget(name, self.namespace, old.accelerator)
            self._held.pop(name, None)
        self._states = states
        for name, st in sorted(states.items()):
            self._apply(now, st, decisions.get(name))
        return list(decisions.values())

    def reconcile_fast(self) -> list[Decision]:
        """Scale-from-zero: wake variants at 0 whose model has requests queued at the gateway."""
        at_zero = {n: s for n, s in self._states.items() if s.deployment is not None and s.spec_replicas == 0}
        if not at_zero:
            return []
        now = self.clock.now()
        view = self.build_view(now, self._states, with_pods=False)
        if not any(view.router_queue.get(s.model, 0) > 0 for s in at_zero.values()):
            return []
        out = []
        for d in self.policy.decide_fast(now, view):
            st = self._states.get(d.variant)
            if st is None or st.deployment is None or d.desired_replicas <= d.current_replicas:
                continue
            self._actuate(st, d.desired_replicas, d.current_replicas, d, direct=True)
            out.append(d)
        return out

    # ---- acting on one variant -----------------------------------------------------------------
    def _apply(self, now: float, st: VariantState, d: Decision | None) -> None:
        current = st.spec_replicas
        conds: list[Condition] = []
        desired: int | None = None
        applied = False
        if st.deployment is None:
            conds.append(Condition(TARGET_RESOLVED, False, "TargetNotFound",
                                   f"Deployment {st.target} not found; actuation paused"))
            reason = "TargetNotFound: actuation paused"
        else:
            conds.append(Condition(TARGET_RESOLVED, True, "TargetFound", f"Deployment {st.target} found"))
            if not st.metrics_available:
                conds.append(Condition(METRICS_AVAILABLE, False, "MetricsUnavailable", st.metrics_error))
                desired = self._held.get(st.name, current)
                reason = "Fallback: metrics unavailable, holding last state"
            else:
                conds.append(Condition(METRICS_AVAILABLE, True, "MetricsFound", "vLLM metrics read"))
                desired = d.desired_replicas if d is not None else self._held.get(st.name, current)
                reason = "; ".join(r.message for r in d.reasons)[:1024] if d is not None else "no decision"
            self.publisher.publish(st.name, self.namespace, st.accelerator, desired, current)
            self._held[st.name] = desired
            if desired != current and st.metrics_available and d is not None:
                applied = self._actuate(st, desired, current, d, direct=self.mode == "direct" or current == 0)
            else:
                applied = desired == current
        ready = st.deployment is not None and st.metrics_available and d is not None
        # every cycle's reading in the log, kept with a kube run (kwok/services/logs): what it decided on
        log.info("variant %s: cycle at %d replicas -> %s: %s", st.name, current, desired, reason)
        conds.append(Condition(OPTIMIZATION_READY, ready, "OptimizationSucceeded" if ready else "OptimizationHeld",
                               reason))
        self._write_status(now, st, conds, desired, current, reason, applied)

    def _actuate(self, st: VariantState, desired: int, current: int, d: Decision, direct: bool) -> bool:
        direction = "up" if desired > current else "down"
        self.publisher.publish(st.name, self.namespace, st.accelerator, desired, current)
        self._held[st.name] = desired
        self.publisher.count_scaling(st.name, self.namespace, st.accelerator, direction,
                                     str(d.audit.get("trigger", d.reasons[0].rule)))
        log.info("variant %s: %s %d -> %d (%s)", st.name, direction, current, desired, d.reasons[0].rule)
        if not direct:
            return True  # the HPA / KEDA reading wva_desired_replicas acts
        try:
            self.scaler.scale(self.namespace, st.target, desired)
            return True
        except (Conflict, NotFound) as e:
            log.warning("variant %s: scale of %s failed: %s", st.name, st.target, e)
            return False

    def _write_status(self, now: float, st: VariantState, conds: list[Condition], desired: int | None,
                      current: int, reason: str, applied: bool) -> None:
        va = st.va
        for attempt in range(self.status_retries + 1):
            gen = va["metadata"].get("generation")
            new = build_status(va.get("status"), conditions=conds, desired=desired, current=current, reason=reason,
                               applied=applied, mode="direct" if self.mode == "direct" else self.mode, now_s=now,
                               generation=gen)
            if not status_changed(va.get("status"), new):
                return
            body = {"metadata": {"resourceVersion": va["metadata"]["resourceVersion"]}, "status": new}
            try:
                st.va = self.api.patch_variant_autoscaling_status(self.namespace, st.name, body)
                return
            except Conflict:
                if attempt == self.status_retries:
                    log.warning("variant %s: status conflict persisted after %d retries", st.name, attempt)
                    return
                va = self.api.get_variant_autoscaling(self.namespace, st.name)
            except NotFound:
                return  # deleted meanwhile
