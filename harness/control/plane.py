"""The control loop every backend runs: build view -> policy.decide -> apply -> sample.

A backend owns *when* (the simulator's event heap, the wall-clock loop of
local/kube) and the adapters (``harness.control.ports``); this class owns
*what happens*: it builds the view (``harness.control.view.build_view``),
asks the policy, clamps the desired replicas to the variant's bounds
(``bounded``: the one place that does, so a decision records what was
applied), writes every decision (the fast loop's only when it acts, as
upstream WVA logs only its wake-ups), hands changes to the ``Actuator``, and samples one
``TimeseriesRecord`` per variant. So a decision sequence or a time series
can only differ between backends through what the adapters report, which
tests/unit/harness/control/test_backend_conformance.py drives with the same script for
every backend.
"""
from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from scalearena.contracts.records import TimeseriesRecord
from scalearena.controllers.base import ArrivalForecast, Autoscaler, ClusterView, Decision, Reason, clamp
from scalearena.harness.control.actuation import PublishedActuation
from scalearena.harness.control.ports import Actuator, Clock, LoadProbe, MetricsSource, ReplicaStatus
from scalearena.harness.control.view import VariantInfo, build_view, oracle_plan


class ControlPlane:
    """One run's control plane. ``policy`` None: sampling only (an in-cluster HPA/KEDA/WVA decides).
    ``writer`` needs ``add_decision`` and ``add_timeseries``
    (a ``reports.results.RunWriter``); ``emit_row`` overrides where sampled rows go."""

    def __init__(self, policy: Autoscaler | None, label: str, variants: Sequence[VariantInfo], *, clock: Clock,
                 metrics: MetricsSource, actuator: Actuator, probe: LoadProbe, writer: Any,
                 forecast: Sequence[ArrivalForecast] = (), gpu_capacity: Mapping[str, int] | None = None,
                 emit_row: Callable[[TimeseriesRecord], None] | None = None,
                 arrived: Callable[[], Mapping[str, int]] | None = None, plan_oracle: bool = True,
                 last_scrape: Callable[[float], float | None] | None = None) -> None:
        self.policy, self.label, self.variants = policy, label, tuple(variants)
        # a policy that publishes its target for an HPA (WVA's default actuation) and a backend that says
        # when its scrapes were: decisions reach the actuator at the HPA's syncs (``sync_published``)
        self.published = PublishedActuation(last_scrape) \
            if last_scrape is not None and getattr(policy, "actuation", "direct") == "hpa" else None
        self.clock, self.metrics, self.actuator, self.probe = clock, metrics, actuator, probe
        self.writer, self.forecast, self.gpu_capacity = writer, forecast, gpu_capacity
        self.emit_row = emit_row or writer.add_timeseries
        self._by_name = {v.name: v for v in self.variants}
        # offered load: each model's scheduled arrivals, counted in (previous sample, now]: from the
        # schedule, or from ``arrived`` (arrivals so far per model, counted by a backend that sends
        # them in order: the simulator, which does not hold the schedule)
        self._arrived_so_far = arrived
        self._arrivals = {} if arrived is not None else {f.model: sorted(f.arrival_s) for f in forecast}
        self._arrived = {m: 0 for m in self._arrivals}
        self._completed_prev: dict[str, int] = {}
        self.last_sample = 0.0
        # the oracle's schedule, for the summary's scaling.vs_oracle (plan_oracle False: the backend writes
        # it itself; the simulator from its request stream, harness.control.view.OraclePlanStream)
        meta = getattr(writer, "meta", None)
        if plan_oracle and isinstance(meta, dict) and forecast and "oracle_plan" not in meta:
            meta["oracle_plan"] = oracle_plan(self.variants, forecast)

    @property
    def fast_period_s(self) -> float | None:
        return getattr(self.policy, "fast_period_s", None)

    # ---- view ---------------------------------------------------------------------------------------
    def replicas(self) -> dict[str, ReplicaStatus]:
        return {v.name: self.actuator.replicas(v.name) for v in self.variants}

    def view(self, now: float | None = None, with_pods: bool = True) -> ClusterView:
        now = self.clock.now() if now is None else now
        return build_view(now, self.variants, self.replicas(), self.metrics,
                          router_queue=self.probe.router_queue(), gpu_capacity=self.gpu_capacity,
                          forecast=self.forecast, with_pods=with_pods)

    # ---- decide + apply -----------------------------------------------------------------------------
    def decide(self, fast: bool = False, now: float | None = None) -> list[Decision]:
        """One pass of the main loop (or the fast loop): decide on a fresh view, record, apply.

        The fast loop (WVA's scale-from-zero, 10 times a second) runs only while a variant at 0
        spec replicas has requests queued at the gateway for its model, and its view carries no
        pod samples (``Autoscaler.decide_fast``), as the in-cluster controller's
        ``reconcile_fast`` does (harness/kube/wva/controller.py): the common case costs one queue read."""
        assert self.policy is not None, "no policy runs here (an in-cluster autoscaler decides)"
        now = self.clock.now() if now is None else now
        if fast and not self._wake_candidates():
            return []
        view = self.view(now, with_pods=not fast)
        asked = self.policy.decide_fast(now, view) if fast else self.policy.decide(now, view)
        decisions = [bounded(d, self._by_name[d.variant]) for d in asked]
        spec = {v.name: v.spec_replicas for v in view.variants} if decisions else {}
        for dec in decisions:
            if not fast:
                self.writer.add_decision(now, self.label, dec)
            elif dec.action != "hold":
                self.writer.add_decision(now, self.label, dec, loop="fast")
            self._apply(dec, spec, now, direct=fast)
        return decisions

    def _wake_candidates(self) -> bool:
        """A variant at 0 spec replicas whose model has requests held at the gateway."""
        queue = self.probe.router_queue()
        if not any(n > 0 for n in queue.values()):
            return False
        status = self.replicas()
        return any(status[v.name].spec == 0 and queue.get(v.model, 0) > 0 for v in self.variants)

    def _apply(self, dec: Decision, spec: dict[str, int], now: float, direct: bool) -> None:
        want = dec.desired_replicas  # already within the variant's bounds (``bounded``)
        if self.published is not None:
            # published: the gauge now, the Deployment at an HPA sync; direct only from 0 (the HPA is
            # disabled there) and on the fast loop, as harness/kube/wva/controller.py actuates
            self.published.publish(dec.variant, now, want)
            direct = direct or spec.get(dec.variant) == 0
            if not direct:
                return
        if want != spec.get(dec.variant):
            spec[dec.variant] = want
            self.actuator.scale(dec.variant, want)

    def sync_published(self, now: float | None = None) -> None:
        """One sync of the actuation HPAs: each writes the scraped target into its Deployment
        (``harness.control.actuation``). Backends call it every ``published.sync_period_s``."""
        if self.published is None:
            return
        now = self.clock.now() if now is None else now
        for v in self.variants:
            want = self.published.sync(v.name, now, self.actuator.replicas(v.name).spec)
            if want is not None:
                self.actuator.scale(v.name, want)

    # ---- sample -------------------------------------------------------------------------------------
    def sample(self, now: float | None = None) -> list[TimeseriesRecord]:
        """One ``TimeseriesRecord`` per variant for the interval (last sample, now]; emitted and returned."""
        now = self.clock.now() if now is None else now
        dt = now - self.last_sample
        offered = self._offered(now)
        queue = dict(self.probe.router_queue())
        held = getattr(self.probe, "flow_held", None)  # flow control's queues: held at the gateway as well
        for m, n in (held() if held is not None else {}).items():
            queue[m] = queue.get(m, 0) + n
        status = self.replicas()  # before load(): a probe may read only the pods found ready here
        load = self.probe.load(now, self.last_sample)
        rows = []
        for info in self.variants:
            st = status[info.name]
            ld = load[info.name]
            kvs, utils = ld.kv_usage, ld.gpu_util
            done = ld.completed_ok
            completed = 0 if done is None else done - self._completed_prev.get(info.name, 0)
            if done is not None:
                self._completed_prev[info.name] = done
            row = TimeseriesRecord(
                t_s=round(now, 6), variant=info.name, model=info.model, spec_replicas=st.spec,
                ready_replicas=len(st.ready), pending_replicas=st.pending, terminating_replicas=st.terminating,
                kv_usage_mean=sum(kvs) / len(kvs) if kvs else None, kv_usage_max=max(kvs) if kvs else None,
                waiting=ld.waiting, running=ld.running, gpu_util_mean=sum(utils) / len(utils) if utils else None,
                offered_rps=offered.get(info.model, 0) / dt if dt > 0 else 0.0,
                completed_rps=completed / dt if dt > 0 else 0.0,
                router_queue=int(queue.get(info.model, 0)), standby_replicas=st.standby,
            )
            rows.append(row)
            self.emit_row(row)
        self.last_sample = now
        return rows

    def _offered(self, now: float) -> dict[str, int]:
        out = {}
        if self._arrived_so_far is not None:
            for m, upto in self._arrived_so_far().items():
                out[m] = upto - self._arrived.get(m, 0)
                self._arrived[m] = upto
            return out
        for m, times in self._arrivals.items():
            upto = bisect_right(times, now)
            out[m] = upto - self._arrived[m]
            self._arrived[m] = upto
        return out


def bounded(dec: Decision, info: VariantInfo) -> Decision:
    """``dec`` with its desired replicas clamped to the variant's ``[min_replicas, max_replicas]``, what the
    actuator gets; unchanged when within them. Where the clamp binds (a user object's ``maxReplicas`` above
    the variant's ``max_replicas``, which models the cluster's room for it) the policy's own count stays in
    ``audit["requested_replicas"]`` and a last ``variant_bounds`` reason says which bound held it, so
    decisions.jsonl, the report and the replicas that ran agree."""
    want = clamp(dec.desired_replicas, info.min_replicas, info.max_replicas)
    if want == dec.desired_replicas:
        return dec
    asked = dec.desired_replicas
    if want < asked:
        why = Reason("variant_bounds", f"{asked} requested; the variant's max_replicas {want} caps it: the cluster "
                     f"has room for {want}", {"requested": asked, "max_replicas": want})
    else:
        why = Reason("variant_bounds", f"{asked} requested; the variant's min_replicas {want} holds it at {want}",
                     {"requested": asked, "min_replicas": want})
    return replace(dec, desired_replicas=want, reasons=(*dec.reasons, why),
                   audit={**dec.audit, "requested_replicas": asked})
