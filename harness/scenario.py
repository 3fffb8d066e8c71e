"""The scenario schema: one YAML file fully describes one experiment.

Pydantic v2 models with ``extra="forbid"`` (a silently dropped key hides a
stale config) and a description on every field. Precedence: model defaults,
then the YAML file, then ``--set dotted.key=value`` overrides from the CLI.
Every validation error is turned into a ``UserError`` naming the file, the
field path and what was expected.
"""
from __future__ import annotations

import copy
import functools
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeAlias, Union, cast

from pydantic import (
    BaseModel,
    Discriminator,
    Field,
    Tag,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

from scalearena.contracts.errors import UserError
from scalearena.contracts.limits import (
    MAX_BATCH,
    MAX_COST,
    MAX_GPUS_PER_REPLICA,
    MAX_KV_BLOCKS,
    MAX_REPLICAS,
    MAX_REQUESTS,
    MAX_SEED,
    MAX_STEPS,
    MAX_TOKENS,
    StrictSpec,
)
from scalearena.contracts.suggest import did_you_mean
from scalearena.controllers.base import StepModel
from scalearena.controllers.registry import REGISTRY
from scalearena.workloads.spec import WorkloadSpec

from .engine.catalog import GPUSpec, ModelShape
from .engine.latency import build_latency
from .hardware import GPUTypeSpec, ModelShapeSpec, read_hf_config
from .safe_yaml import parse_yaml, read_yaml
from .schema_help import fields_at

if TYPE_CHECKING:
    from scalearena.controllers.base import AutoscalerConfig


class _Spec(StrictSpec):
    """Extra keys forbidden, frozen, NaN/inf and numbers past their unit's limit refused."""


# ---- serving engine ---------------------------------------------------------------------------


class ConstantLatency(_Spec):
    """llm-d-inference-sim semantics."""

    kind: Literal["constant"] = Field(description="Fixed per-token latencies (llm-d-inference-sim).")
    ttft_ms: float = Field(default=0.0, ge=0, description="time-to-first-token base, ms.")
    itl_ms: float = Field(default=0.0, ge=0, description="inter-token-latency, ms.")
    prefill_overhead_ms: float = Field(default=0.0, ge=0, description="prefill-overhead added to TTFT, ms.")
    prefill_time_per_token_ms: float = Field(
        default=0.0, ge=0, description="prefill-time-per-token: TTFT grows by this per prompt token, ms."
    )
    time_factor_under_load: float = Field(
        default=1.0,
        ge=1.0,
        description="Latency multiplier at a full batch: factor 1 + (f-1)(nRunning-1)/(maxNumSeqs-1).",
    )


ShapeRef: TypeAlias = Annotated[
    Annotated[str, Tag("catalog")] | Annotated[ModelShapeSpec, Tag("inline")],
    Discriminator(lambda v: "catalog" if isinstance(v, str) else "inline"),
]  # a catalog name or an inline shape; the tag keeps errors on the branch the user meant


class RooflineLatency(_Spec):
    kind: Literal["roofline"] = Field(description="Step time from GPU x model shape x tensor parallelism.")
    model_shape: ShapeRef = Field(
        description="A catalog name (qwen3-0.6b, qwen3-8b, llama3-8b, llama3-70b, qwen3-30b-a3b), an inline "
        "shape, or {config: path/to/config.json} (a Hugging Face config read from disk).")
    tp: int = Field(default=1, ge=1, le=MAX_GPUS_PER_REPLICA, description="Tensor-parallel degree (GPUs per replica share the model).")
    compute_efficiency: float | None = Field(
        default=None, gt=0, le=1, description="Fraction of peak FLOP/s reached; null = calibrated default."
    )
    memory_efficiency: float | None = Field(
        default=None, gt=0, le=1, description="Fraction of HBM bandwidth reached; null = calibrated default."
    )
    step_overhead_ms: float | None = Field(
        default=None, ge=0, description="Fixed per-step overhead, ms; null = calibrated default."
    )

    @field_validator("model_shape", mode="before")
    @classmethod
    def _read_config(cls, v: Any, info: ValidationInfo) -> Any:
        base = (info.context or {}).get("base_dir")
        return read_hf_config(v, Path(base) if base is not None else None)

    @field_validator("model_shape")
    @classmethod
    def _known_shape(cls, v: str | ModelShapeSpec) -> str | ModelShapeSpec:
        from .engine.catalog import MODELS

        if isinstance(v, str) and v.lower() not in MODELS:
            raise ValueError(f"unknown model shape {v!r}; expected one of {', '.join(MODELS)}, an inline shape "
                             "or {config: path/to/config.json}")
        return v

    @model_validator(mode="after")
    def _tp_divides_heads(self) -> RooflineLatency:
        heads = self.shape().heads
        if heads % self.tp:
            raise ValueError(f"tp {self.tp} must divide the model's {heads} attention heads (vLLM's check)")
        return self

    def shape(self) -> ModelShape:
        """The engine's ModelShape of this variant."""
        from .engine.catalog import model_shape

        return model_shape(self.model_shape) if isinstance(self.model_shape, str) else self.model_shape.to_shape()


LatencyModel = Annotated[ConstantLatency | RooflineLatency, Field(discriminator="kind")]


class EngineSpec(_Spec):
    max_num_seqs: int = Field(default=256, ge=1, le=MAX_BATCH, description="vLLM --max-num-seqs: sequences in a batch.")
    kv_cache_blocks: int | None = Field(
        default=None, ge=1, le=MAX_KV_BLOCKS, description="num_gpu_blocks; null = derived from free GPU memory (roofline)."
    )
    block_size: int = Field(default=16, ge=1, le=4096, description="Tokens per KV block.")
    max_waiting_queue: int | None = Field(
        default=None, ge=0, le=MAX_BATCH,
        description="Waiting-queue limit, beyond it HTTP 429 (llm-d-inference-sim's --max-waiting-queue-length, "
        "1000 in the paper's set-up); null = unbounded, as vLLM queues (overload shows as latency).")
    max_model_len: int | None = Field(
        default=None, ge=1, le=MAX_TOKENS,
        description="Longest prompt + max_tokens accepted (else 400 too_long); null = the KV cache's capacity.")
    max_num_batched_tokens: int = Field(
        default=8192, ge=1, le=MAX_TOKENS,
        description="vLLM --max-num-batched-tokens: tokens per step (decodes first, then prompt chunks).")
    gpu_memory_utilization: float = Field(
        default=0.9, gt=0, le=1, description="Share of GPU memory vLLM may use (KV derivation)."
    )
    enable_prefix_caching: bool = Field(
        default=False, description="vLLM automatic prefix caching: prompt blocks cached by hash chain skip "
        "prefill (simulator; needs trace hash_ids or shared-prefix groups).")
    latency: LatencyModel = Field(description="Latency model.")


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

    @model_validator(mode="after")
    def _unique(self) -> ClusterSpec:
        from .engine.catalog import ALIASES, GPUS

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
        return self

    def gpu(self, name: str) -> GPUSpec:
        """The datasheet of a GPU type: ``gpu_types`` first, then the catalog."""
        from .engine.catalog import gpu_spec

        return gpu_spec(name, {k: g.to_gpu(k) for k, g in self.gpu_types.items()})


# ---- router (llm-d EPP-like) ------------------------------------------------------------------


class ScorerWeights(_Spec):
    queue: float = Field(default=1.0, ge=0, description="queue-scorer weight (fewer waiting is better).")
    kv_cache: float = Field(default=1.0, ge=0, description="kv-cache-scorer weight (lower KV usage is better).")
    prefix_cache: float = Field(default=1.0, ge=0, description="prefix-cache-scorer weight (affinity).")


class AdmissionSpec(_Spec):
    kind: Literal["saturation", "none"] = Field(
        default="saturation", description="saturation: reject with 429 when every ready pod is saturated."
    )
    kv_threshold: float = Field(default=0.8, gt=0, le=1, description="A pod is saturated at KV usage >= this.")
    queue_threshold: int = Field(default=5, ge=0, le=MAX_BATCH, description="A pod is saturated at waiting >= this.")
    queue_limit: int = Field(
        default=1000, ge=0, le=MAX_BATCH, description="Requests the gateway holds while no pod is ready (scale from zero)."
    )


class RouterSpec(_Spec):
    scorers: ScorerWeights = Field(default_factory=ScorerWeights, description="Scorer weights.")
    admission: AdmissionSpec = Field(default_factory=AdmissionSpec, description="Admission control.")
    refresh_s: float = Field(default=0.05, gt=0, description="How often the router refreshes pod metrics, s.")


# ---- faults ------------------------------------------------------------------------------------


class _Window(_Spec):
    """A fault active from start_s to end_s (an end before the start would never close it)."""

    start_s: float = Field(ge=0, description="Window start, seconds.")
    end_s: float = Field(gt=0, description="Window end, seconds; after start_s.")

    @model_validator(mode="after")
    def _ordered(self) -> _Window:
        if self.end_s <= self.start_s:
            raise ValueError(f"end_s {self.end_s:g} must be after start_s {self.start_s:g}")
        return self


class MetricsOutage(_Window):
    kind: Literal["metrics_outage"] = Field(description="The metrics backend is unreachable for a window.")


class PodCrash(_Spec):
    kind: Literal["pod_crash"] = Field(description="One ready pod dies at once; its requests fail as error.")
    at_s: float = Field(ge=0, description="When, seconds.")
    variant: str | None = Field(default=None, description="Variant whose pod crashes; null = first variant.")


class SlowColdStart(_Window):
    kind: Literal["slow_cold_start"] = Field(description="Pods created in the window start this much slower.")
    factor: float = Field(gt=1, description="Multiplier on startup_s.")


Fault = Annotated[MetricsOutage | PodCrash | SlowColdStart, Field(discriminator="kind")]

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
        default=0.0, ge=0, description="Extra time after the last arrival for in-flight requests to finish."
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
    metrics: MetricsSpec = Field(default_factory=MetricsSpec, description="Scraping and sampling.")
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
        self._check_work()
        return self

    def _check_work(self) -> None:
        """Refuse, before generating anything, a run whose requests or loop steps exceed the limits."""
        span = self.duration_s + self.drain_s
        peaks = [w.arrivals.peak_rps for w in self.workloads]
        requests = sum(p for p in peaks if p is not None) * self.duration_s
        if requests > MAX_REQUESTS:
            raise ValueError(f"the workload would send up to {requests:,.0f} requests (peak rate x duration_s); "
                             f"the limit is {MAX_REQUESTS:,}")
        loops: dict[str, float | None] = {"metrics.scrape_interval_s": self.metrics.scrape_interval_s,
                 "metrics.sample_interval_s": self.metrics.sample_interval_s}
        for a in self.autoscalers:
            loops[f"autoscaler {a.label} period_s"] = getattr(a, "period_s", None)
            loops[f"autoscaler {a.label} fast_period_s"] = getattr(a, "fast_period_s", None)
        for name, interval in loops.items():
            if interval and span / interval > MAX_STEPS:
                raise ValueError(f"{name} {interval:g} s over {span:g} s is {span / interval:,.0f} steps; "
                                 f"the limit is {MAX_STEPS:,}")

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
        if name not in REGISTRY.names():
            known = sorted({a.label for a in self.autoscalers} | set(REGISTRY.names()))
            raise UserError(f"unknown autoscaler {name!r}{did_you_mean(name, known)}",
                            expected="one of " + ", ".join(known))
        return REGISTRY.default_config(name)

    def autoscaler_configs(self) -> list[Any]:
        return list(self.autoscalers) or [REGISTRY.default_config(n) for n in REGISTRY.names()]


# ---- loading -----------------------------------------------------------------------------------


@functools.lru_cache(maxsize=256)
def _step_model(engine_json: str, gpu: str | GPUSpec) -> StepModel | None:
    try:
        model, _ = build_latency(EngineSpec.model_validate(json.loads(engine_json)), gpu)
    except Exception:  # unknown GPU or shape, partial settings: the policy falls back to its defaults
        return None
    return cast("StepModel", model) if hasattr(model, "step_s") else None


def step_model(engine: Mapping[str, Any], gpu: str | GPUSpec) -> StepModel | None:
    """The roofline step-time model of a variant's engine settings, for ``VariantView.step_model``
    (None unless they describe a roofline engine). Policies read the serving model through the view
    and never import the harness; memoised because every view of a run asks for the same few."""
    return _step_model(json.dumps(dict(engine), sort_keys=True, default=str), gpu)


def format_validation_error(err: ValidationError, where: str, data: Any = None,
                            model: type[BaseModel] | None = None) -> UserError:
    """One message: file, field path, what was expected (first error, count of the rest); for an
    unknown field of ``model``, the closest valid name ("did you mean")."""
    errors = err.errors(include_url=False)
    first = errors[0]
    loc = [str(p) for p in first["loc"] if "[" not in str(p)]  # drop pydantic's internal validator tags
    if len(loc) >= 2 and loc[0] == "workload" and loc[1] == "0" and isinstance(data, dict) \
            and isinstance(data.get("workload"), dict):
        del loc[1]  # the file holds one workload mapping, not a list
    msg = first["msg"]
    if first["type"] == "value_error":
        msg = msg.removeprefix("Value error, ")
        field = re.match(r"([a-z_]+): ", msg)  # a model-level check naming its field (contracts.limits)
        if field:
            loc.append(field.group(1))
            msg = msg[field.end():]
    path = ".".join(loc) or "(top level)"
    if first["type"] == "extra_forbidden":
        msg = "unknown field"
        if model is not None and first["loc"]:
            msg += did_you_mean(str(first["loc"][-1]), fields_at(model, [str(p) for p in first["loc"]]))
    elif first["type"] == "missing":
        msg = "required field is missing"
    more = f" (+{len(errors) - 1} more problems)" if len(errors) > 1 else ""
    inp = first.get("input")
    got = "" if first["type"] in ("missing",) or isinstance(inp, dict) else f"; got {inp!r}"
    return UserError(f"{path}: {msg}{got}{more}", where=where)


def parse_override(item: str) -> tuple[list[str], Any]:
    if "=" not in item:
        raise UserError(f"--set {item!r}: missing '='", expected="dotted.key=value")
    key, raw = item.split("=", 1)
    if not key:
        raise UserError(f"--set {item!r}: empty key", expected="dotted.key=value")
    return key.split("."), parse_yaml(raw, f"--set {key}")


def apply_overrides(data: Any, overrides: list[str], where: str = "--set") -> Any:
    """Apply ``dotted.key=value`` overrides; list items are addressed by index."""
    data = copy.deepcopy(data)
    for item in overrides:
        keys, value = parse_override(item)
        node = data
        for i, k in enumerate(keys):
            last = i == len(keys) - 1
            if isinstance(node, list):
                if not k.isdigit() or int(k) >= len(node):
                    raise UserError(f"--set {item!r}: {'.'.join(keys[: i + 1])} is not a list index", where=where)
                if last:
                    node[int(k)] = value
                else:
                    node = node[int(k)]
            elif isinstance(node, dict):
                if last:
                    node[k] = value
                else:
                    node = node.setdefault(k, {})
            else:
                raise UserError(f"--set {item!r}: {'.'.join(keys[:i])} is not a mapping", where=where)
    return data


def scenario_from_data(data: Any, where: str, base_dir: Path | None = None) -> Scenario:
    if not isinstance(data, dict):
        raise UserError("a scenario must be a YAML mapping", where=where)
    try:
        sc = Scenario.model_validate(data, context={"base_dir": base_dir})
    except ValidationError as e:
        raise format_validation_error(e, where, data, Scenario) from None
    return _resolve_paths(sc, base_dir)


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


def load_scenario(path: str | Path, overrides: list[str] | None = None, seed: int | None = None) -> Scenario:
    data = read_yaml(path)
    if overrides:
        data = apply_overrides(data, overrides, where=str(path))
    if seed is not None and isinstance(data, dict):
        data["seed"] = seed
    return scenario_from_data(data, str(path), Path(path).resolve().parent)


ScenarioAdapter = TypeAdapter(Scenario)
