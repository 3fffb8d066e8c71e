"""The scenario schema: one YAML file fully describes one experiment.

Pydantic v2 models with ``extra="forbid"`` (a silently dropped key hides a
stale config) and a description on every field. Precedence: model defaults,
then the YAML file, then ``--set dotted.key=value`` overrides from the CLI.
Every validation error is turned into a ``UserError`` naming the file, the
field path and what was expected.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeAlias, Union

from pydantic import Field, TypeAdapter, ValidationError, field_validator, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from scalearena.contracts.errors import UserError
from scalearena.contracts.limits import (
    MAX_BATCH,
    MAX_COST,
    MAX_GPUS_PER_REPLICA,
    MAX_REPLICAS,
    MAX_SEED,
    loop_intervals,
    work_problem,
)
from scalearena.contracts.suggest import did_you_mean
from scalearena.controllers.registry import REGISTRY
from scalearena.controllers.static import StaticConfig
from scalearena.harness.config.disagg_spec import (
    ROLE_DESCRIPTION,
    DisaggregationSpec,
    KVTransferSpec,
    Role,
    check_roles,
)
from scalearena.harness.config.engine_spec import (  # _Spec: the one base of the scenario's models
    EngineSpec,
    _Spec,
)
from scalearena.harness.config.fault_spec import Fault, PodCrash
from scalearena.harness.config.hardware import GPUTypeSpec
from scalearena.harness.config.overrides import apply_overrides
from scalearena.harness.config.phase_spec import PhaseSpec
from scalearena.harness.config.safe_yaml import read_yaml
from scalearena.harness.config.schema_help import raise_at, validated
from scalearena.harness.config.startup_spec import (
    ColdStartSpec,
    NodePoolSpec,
    SleepModeSpec,
    check_cluster,
    check_variant,
    expected_startup_s,
)
from scalearena.harness.config.warmup import compile_warmup
from scalearena.harness.sim.engine.catalog import GPUSpec
from scalearena.workloads.spec import WorkloadSpec

if TYPE_CHECKING:
    from scalearena.controllers.base import AutoscalerConfig


class VariantSpec(_Spec):
    name: str = Field(description="Variant (one Deployment / VariantAutoscaling).", pattern=r"^[a-z0-9][a-z0-9-]*$")
    model: str = Field(description="Logical model (modelID) this variant serves.")
    gpu: str = Field(description="GPU type: a catalog name (A100-80GB, H100-SXM, H200, L40S, ...) or a key of "
                     "cluster.gpu_types.")
    gpus_per_replica: int = Field(default=1, ge=1, le=MAX_GPUS_PER_REPLICA, description="GPUs one replica occupies.")
    cost: float = Field(default=10.0, gt=0, le=MAX_COST, description="variantCost: relative cost per replica per hour.")
    min_replicas: int = Field(default=1, ge=0, description="Lower bound on replicas.")
    max_replicas: int = Field(default=10, ge=1, description="Upper bound on replicas.")
    initial_replicas: int | None = Field(default=None, ge=0, description="Replicas at t=0; null = min_replicas.")
    startup_s: float = Field(default=60.0, ge=0, description="Cold start (image pull + model load), seconds.")
    termination_grace_s: float = Field(
        default=30.0, ge=0, description="Grace period; requests still running at its end fail as killed."
    )
    engine: EngineSpec = Field(description="Serving engine settings.")
    role: Role = Field(default="both", description=ROLE_DESCRIPTION)
    cold_start: ColdStartSpec | None = Field(default=None, description="Start-up as phases (scheduling, image "
                                             "pull, weight load, warm-up); null = startup_s as one phase.")
    sleep_mode: SleepModeSpec | None = Field(default=None, description="vLLM sleep mode: a scale-down puts a "
                                             "replica to sleep (GPUs kept), a scale-up wakes it in seconds.")
    warm_buffer: int = Field(default=0, ge=0, le=MAX_REPLICAS, description="Pods kept started and Ready but out "
                             "of the router; a scale-up takes one at once and a new one starts behind it.")

    @model_validator(mode="after")
    def _start_up(self) -> VariantSpec:
        raise_at("VariantSpec", check_variant(self))
        if self.cold_start is not None:  # startup_s: the phases' mean (the oracle's lead time, kube's probe delay)
            object.__setattr__(self, "startup_s", expected_startup_s(self))
        return self

    @model_validator(mode="after")
    def _bounds(self) -> VariantSpec:
        if self.min_replicas > self.max_replicas:
            raise ValueError(f"min_replicas {self.min_replicas} exceeds max_replicas {self.max_replicas}")
        if self.initial_replicas is not None and not (
            self.min_replicas <= self.initial_replicas <= self.max_replicas
        ):
            raise ValueError("initial_replicas must lie within [min_replicas, max_replicas]")
        return self

    @property
    def start_replicas(self) -> int:
        return self.min_replicas if self.initial_replicas is None else self.initial_replicas


class ClusterSpec(_Spec):
    variants: list[VariantSpec] = Field(min_length=1, description="Deployments, one per variant.")
    gpu_capacity: dict[str, Annotated[int, Field(ge=0, le=MAX_REPLICAS * MAX_GPUS_PER_REPLICA)]] | None = Field(
        default=None, description="GPUs available per GPU type (CapacityDiscovery); null = unlimited."
    )
    warm_start: bool = Field(
        default=True,
        description="Initial replicas are ready at t=0 (a deployment warmed before the run); "
        "false: they cold-start like every later pod.",
    )
    gpu_types: dict[str, GPUTypeSpec] = Field(
        default_factory=dict, description="Own GPU types by name (datasheet figures); override catalog entries.")
    kv_transfer: KVTransferSpec = Field(default_factory=KVTransferSpec, description="Prefill-to-decode KV hand-off.")
    node_pools: list[NodePoolSpec] = Field(default_factory=list, description="GPU nodes per GPU type, added and "
                                           "removed as the cluster autoscaler does; a GPU type without one is "
                                           "limited by gpu_capacity only.")

    @model_validator(mode="after")
    def _unique(self) -> ClusterSpec:
        from scalearena.harness.sim.engine.catalog import ALIASES, GPUS

        names = [v.name for v in self.variants]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise ValueError(f"duplicate variant names: {sorted(dup)}")
        for i, v in enumerate(self.variants):
            if v.gpu not in self.gpu_types and ALIASES.get(v.gpu, v.gpu) not in GPUS:
                known = ", ".join([*self.gpu_types, *GPUS])
                msg = f"Value error, unknown GPU type {v.gpu!r}; expected one of {known} (or describe it " \
                      "under cluster.gpu_types)"
                err = PydanticCustomError("value_error", msg)  # raised at the variant's own field path
                raise ValidationError.from_exception_data(
                    "ClusterSpec", [InitErrorDetails(type=err, loc=("variants", i, "gpu"), input=v.gpu)])
        check_roles(self.variants, self.kv_transfer)
        raise_at("ClusterSpec", check_cluster(self))
        return self

    def gpu(self, name: str) -> GPUSpec:
        """The datasheet of a GPU type: ``gpu_types`` first, then the catalog."""
        from scalearena.harness.sim.engine.catalog import gpu_spec

        return gpu_spec(name, {k: g.to_gpu(k) for k, g in self.gpu_types.items()})


# ---- router (llm-d EPP-like) ------------------------------------------------------------------


class ScorerWeights(_Spec):
    queue: float = Field(default=1.0, ge=0, description="queue-scorer weight (fewer waiting is better).")
    kv_cache: float = Field(default=1.0, ge=0, description="kv-cache-scorer weight (lower KV usage is better).")
    prefix_cache: float = Field(default=1.0, ge=0, description="prefix-cache-scorer weight (affinity).")


class AdmissionSpec(_Spec):
    kind: Literal["saturation", "none", "flow_control"] = Field(
        default="flow_control", description="flow_control (default, as a current llm-d stack): hold requests "
        "in gateway queues while every ready pod is saturated, until a pod has room (llm-d EPP flow control: "
        "strict priority, round-robin over tenants, FCFS); saturation: reject with 429 when every ready pod is "
        "saturated (the WVA paper's and llm-d-inference-sim's set-up); none: always dispatch."
    )
    kv_threshold: float = Field(default=0.8, gt=0, le=1, description="A pod is saturated at KV usage >= this.")
    queue_threshold: int = Field(default=5, ge=0, le=MAX_BATCH, description="A pod is saturated at waiting >= this.")
    queue_limit: int = Field(
        default=1000, ge=0, le=MAX_BATCH, description="Requests the gateway holds per model while no pod is ready "
        "(scale from zero) and, under flow_control, while every pod is saturated; beyond it 429."
    )
    ttl_s: float | None = Field(
        default=None, gt=0, description="flow_control: a request held this long is evicted with 503; null = no "
        "TTL (upstream DefaultRequestTTL 0: the client's timeout ends the wait).")


class RouterSpec(_Spec):
    scorers: ScorerWeights = Field(default_factory=ScorerWeights, description="Scorer weights.")
    admission: AdmissionSpec = Field(default_factory=AdmissionSpec, description="Admission control.")
    refresh_s: float = Field(default=0.05, gt=0, description="How often the router refreshes pod metrics, s.")
    disaggregation: DisaggregationSpec = Field(default_factory=DisaggregationSpec, description="P/D decider.")


# ---- the rest ----------------------------------------------------------------------------------


class SLOSpec(_Spec):
    ttft_ms: float = Field(default=2000.0, gt=0, description="TTFT objective, ms (goodput counts requests meeting it).")
    itl_ms: float = Field(default=100.0, gt=0, description="Mean inter-token latency objective, ms.")


class MetricsSpec(_Spec):
    scrape_interval_s: float = Field(default=15.0, gt=0, description="Prometheus scrape interval, seconds.")
    staleness_s: float = Field(
        default=300.0, gt=0, description="A series with no sample for this long is stale (Prometheus: 5m)."
    )
    sample_interval_s: float = Field(
        default=5.0, gt=0, description="How often the harness records timeseries.parquet rows, seconds."
    )


class ClientSpec(_Spec):
    timeout_s: float = Field(default=120.0, gt=0, description="Client gives up after this long (status timeout).")


# The discriminated union of every registered autoscaler's config, keyed on `kind`. It is built at import
# time from the registry, which mypy cannot follow; statically every member is an AutoscalerConfig.
if TYPE_CHECKING:
    AutoscalerConfigUnion: TypeAlias = AutoscalerConfig
else:
    AutoscalerConfigUnion = Annotated[
        Union[tuple(e.config for e in REGISTRY.entries())],  # noqa: UP007
        Field(discriminator="kind"),
    ]


class Scenario(_Spec):
    name: str = Field(description="Scenario name (results folder).", pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    description: str = Field(default="", description="What this scenario shows.")
    duration_s: float = Field(gt=0, description="Length of the run, seconds (arrivals stop here).")
    drain_s: float = Field(
        default=0.0, ge=0, description="Time after the last arrival for in-flight requests to finish; every "
        "backend samples and bills until duration_s + drain_s (the run's window).",
    )
    seed: int = Field(default=0, ge=0, le=MAX_SEED, description="Seed for every random generator of the run.")
    cluster: ClusterSpec = Field(description="Variants and GPU pool.")
    router: RouterSpec = Field(default_factory=RouterSpec, description="Gateway / endpoint picker.")
    workload: list[WorkloadSpec] = Field(
        min_length=1, description="Traffic: one workload (a mapping) or a list of them, one per model."
    )
    autoscalers: list[AutoscalerConfigUnion] = Field(
        default_factory=list,
        description="Autoscalers to compare with their parameters; empty = every registered one with defaults.",
    )
    slo: SLOSpec = Field(default_factory=SLOSpec, description="Service-level objectives.")
    attainment_target: float | None = Field(
        default=None, ge=0, le=1, description="SLO attainment (share of requests meeting the SLO) an autoscaler "
        "must reach to be picked by the report's verdict; null = the suite's, else 0.95.")
    metrics: MetricsSpec = Field(default_factory=MetricsSpec, description="Scraping and sampling.")
    phases: PhaseSpec = Field(default_factory=PhaseSpec, description="When the periodic loops tick against the load "
                              "(control loops, scrapes, rule groups): a real run's measured phases (docs/fidelity.md).")
    client: ClientSpec = Field(default_factory=ClientSpec, description="Load-generator client settings.")
    faults: list[Fault] = Field(default_factory=list, description="Scheduled faults.")

    @field_validator("workload", mode="before")
    @classmethod
    def _one_or_many(cls, v: Any) -> Any:
        return [v] if isinstance(v, dict) else v

    @model_validator(mode="after")
    def _cross(self) -> Scenario:
        models = {v.model for v in self.cluster.variants}
        for w in self.workloads:
            if w.model is not None and w.model not in models:
                raise ValueError(f"workload model {w.model!r} is served by no variant (have {sorted(models)})")
        labels = [a.label for a in self.autoscalers]
        dup = {n for n in labels if labels.count(n) > 1}
        if dup:
            raise ValueError(f"duplicate autoscaler labels {sorted(dup)}: give each a distinct `name`")
        names = {v.name for v in self.cluster.variants}
        for f in self.faults:
            if isinstance(f, PodCrash) and f.variant and f.variant not in names:
                raise ValueError(f"fault names unknown variant {f.variant!r}")
        for a in self.autoscalers:  # a static pool's count of a variant the cluster does not have was ignored
            unknown = sorted(set(a.per_variant) - names) if isinstance(a, StaticConfig) else []
            if unknown:
                raise ValueError(f"autoscaler {a.label!r}: per_variant names no variant of the cluster: "
                                 f"{', '.join(map(repr, unknown))} (have {', '.join(sorted(names))})")
        self._check_work()
        return self

    def _check_work(self) -> None:
        """Refuse, before generating anything, a run whose rate, requests or loop steps exceed the limits: the
        scenario's own loops (scrape, sample, node pools) and each autoscaler's, found by field name."""
        loops = {**loop_intervals(self.model_dump(exclude={"autoscalers"})), **{
            k: v for a in self.autoscalers for k, v in loop_intervals(a.model_dump(), f"autoscaler {a.label} ").items()}}
        problem = work_problem([w.arrivals.peak_rps for w in self.workloads], self.duration_s, self.window_s, loops)
        if problem:
            raise ValueError(problem)

    @property
    def window_s(self) -> float:
        """The end of the run's window, [0, duration_s + drain_s]: the one span every backend (sim, local,
        kube) samples, integrates GPU-hours and cost over and reports means on (docs/metrics.md "The run's
        window"), so the same scenario is billed alike everywhere. The simulator runs to it even when it has
        nothing left in flight; a wall-clock run that overstays it (the load still finishing) is clipped to
        it when its timeseries is integrated (reports/usage.py)."""
        return self.duration_s + self.drain_s

    @property
    def workloads(self) -> list[WorkloadSpec]:
        return list(self.workload)

    def model_of(self, w: WorkloadSpec) -> str:
        return w.model or self.cluster.variants[0].model

    def autoscaler(self, name: str) -> Any:
        """The config for an autoscaler label or kind: from the scenario, else registry defaults."""
        for a in self.autoscalers:
            if a.label == name:
                return a
        for a in self.autoscalers:
            if a.kind == name:
                return a
        if name not in {e.name for e in REGISTRY.entries()}:
            known = sorted({a.label for a in self.autoscalers} | set(REGISTRY.names()))
            raise UserError(f"unknown autoscaler {name!r}{did_you_mean(name, known)}",
                            expected="one of " + ", ".join(known))
        return self.for_scenario(REGISTRY.default_config(name))

    def autoscaler_configs(self) -> list[Any]:
        return list(self.autoscalers) or [self.autoscaler(n) for n in self.registered()]

    def registered(self) -> list[str]:
        """Every registered autoscaler that runs on this scenario with its defaults (a P/D recipe needs P/D pools)."""
        from scalearena.harness.objects.recipes import applies

        return [n for n in REGISTRY.names() if applies(n, self)]

    def for_scenario(self, cfg: Any) -> Any:
        """A registry default made concrete for this scenario: an llm-d recipe's objects are read with the
        scenario's placeholders (harness/objects/recipes.py); every other config is returned as is."""
        from scalearena.controllers.llmd import RecipeConfig

        if not isinstance(cfg, RecipeConfig):
            return cfg
        from scalearena.harness.objects.recipes import compile_recipe

        return compile_recipe(cfg, self)


# ---- loading -----------------------------------------------------------------------------------


def scenario_from_data(data: Any, where: str, base_dir: Path | None = None) -> Scenario:
    if not isinstance(data, dict):
        raise UserError("a scenario must be a YAML mapping", where=where)
    sc = validated(Scenario, data, where, context={"base_dir": base_dir})
    return compile_warmup(compile_objects(_resolve_paths(sc, base_dir), base_dir), base_dir)


def compile_objects(sc: Scenario, base_dir: Path | None) -> Scenario:
    """Read the files of every ``kind: kubernetes`` autoscaler (harness/objects) into its config: paths made
    absolute (relative ones are against the scenario file), targets and rule groups filled in."""
    from scalearena.controllers.llmd import RecipeConfig

    if not any(a.kind == "kubernetes" or isinstance(a, RecipeConfig) for a in sc.autoscalers):
        return sc
    from scalearena.harness.objects import compile_objects as compile_one

    variants = {v.name: v.model for v in sc.cluster.variants}
    out = []
    for a in sc.autoscalers:
        if isinstance(a, RecipeConfig):
            if base_dir is not None:
                a = a.model_copy(update={"objects": [p if Path(p).is_absolute() or not (base_dir / p).exists()
                                                     else str((base_dir / p).resolve()) for p in a.objects]})
            a = sc.for_scenario(a)
        elif a.kind == "kubernetes":
            paths = [p if base_dir is None or Path(p).is_absolute() else str((base_dir / p).resolve())
                     for p in a.objects]
            a = compile_one(a.model_copy(update={"objects": paths}), None, variants)
        out.append(a)
    return sc.model_copy(update={"autoscalers": out})


def _resolve_paths(sc: Scenario, base_dir: Path | None) -> Scenario:
    """Make trace / empirical file paths absolute (relative to the scenario file)."""
    if base_dir is None:
        return sc
    data = sc.model_dump(mode="python")
    for w in data["workload"]:
        for part in (w.get("arrivals"), w.get("input_tokens"), w.get("output_tokens")):
            if isinstance(part, dict) and "path" in part and not Path(part["path"]).is_absolute():
                cand = (base_dir / part["path"]).resolve()
                if cand.exists():
                    part["path"] = str(cand)
    return Scenario.model_validate(data)


def load_scenario(path: str | Path, overrides: list[str] | None = None, seed: int | None = None,
                  add_autoscalers: list[dict[str, Any]] | None = None) -> Scenario:
    """The scenario of ``path`` with ``--set`` overrides, the seed and the autoscalers ``--objects`` adds."""
    data = read_yaml(path)
    if add_autoscalers and isinstance(data, dict):
        data["autoscalers"] = [*(data.get("autoscalers") or []), *add_autoscalers]
    if overrides:
        data = apply_overrides(data, overrides, where=str(path))
    if seed is not None and isinstance(data, dict):
        data["seed"] = seed
    return scenario_from_data(data, str(path), Path(path).resolve().parent)


ScenarioAdapter = TypeAdapter(Scenario)

