"""Cold starts as they happen: the scenario schema of a pod's start-up phases, GPU node pools, vLLM
sleep mode and warm buffer pods, with the measurements behind every default.

A variant's single ``startup_s`` stays the simple form (one number: the pod is Running-not-Ready for
that long once it has its GPUs). ``cold_start`` splits it into the phases a real vLLM pod goes
through, named after the Kubernetes pod lifecycle:

- Pending: ``scheduling`` (kube-scheduler latency), waiting for a GPU, ``node_provisioning`` (a node
  the cluster autoscaler adds, ``cluster.node_pools``);
- ContainerCreating: ``image_pull`` (image size / pull throughput; a node keeps a pulled image);
- Running, not Ready: ``weight_load`` (model bytes / storage bandwidth) and ``warmup`` (engine init:
  imports, memory profiling, torch.compile, CUDA-graph capture);
- Ready.

Each phase is a fixed number of seconds or a distribution, sampled per pod from a generator seeded
by (scenario seed, pod, phase): the same scenario and seed give the same start-ups whatever the
order of events. Defaults (a phase left out) are published measurements, never fitted to a result:

- scheduling 1 s: the Kubernetes SLO for pod start-up excluding image pull is p99 <= 5 s
  (kubernetes/community sig-scalability/slos/pod_startup_latency.md);
- image pull 10.8 GB at 96 MB/s = 112 s: the AWS vLLM 0.9 image (10,778,400,361 bytes) pulled in
  1 m 52 s by default containerd, 60 s with SOCI parallel pull (aws-samples/karpenter-blueprints,
  blueprints/soci-snapshotter/README.md); vllm/vllm-openai is ~12 GB compressed (vllm #27154);
- weight load at 0.5 GB/s: Llama-3.1-8B (16 GB) loaded in 33 s from a volume (tensorfuse.io
  "reducing GPU cold start"), 48 s with the safetensors loader on gp3 and 7.5-14 s with the Run:ai
  streamer (run.ai model streamer benchmarks, 2024); ~7 GB/s from a hot page cache (vllm #19824);
- warm-up 60 s: Llama-3.1-8B on L40S with a torch.compile cache: dynamo 10 s + compile 13 s +
  CUDA graphs 7 s + engine init 34 s (tensorfuse); without the cache 200 s; Llama-70B-FP8 TP=8:
  ~15 s dynamo + ~70 s compile + ~60 s graphs (vllm #19824);
- node provisioning 300 s: GPU VMs took 4.5 min to boot plus 4.5 min for drivers on GKE
  (codalab-worksheets #4042), ~10 min (GoogleCloudPlatform/selkies-vdi #1), 5-10 min for an AKS
  A100 node plus pod start (Microsoft Q&A 12767836);
- cluster-autoscaler: --scan-interval 10 s, --scale-down-unneeded-time 10 min,
  --scale-down-delay-after-add 10 min (kubernetes/autoscaler FAQ and flags; AKS profile defaults);
- sleep-mode wake (vLLM 0.11, A100; blog.vllm.ai 2025-10-26 "Zero-Reload Model Switching"): level 1
  0.26 s for Qwen3-0.6B and 0.82 s for Phi-3-vision (~1.2 and ~8.3 GB of weights), so 0.17 s +
  weights / 12.7 GB/s per GPU; level 2 (weights reloaded from disk) 0.85 s and 2.58 s, so 0.56 s +
  weights / 4.1 GB/s; a full reload of those models took ~48 s.
"""
from __future__ import annotations

import math
import random
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Discriminator, Field, Tag, model_validator

from scalearena.contracts.limits import MAX_DURATION_S, MAX_GPUS_PER_REPLICA, MAX_REPLICAS, StrictSpec

if TYPE_CHECKING:
    from scalearena.harness.config.scenario import ClusterSpec, VariantSpec

GB = 1e9
Z95 = 1.6448536269514722  # standard normal quantile at 0.95


class _Spec(StrictSpec):
    """Extra keys forbidden, frozen, NaN/inf and numbers past their unit's limit refused."""


Seconds = Annotated[float, Field(ge=0, le=MAX_DURATION_S)]


class UniformSeconds(_Spec):
    kind: Literal["uniform"] = Field(description="Uniform between min_s and max_s.")
    min_s: float = Field(ge=0, description="Shortest, seconds.")
    max_s: float = Field(ge=0, description="Longest, seconds (>= min_s).")

    @model_validator(mode="after")
    def _ordered(self) -> UniformSeconds:
        if self.max_s < self.min_s:
            raise ValueError(f"max_s {self.max_s:g} is below min_s {self.min_s:g}")
        return self


class LognormalSeconds(_Spec):
    kind: Literal["lognormal"] = Field(description="Lognormal given by its median and 95th percentile.")
    median_s: float = Field(gt=0, description="Median, seconds.")
    p95_s: float = Field(gt=0, description="95th percentile, seconds (>= median_s).")

    @model_validator(mode="after")
    def _ordered(self) -> LognormalSeconds:
        if self.p95_s < self.median_s:
            raise ValueError(f"p95_s {self.p95_s:g} is below median_s {self.median_s:g}")
        return self

    @property
    def sigma(self) -> float:
        return math.log(self.p95_s / self.median_s) / Z95


class EmpiricalSeconds(_Spec):
    kind: Literal["empirical"] = Field(description="One of the given measurements, uniformly at random.")
    values_s: list[Seconds] = Field(min_length=1, max_length=100_000, description="Measured durations, seconds.")


def _duration_tag(v: Any) -> str:
    if isinstance(v, dict):
        return str(v.get("kind", "seconds"))
    return str(getattr(v, "kind", "seconds"))


# A number, or a mapping told apart by its kind (so an error names the distribution's own field).
Duration = Annotated[
    Annotated[Seconds, Tag("seconds")] | Annotated[UniformSeconds, Tag("uniform")]
    | Annotated[LognormalSeconds, Tag("lognormal")] | Annotated[EmpiricalSeconds, Tag("empirical")],
    Discriminator(_duration_tag, custom_error_type="duration", custom_error_message="expected seconds or a "
                  "distribution: {kind: uniform | lognormal | empirical, ...}"),
]


def sample_s(d: Any, rng: random.Random) -> float:
    """One draw of a ``Duration`` (a plain number is itself; no draw is taken from ``rng`` then)."""
    if isinstance(d, int | float):
        return float(d)
    if isinstance(d, UniformSeconds):
        return rng.uniform(d.min_s, d.max_s)
    if isinstance(d, LognormalSeconds):
        return d.median_s * math.exp(d.sigma * rng.gauss(0.0, 1.0))
    return float(d.values_s[rng.randrange(len(d.values_s))])


def mean_s(d: Any) -> float:
    if isinstance(d, int | float):
        return float(d)
    if isinstance(d, UniformSeconds):
        return (d.min_s + d.max_s) / 2.0
    if isinstance(d, LognormalSeconds):
        return d.median_s * math.exp(d.sigma ** 2 / 2.0)
    return sum(d.values_s) / len(d.values_s)


def phase_rng(seed: int, *key: object) -> random.Random:
    """The generator of one pod's (or node's) phase: string-seeded, so it does not depend on
    PYTHONHASHSEED or on how many draws other pods took before."""
    return random.Random("/".join(str(k) for k in (seed, *key)))


# ---- a pod's start-up phases ----------------------------------------------------------------------


class ImagePullSpec(_Spec):
    image: str = Field(default="vllm/vllm-openai", description="Image name: a node that pulled it once starts "
                       "later pods of it without pulling (imagePullPolicy IfNotPresent).")
    size_gb: float = Field(default=10.8, gt=0, le=1000, description="Image size, GB (AWS vLLM 0.9 image: 10.8).")
    pull_mb_s: float = Field(default=96.0, gt=0, le=100_000, description="Pull + unpack throughput, MB/s (default "
                             "containerd: 96; SOCI parallel pull: 180).")
    seconds: Duration | None = Field(default=None, description="Pull time instead of size / throughput: "
                                     "seconds or a distribution.")

    def draw(self, rng: random.Random) -> float:
        return sample_s(self.seconds, rng) if self.seconds is not None else self.size_gb * 1000.0 / self.pull_mb_s

    def mean(self) -> float:
        return mean_s(self.seconds) if self.seconds is not None else self.size_gb * 1000.0 / self.pull_mb_s


class WeightLoadSpec(_Spec):
    model_gb: float | None = Field(default=None, gt=0, le=100_000, description="Weights to load, GB; null = the "
                                   "engine's model shape (roofline latency) and dtype.")
    storage_gb_s: float = Field(default=0.5, gt=0, le=1000, description="Storage-to-GPU bandwidth, GB/s (volume: "
                                "0.5; Run:ai streamer on io2: 2; hot page cache: 7).")
    seconds: Duration | None = Field(default=None, description="Load time instead of bytes / bandwidth: seconds "
                                     "or a distribution.")

    def draw(self, model_bytes: float | None, rng: random.Random) -> float:
        if self.seconds is not None:
            return sample_s(self.seconds, rng)
        return self._bytes(model_bytes) / (self.storage_gb_s * GB)

    def mean(self, model_bytes: float | None) -> float:
        return mean_s(self.seconds) if self.seconds is not None else self._bytes(model_bytes) / (self.storage_gb_s * GB)

    def _bytes(self, model_bytes: float | None) -> float:
        b = self.model_gb * GB if self.model_gb is not None else model_bytes
        if b is None:  # refused by VariantSpec's validation (check_variant)
            raise ValueError("weight_load needs model_gb: the engine's latency model has no model_shape")
        return b


class ColdStartSpec(_Spec):
    """A pod's start-up as phases (see the module docstring for the measurements behind the defaults)."""

    scheduling_s: Duration = Field(default=1.0, description="Pending: creation to bound on a node with a free "
                                   "GPU (kube-scheduler), seconds or a distribution.")
    image_pull: ImagePullSpec = Field(default_factory=ImagePullSpec, description="ContainerCreating: the image.")
    weight_load: WeightLoadSpec = Field(default_factory=WeightLoadSpec, description="Running, not Ready: weights "
                                        "from storage to GPU memory.")
    warmup_s: Duration = Field(default=60.0, description="Running, not Ready: engine init (imports, memory "
                               "profiling, torch.compile, CUDA-graph capture), seconds or a distribution.")


class SleepModeSpec(_Spec):
    """vLLM sleep mode (``--enable-sleep-mode``): a scale-down puts a replica to sleep instead of deleting
    it; it keeps its GPUs (and its cost), drops its KV cache, and a later scale-up wakes it in seconds."""

    level: Literal[1, 2] = Field(default=1, description="1: weights offloaded to CPU memory; 2: weights dropped "
                                 "and reloaded from disk on wake.")
    max_sleeping: int = Field(default=1, ge=1, le=MAX_REPLICAS, description="Slept replicas a variant keeps; a "
                              "scale-down beyond them deletes the pod.")
    wake_s: Duration | None = Field(default=None, description="Wake time; null = from the weights per GPU "
                                    "(level 1: 0.17 s + weights / 12.7 GB/s; level 2: 0.56 s + weights / 4.1 GB/s).")
    keep_s: float | None = Field(default=None, gt=0, description="A replica asleep this long is deleted (its GPUs "
                                 "freed); null = kept for the run.")

    def draw_wake(self, bytes_per_gpu: float | None, rng: random.Random) -> float:
        if self.wake_s is not None:
            return sample_s(self.wake_s, rng)
        if bytes_per_gpu is None:  # refused by check_variant
            raise ValueError("sleep_mode needs wake_s or the model's size")
        base, rate = (0.17, 12.7) if self.level == 1 else (0.56, 4.1)
        return base + bytes_per_gpu / (rate * GB)


class NodePoolSpec(_Spec):
    """GPU nodes of one type, added and removed the way the Kubernetes cluster-autoscaler does."""

    name: str = Field(description="Node pool (node group) name.", pattern=r"^[a-z0-9][a-z0-9-]*$")
    gpu: str = Field(description="GPU type of its nodes (variants on this GPU type are placed here).")
    gpus_per_node: int = Field(default=8, ge=1, le=MAX_GPUS_PER_REPLICA, description="GPUs per node.")
    min_nodes: int = Field(default=0, ge=0, le=MAX_REPLICAS, description="Nodes never removed.")
    max_nodes: int = Field(default=10, ge=1, le=MAX_REPLICAS, description="Node limit of the pool.")
    initial_nodes: int | None = Field(default=None, ge=0, le=MAX_REPLICAS, description="Ready nodes at t=0; null "
                                      "= max(min_nodes, the nodes the initial replicas fill).")
    provisioning_s: Duration = Field(default=300.0, description="Scale-up request to node Ready with its GPUs "
                                     "allocatable, seconds or a distribution.")
    scan_interval_s: float = Field(default=10.0, gt=0, le=3600, description="--scan-interval: how often the "
                                   "cluster autoscaler looks, s.")
    scale_down_unneeded_s: float = Field(default=600.0, ge=0, description="--scale-down-unneeded-time: an empty "
                                         "node is removed after this long, s.")
    scale_down_delay_after_add_s: float = Field(default=600.0, ge=0, description="--scale-down-delay-after-add: no "
                                                "node is removed this long after a scale-up, s.")

    @model_validator(mode="after")
    def _bounds(self) -> NodePoolSpec:
        if self.min_nodes > self.max_nodes:
            raise ValueError(f"min_nodes {self.min_nodes} exceeds max_nodes {self.max_nodes}")
        if self.initial_nodes is not None and not self.min_nodes <= self.initial_nodes <= self.max_nodes:
            raise ValueError("initial_nodes must lie within [min_nodes, max_nodes]")
        return self


# ---- checks the scenario runs ---------------------------------------------------------------------


def model_bytes(v: VariantSpec) -> float | None:
    """Bytes of weights a pod of the variant loads: ``cold_start.weight_load.model_gb``, else the roofline
    model shape's weights, else unknown."""
    if v.cold_start is not None and v.cold_start.weight_load.model_gb is not None:
        return v.cold_start.weight_load.model_gb * GB
    lat = v.engine.latency
    return float(lat.shape().weight_bytes) if lat.kind == "roofline" else None


def bytes_per_gpu(v: VariantSpec) -> float | None:
    b = model_bytes(v)
    tp = v.engine.latency.tp if v.engine.latency.kind == "roofline" else v.gpus_per_replica
    return None if b is None else b / tp


def expected_startup_s(v: VariantSpec) -> float:
    """Mean start-up once the pod is created, on a node without the image (no node provisioning)."""
    c = v.cold_start
    assert c is not None
    return mean_s(c.scheduling_s) + c.image_pull.mean() + c.weight_load.mean(model_bytes(v)) + mean_s(c.warmup_s)


def check_variant(v: VariantSpec) -> list[tuple[tuple[str, ...], str]]:
    """(field path within the variant, message) for every inconsistency of its start-up settings."""
    errs: list[tuple[tuple[str, ...], str]] = []
    c = v.cold_start
    if c is not None and c.weight_load.seconds is None and model_bytes(v) is None:
        errs.append((("cold_start", "weight_load", "model_gb"), "weight_load needs model_gb (or seconds): the "
                     "engine's latency model has no model_shape to size the weights"))
    if v.sleep_mode is not None and v.sleep_mode.wake_s is None and bytes_per_gpu(v) is None:
        errs.append((("sleep_mode", "wake_s"), "sleep_mode needs wake_s (or cold_start.weight_load.model_gb): the "
                     "engine's latency model has no model_shape to size the weights"))
    if c is not None and "startup_s" in v.model_fields_set and abs(v.startup_s - expected_startup_s(v)) > 1e-6:
        errs.append((("startup_s",), f"startup_s {v.startup_s:g} contradicts cold_start (mean "
                     f"{expected_startup_s(v):g} s); give one or the other"))
    return errs


def check_cluster(cl: ClusterSpec) -> list[tuple[tuple[Any, ...], str]]:
    """(field path within ``cluster``, message) for node pools that do not fit the variants."""
    errs: list[tuple[tuple[Any, ...], str]] = []
    seen: dict[str, str] = {}
    for i, p in enumerate(cl.node_pools):
        if p.name in seen.values():
            errs.append((("node_pools", i, "name"), f"duplicate node pool name {p.name!r}"))
        if p.gpu in seen:
            errs.append((("node_pools", i, "gpu"), f"GPU type {p.gpu!r} already has node pool {seen[p.gpu]!r} "
                         "(one pool per GPU type)"))
        seen.setdefault(p.gpu, p.name)
        if cl.gpu_capacity is not None and p.gpu in cl.gpu_capacity:
            errs.append((("gpu_capacity", p.gpu), f"GPU type {p.gpu!r} has a node pool; its capacity is the pool's "
                         "nodes (drop it from gpu_capacity)"))
    pools = {p.gpu: p for p in cl.node_pools}
    used = {v.gpu for v in cl.variants}
    for i, p in enumerate(cl.node_pools):
        if p.gpu not in used:
            errs.append((("node_pools", i, "gpu"), f"no variant runs on GPU type {p.gpu!r} (variants use "
                         f"{', '.join(sorted(used))})"))
    for i, v in enumerate(cl.variants):
        pool = pools.get(v.gpu)
        if pool is not None and v.gpus_per_replica > pool.gpus_per_node:
            errs.append((("variants", i, "gpus_per_replica"), f"{v.gpus_per_replica} GPUs do not fit on one node of "
                         f"pool {pool.name!r} ({pool.gpus_per_node} GPUs per node)"))
    return errs


def refuse_sim_only(sc: Any, cluster: str) -> None:
    """Bad input on local/kube: a start-up feature only the simulator runs (one line naming the fields)."""
    from scalearena.contracts.errors import UserError

    fields = sim_only(sc)
    if fields:
        raise UserError(f"{', '.join(fields)}: only --cluster sim models node pools, sleep mode and warm buffer "
                        f"pods (a real cluster has its own nodes and cluster autoscaler) and sets the scrape and rule "
                        f"phases (a real Prometheus keeps its own)", where=f"--cluster {cluster}",
                        expected="drop them, or run on sim")


def sim_only(sc: Any) -> list[str]:
    """The start-up features only the simulator runs (local and kube refuse them: a real cluster has its own
    nodes and cluster autoscaler; serve-engine has no sleep endpoint)."""
    out = [f"cluster.node_pools[{i}]" for i in range(len(sc.cluster.node_pools))]
    for i, v in enumerate(sc.cluster.variants):
        if v.sleep_mode is not None:
            out.append(f"cluster.variants[{i}].sleep_mode")
        if v.warm_buffer:
            out.append(f"cluster.variants[{i}].warm_buffer")
    ph = sc.phases
    out += [f"phases.{f}" for f in ("decide_lead_s", "engine_scrape_s", "gateway_scrape_s", "keda_query_grid_s",
                                     "kube_state_scrape_s", "published_scrape_s") if getattr(ph, f) is not None]
    out += ["phases.sync_lag_s"] if ph.sync_lag_s else []
    return out + [f"phases.{f}" for f in ("pod_scrape_s", "rules_s") if getattr(ph, f)]
