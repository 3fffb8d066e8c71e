"""The one contract every autoscaler implements.

Autoscalers are policies: they never read the wall clock and never talk to
Kubernetes or Prometheus. The harness hands them the current (virtual or wall)
time and a read-only ``ClusterView`` built from a ``MetricsSource``; they return
immutable ``Decision`` objects that an ``Actuator`` applies. The same policy
object therefore runs unchanged on the simulator, on local processes and on
Kubernetes.

A policy may keep history (HPA's stabilisation window, cooldown timestamps,
EWMA state) but that history is a function of the sequence of (now, view)
calls only, so runs are deterministic.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Protocol

from pydantic import Field

from scalearena.contracts.limits import StrictSpec
from scalearena.contracts.tunable import Tunable, declared


@dataclass(frozen=True)
class PodMetrics:
    """The latest scraped sample of one pod (what an instant query returns)."""

    pod: str
    ts: float  # scrape time of this sample, seconds
    kv_usage: float  # vllm:kv_cache_usage_perc, 0..1
    waiting: int  # vllm:num_requests_waiting
    running: int  # vllm:num_requests_running
    gpu_util: float | None = None  # busy fraction over the last scrape interval, 0..1
    num_gpu_blocks: int | None = None  # from vllm:cache_config_info
    block_size: int | None = None


class MetricsReader(Protocol):
    """Windowed queries over scraped metrics, the PromQL the upstreams use.

    Every method raises ``contracts.errors.MetricsUnavailable`` when the backend
    cannot be reached or holds no fresh data.
    """

    def pod_max_over_time(self, variant: str, metric: str, window_s: float) -> dict[str, float]:
        """``max by (pod)(max_over_time(metric{variant}[window]))`` -> {pod: value}."""
        ...

    def pod_avg_over_time(self, variant: str, metric: str, window_s: float) -> dict[str, float]:
        """``avg by (pod)(avg_over_time(metric{variant}[window]))`` -> {pod: value}."""
        ...

    def counter_increase(self, variant: str, metric: str, window_s: float) -> float:
        """``sum(increase(metric{variant}[window]))`` over the variant's pods."""
        ...

    def histogram_quantile(self, variant: str, metric: str, q: float, window_s: float) -> float | None:
        """``histogram_quantile(q, sum by (le)(rate(metric_bucket{variant}[window])))`` in seconds,
        None when no observation fell in the window."""
        ...

    def query(self, expr: str, at: float | None = None) -> list[dict[str, Any]]:
        """PromQL instant query at ``at`` (default: the time the view was built for) -> Prometheus' JSON
        ``result`` vector: ``[{"metric": {label: value}, "value": [t, "1.5"]}]``. What an HPA metric or a
        KEDA trigger written as PromQL reads (``signals.query_rows``)."""
        ...


class StepModel(Protocol):
    """The serving model's time for one engine step (the roofline latency model), as a policy may
    read it: ``prefill_tokens`` prompt tokens (``prefill_pairs`` attention pairs) prefilled next to
    ``n_decoding`` sequences decoding one token over ``ctx_tokens`` tokens of context in all."""

    def step_s(self, prefill_tokens: int, prefill_pairs: float, n_decoding: int, ctx_tokens: float) -> float: ...


class ReplicaProfile(Protocol):
    """One replica's latency under steady load, swept from the variant's latency model by the harness
    (harness/sim/engine/profile.py) as Dynamo's pre-deployment profiler sweeps a real engine: for a mix of
    mean ``isl`` prompt and ``osl`` output tokens and ``batch`` sequences running, the TTFT of a new
    arrival and the inter-token latency, both in seconds, interpolated between the swept points."""

    kv_tokens: int  # the KV cache's capacity in tokens
    max_num_seqs: int

    def ttft_s(self, isl: float, osl: float, batch: Sequence[int]) -> Sequence[float]: ...

    def itl_s(self, isl: float, osl: float, batch: Sequence[int]) -> Sequence[float]: ...


@dataclass(frozen=True)
class Admission:
    """The gateway's saturation test as it applies to a variant's pods (llm-d EPP saturation detector,
    harness/sim/router.py): a pod is saturated at KV usage >= ``kv_threshold`` or ``waiting`` >=
    ``queue_threshold`` and gets no new request while another pod is not; when every pod is saturated
    ``kind`` saturation rejects (429) and flow_control holds the request. So the router, not only the
    engine, bounds what one replica holds: a policy that sizes replicas from per-replica capacity must
    plan each replica below it."""

    kind: Literal["saturation", "flow_control"]
    kv_threshold: float  # 0..1
    queue_threshold: int


@dataclass(frozen=True)
class VariantView:
    """One variant (one Deployment) as a controller sees it."""

    name: str
    model: str
    gpu: str
    gpus_per_replica: int
    cost: float
    min_replicas: int
    max_replicas: int
    spec_replicas: int  # desired replicas currently set on the deployment
    ready: int  # pods serving
    pending: int  # pods created but not ready (scheduling + cold start)
    terminating: int
    pods: tuple[PodMetrics, ...]  # latest sample of each ready pod that metrics cover
    metrics_available: bool  # False: the metrics backend could not be read at all
    target_exists: bool = True  # False: the scale target (Deployment) is missing
    startup_s: float | None = None  # expected cold start of a new replica (oracle lead time), if known
    engine: Mapping[str, Any] = field(default_factory=dict)
    # ^ the variant's engine settings as its Deployment args reveal them: max_num_seqs, kv_cache_blocks,
    #   block_size, max_waiting_queue, latency {kind, ...}; empty when unknown
    step_model: StepModel | None = None  # the variant's roofline step-time model (None: not a roofline engine)
    starting: int = 0  # of ``pending``: bound and running, not Ready yet (phase Running); the rest are
    #   in phase Pending. 0 where the backend cannot tell (all counted Pending)
    profile: ReplicaProfile | None = None  # the swept latency table of one replica (None: engine unknown)
    admission: Admission | None = None  # the gateway's saturation test for its pods (None: none, or unknown)
    role: str = "both"  # llm-d.ai/role of its pods: both (aggregated), prefill or decode (P/D disaggregation)
    termination_grace_s: float | None = None  # the pods' terminationGracePeriodSeconds (None: unknown)


@dataclass(frozen=True)
class ArrivalForecast:
    """The future arrival schedule; only the ``oracle`` autoscaler reads it."""

    model: str
    arrival_s: Sequence[float]
    input_tokens: Sequence[int]
    output_tokens: Sequence[int]


@dataclass(frozen=True)
class ClusterView:
    now: float
    variants: tuple[VariantView, ...]
    metrics: MetricsReader
    router_queue: Mapping[str, int] = field(default_factory=dict)  # model -> requests queued at the gateway
    gpu_capacity: Mapping[str, int] | None = None  # gpu type -> GPUs in the pool (CapacityDiscovery); None = unknown
    forecast: Sequence[ArrivalForecast] = ()  # a tuple, or a sequence made on first read (simulator)

    def variant(self, name: str) -> VariantView:
        for v in self.variants:
            if v.name == name:
                return v
        raise KeyError(name)

    def by_model(self) -> dict[str, list[VariantView]]:
        out: dict[str, list[VariantView]] = {}
        for v in self.variants:
            out.setdefault(v.model, []).append(v)
        return out


@dataclass(frozen=True)
class Reason:
    """One step of the audit trail: which rule fired and with which numbers."""

    rule: str
    message: str
    values: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "message": self.message, "values": dict(self.values)}


Action = Literal["scale_up", "scale_down", "hold", "alert"]


@dataclass(frozen=True)
class Decision:
    """What an autoscaler wants for one variant, and why."""

    variant: str
    current_replicas: int
    desired_replicas: int
    reasons: tuple[Reason, ...]
    alerts: tuple[str, ...] = ()
    limited: bool = False  # cut short by a capacity limiter (WVA constrained mode)
    audit: Mapping[str, Any] = field(default_factory=dict)  # stage outputs: analyzer, optimizer, limiter

    def __post_init__(self) -> None:
        if not self.reasons:
            raise ValueError(f"decision for {self.variant} carries no reason")
        if self.desired_replicas < 0:
            raise ValueError(f"decision for {self.variant}: negative desired replicas {self.desired_replicas}")

    @property
    def action(self) -> Action:
        if self.desired_replicas > self.current_replicas:
            return "scale_up"
        if self.desired_replicas < self.current_replicas:
            return "scale_down"
        return "alert" if self.alerts else "hold"

    def to_dict(self) -> dict[str, Any]:
        return {
            "variant": self.variant,
            "current_replicas": self.current_replicas,
            "desired_replicas": self.desired_replicas,
            "action": self.action,
            "reasons": [r.to_dict() for r in self.reasons],
            "alerts": list(self.alerts),
            "limited": self.limited,
            "audit": dict(self.audit),
        }


class AutoscalerConfig(StrictSpec):
    """Fields every autoscaler config has; each autoscaler subclasses this with
    ``kind: Literal["<name>"]`` and its own parameters (upstream defaults). ``StrictSpec`` refuses
    unknown keys, NaN/inf and numbers past the documented limit of their unit (contracts/limits.py)."""

    kind: str = Field(description="Which autoscaler (registry name).")
    name: str | None = Field(
        default=None,
        description="Label for this configuration in results (defaults to kind); lets one suite compare "
        "two settings of the same autoscaler.",
        pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$",
    )

    @property
    def label(self) -> str:
        return self.name or self.kind

    def tunables(self) -> list[Tunable]:
        """The parameters ``scalearena tune`` searches by default, with this configuration's values as
        defaults: every field declared with ``json_schema_extra=tune(...)`` (contracts/tunable.py). A config
        whose space depends on its contents (HPA metrics, KEDA triggers, object placeholders) extends it."""
        return declared(self)


class Autoscaler(Protocol):
    """An autoscaling policy.

    ``period_s``: how often the harness calls ``decide``. ``hpa_sync`` (optional, default False): on a real
    cluster that loop is the HPA controller's sync (an HPA, a ScaledObject's generated HPA), whose next sync is
    queued a period after the last one ended, so the simulator lengthens its period by ``phases.sync_lag_s``.
    ``fast_period_s``
    (optional, e.g. WVA's 100 ms scale-from-zero loop): when not None the
    harness also calls ``decide_fast`` at that period; it should return
    decisions only when it acts. It is a scale-from-zero loop: the harness calls it only while
    a variant at 0 spec replicas has requests queued at the gateway for its model, with a view
    of replica counts and the gateway queue but no pod samples (``VariantView.pods`` empty).
    """

    kind: ClassVar[str]
    period_s: float
    fast_period_s: float | None

    def decide(self, now: float, view: ClusterView) -> list[Decision]: ...

    def decide_fast(self, now: float, view: ClusterView) -> list[Decision]: ...


class AutoscalerBase:
    """Convenience base: holds the config, no fast loop by default."""

    kind: ClassVar[str] = ""
    fast_period_s: float | None = None
    hpa_sync: bool = False  # its loop is the HPA controller's sync on a real cluster (Autoscaler)

    def __init__(self, config: AutoscalerConfig) -> None:
        self.config = config

    @property
    def period_s(self) -> float:
        return float(getattr(self.config, "period_s", 15.0))

    def decide(self, now: float, view: ClusterView) -> list[Decision]:
        raise NotImplementedError

    def decide_fast(self, now: float, view: ClusterView) -> list[Decision]:
        return []


def clamp(value: int, lo: int, hi: int) -> int:
    return max(lo, min(hi, value))


class Policies(Protocol):
    """Every registered autoscaler, as a policy that wraps another (``predictive``) sees them."""

    def config_of(self, kind: str) -> type[AutoscalerConfig]: ...

    def build(self, config: AutoscalerConfig) -> Autoscaler: ...


_POLICIES: Policies | None = None  # the one registry, once controllers.registry has built it


def register_policies(registry: Policies) -> None:
    """Called by controllers.registry as it is built: a wrapping policy reaches the registry through here,
    so no policy module imports the registry that imports it (no import cycle)."""
    global _POLICIES
    _POLICIES = registry


def policies() -> Policies:
    """The registry of every autoscaler (controllers.registry.REGISTRY)."""
    if _POLICIES is None:
        raise RuntimeError("controllers.registry is not loaded: import it before validating a wrapping policy")
    return _POLICIES
