"""When the run's periodic loops tick against the load: a scenario's ``phases``.

On a real cluster no loop starts with the load. The upstream HPA controller syncs an HPA at its creation plus
multiples of its sync period (pkg/controller/podautoscaler/horizontal.go: ``queue.AddRateLimited`` with a
fixed-interval limiter), Prometheus scrapes each target at an offset from the Unix epoch set by a hash of the
target (scrape/target.go ``offset``) and evaluates each rule group at its own hash offset (rules/group.go
``EvalTimestamp``), so their phases against the load differ from run to run. The simulator's defaults put the
control loops at the load's start, the scrape at a seeded offset and each rule group at its name's hash; a
kube run's own phases are measured (the lead by the run: summary.json event ``control_lead``; the scrape and
rule offsets from its Prometheus, benchmarks/sim_vs_real.py), and setting them here runs the simulator in the
phases a real run had (docs/fidelity.md). Every offset is taken modulo its loop's interval.
"""
from __future__ import annotations

from pydantic import Field

from scalearena.harness.config.engine_spec import _Spec


class PhaseSpec(_Spec):

    control_lead_s: float = Field(
        default=0.0, ge=0, le=3600, description="Seconds the control loops ran before the load: each (a policy's "
        "period, an actuation HPA's sync) ticks first at the first multiple of its period after -control_lead_s; "
        "0 = with the load. Kube's in-cluster controllers begin when the run applies their objects: the run "
        "measures that lead (summary.json event control_lead) and refuses this.")
    decide_lead_s: float | None = Field(
        default=None, ge=0, le=3600, description="Seconds the policy's own loop ran before the load where it is "
        "not an HPA's sync (the WVA controller's fixed 30 s ticker, from its process' start); null = "
        "control_lead_s. The simulator only.")
    sync_lag_s: float = Field(
        default=0.0, ge=0, le=5, description="Seconds each sync of an HPA adds to its period: the upstream "
        "controller queues an HPA's next sync a period after its last one ended (processNextWorkItem: "
        "AddRateLimited after reconcileKey), so its syncs fall at creation + k x (period + reconcile time). "
        "Applies to the HPA controller's loops (an HPA's, a ScaledObject's generated HPA, WVA's actuation "
        "HPA), not to controllers on a fixed ticker. 0 = exact periods. The simulator only.")
    keda_query_grid_s: list[float] | None = Field(
        default=None, min_length=2, max_length=2, description="[spacing, offset]: KEDA's Prometheus scaler queries "
        "at the wall clock's whole second (pkg/scalers/prometheus_scaler.go: time.Now().UTC().Format(time.RFC3339)), "
        "up to a second before the sync that asked: the query time is the last offset + k x spacing at or before "
        "it; a kube run's wall seconds are `time_scale` scenario seconds apart, at the fraction its load began on; "
        "null = whole scenario seconds from the load's start ([1, 0]). The simulator only.")
    engine_scrape_s: float | None = Field(
        default=None, ge=0, le=3600, description="Offset of the engines' scrapes (and kube-state-metrics', "
        "unless kube_state_scrape_s gives it its own) after the load's start: every scrape_interval_s from it, "
        "besides the one at 0; null = a seeded offset. The simulator only.")
    kube_state_scrape_s: float | None = Field(
        default=None, ge=0, le=3600, description="Offset of kube-state-metrics' scrapes (the Deployments' "
        "replicas, available and unavailable: what the llm-d recipes read) on a chain of their own; null = "
        "with the engines'. The simulator only.")
    published_scrape_s: float | None = Field(
        default=None, ge=0, le=3600, description="Offset of the scrapes of a published target's exporter (the "
        "WVA controller's wva_desired_replicas, which its actuation HPA reads); null = with the engines'. "
        "The simulator only.")
    gateway_scrape_s: float | None = Field(
        default=None, ge=0, le=3600, description="Offset of the gateway's (the EPP's pool and latency metrics') "
        "scrapes; null = with the engines'. The simulator only.")
    pod_scrape_s: dict[str, list[float]] = Field(
        default_factory=dict, description="Variant -> the scrape offsets of its pods in the order they were first "
        "scraped: the k-th pod to become ready is scraped on a chain of its own at the k-th offset (Prometheus "
        "scrapes every target at its own); pods past the list scrape with the engines. The simulator only.")
    rules_s: dict[str, float] = Field(
        default_factory=dict, description="Recording-rule group name -> the offset of its evaluations after the "
        "load's start; a group not named keeps the offset of its name's hash. The simulator only.")

    def scrape_offset(self, engines: bool, interval_s: float, seeded: float) -> float:
        """The first scrape after 0 of the engines' (or the gateway's) chain, in (0, interval_s]."""
        x = self.engine_scrape_s if engines or self.gateway_scrape_s is None else self.gateway_scrape_s
        if x is None:
            return seeded
        return (x % interval_s) or interval_s
