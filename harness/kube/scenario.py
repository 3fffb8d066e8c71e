"""Manifests from a scenario: one Deployment per variant, and the autoscaler objects.

The overlay (manifests/overlays/kind or gpu-pool) says what a variant pod
looks like on that cluster — image, resources, node placement, probes. The
scenario says which variants exist and with which engine settings. So the
overlay's variant Deployments are templates: each scenario variant takes the
template of its GPU type (else the first), gets its own name, labels, replica
count, GPU count, node selector and engine flags, and the overlay's own
variants are dropped. The autoscaler objects (VariantAutoscaling + actuating
HPA, HPA; the ScaledObject in keda.py) are rendered per variant from the
autoscaler config.

Engine flags mirror the scenario's engine section in the spelling of the
engine the template runs: llm-d-inference-sim (kind) or vLLM (gpu-pool).
"""
from __future__ import annotations

import copy
import json
from typing import Any

from scalearena.contracts.errors import UserError
from scalearena.contracts.limits import MAX_BATCH
from scalearena.contracts.series import NAMESPACE as SERIES_NAMESPACE
from scalearena.controllers.base import AutoscalerConfig
from scalearena.harness.config.scenario import Scenario, VariantSpec
from scalearena.harness.kube.knobs import hpa_behavior, plain, prom_duration, quantity
from scalearena.harness.kube.render import Obj

NAMESPACE = SERIES_NAMESPACE  # the scenario's Deployments, and the namespace label of their series
ENGINE_IMAGE = "scalearena/serve-engine:dev"  # Dockerfile.engine
GPU_PRODUCT = {  # scalearena GPU type -> nvidia.com/gpu.product node label (GPU feature discovery)
    "A100-80GB": "NVIDIA-A100-SXM4-80GB", "A100-40GB": "NVIDIA-A100-SXM4-40GB", "H100-SXM": "NVIDIA-H100-80GB-HBM3",
    "H100-PCIE": "NVIDIA-H100-PCIe", "H200": "NVIDIA-H200", "L40S": "NVIDIA-L40S", "L4": "NVIDIA-L4",
}
WVA_METRIC = [{"type": "External"}]  # the actuation HPA reads wva_desired_replicas (External): zero allowed


def _ms(x: float) -> str:
    return f"{plain(x)}ms"


def workload_max_len(sc: Scenario) -> int:
    """The longest prompt + output of the scenario's requests, rounded up to whole KV blocks.

    llm-d-inference-sim defaults ``--max-model-len`` to 1024 and answers 400 above it, so an engine
    rendered without the flag rejects nearly every paper request (4096 +- 2048 in, 1024 +- 512 out).
    """
    from scalearena.workloads.generate import build_requests

    longest = max((r.input_tokens + r.output_tokens for r in build_requests(sc)), default=1)
    block = max((v.engine.block_size for v in sc.cluster.variants), default=16)
    return -(-longest // block) * block


def engine_args(v: VariantSpec, template_args: list[str], vllm: bool, max_model_len: int) -> list[str]:
    """Flags of the template's engine (vLLM or llm-d-inference-sim) for the variant's engine section.

    ``max_model_len``: the scenario's own value when it sets one (requests above it fail as they do
    in the simulator), else what fits the workload (``workload_max_len``).
    """
    base_model = next((a.split("=", 1)[1] for a in template_args if a.startswith("--model=")), v.model)
    e = v.engine
    args = [f"--model={base_model}", f"--served-model-name={v.model}", "--port=8000",
            f"--max-num-seqs={e.max_num_seqs}", f"--block-size={e.block_size}",
            f"--max-model-len={e.max_model_len or max_model_len}"]
    if vllm:
        if e.kv_cache_blocks:
            args.append(f"--num-gpu-blocks-override={e.kv_cache_blocks}")
        args += [f"--gpu-memory-utilization={plain(e.gpu_memory_utilization)}",
                 "--enable-prefix-caching" if e.enable_prefix_caching else "--no-enable-prefix-caching"]
        if v.gpus_per_replica > 1:
            args.append(f"--tensor-parallel-size={v.gpus_per_replica}")
        if e.max_num_batched_tokens != 8192:  # vLLM's own default on >= 70 GiB GPUs
            args.append(f"--max-num-batched-tokens={e.max_num_batched_tokens}")
        return args
    lat = e.latency
    # --force-dummy-tokenizer (llm-d-inference-sim >= v0.9.2): with a Hugging Face model name the simulator
    # otherwise tokenizes through a vLLM render server on localhost:8082 that is not deployed, and every
    # request fails with 500 while /health stays 200
    queue = MAX_BATCH if e.max_waiting_queue is None else e.max_waiting_queue  # the emulator needs a bound
    args += [f"--max-waiting-queue-length={queue}", "--enable-kvcache", "--force-dummy-tokenizer"]
    if e.kv_cache_blocks:
        args.append(f"--kv-cache-size={e.kv_cache_blocks}")
    for name, value in (("ttft_ms", lat.ttft_ms), ("itl_ms", lat.itl_ms)):
        if not float(value).is_integer():  # v0.10.2's RandomNormDuration takes mean.Milliseconds(): 2.5 runs as 2
            raise UserError(f"variant {v.name}: latency.{name} {plain(value)} is not whole milliseconds; "
                            "llm-d-inference-sim v0.10.2 sleeps whole milliseconds and would run it shorter",
                            where=f"variant {v.name} engine.latency.{name}", expected="a whole number of milliseconds")
    args += [f"--time-to-first-token={_ms(lat.ttft_ms)}", f"--inter-token-latency={_ms(lat.itl_ms)}",
             f"--prefill-overhead={_ms(lat.prefill_overhead_ms)}",
             f"--prefill-time-per-token={_ms(lat.prefill_time_per_token_ms)}",
             f"--time-factor-under-load={plain(lat.time_factor_under_load)}"]
    return args


def serve_engine_container(c: Obj, v: VariantSpec, max_model_len: int, gpu_types: dict[str, Any] | None = None) -> None:
    """Turn a llm-d-inference-sim container into scalearena's serve-engine (roofline and every other model).

    llm-d-inference-sim has only constant latencies; the project's own engine image (Dockerfile.engine)
    runs the same serving model as the simulator, so roofline scenarios run on kind too.
    """
    spec = v.engine.model_dump(mode="json")
    spec["max_model_len"] = v.engine.max_model_len or max_model_len
    c["image"] = ENGINE_IMAGE
    c["command"] = ["python", "-m", "scalearena.harness.local.cli", "engine"]
    c["args"] = ["--host=0.0.0.0", "--port=8000", f"--model={v.model}", f"--gpu={v.gpu}",
                 f"--engine-spec={json.dumps(spec, sort_keys=True, separators=(',', ':'))}",
                 f"--startup-duration={plain(v.startup_s)}s", f"--termination-grace-period={plain(v.termination_grace_s)}s",
                 "--pod=$(POD_NAME)", f"--variant={v.name}"]
    if gpu_types and v.gpu in gpu_types:  # the scenario's own GPU type: its datasheet, as the local backend passes it
        c["args"].append(f"--gpu-spec={json.dumps(gpu_types[v.gpu].model_dump(mode='json'), sort_keys=True)}")
    c["readinessProbe"] = {"httpGet": {"path": "/health/ready", "port": "http"}, "periodSeconds": 2}


def _is_variant(o: Obj) -> bool:
    return o.get("metadata", {}).get("labels", {}).get("scalearena.io/component") == "variant"


def variant_objects(sc: Scenario, overlay: list[Obj]) -> list[Obj]:
    """The overlay with its variants replaced by the scenario's (Deployments + Services)."""
    templates = [o for o in overlay if _is_variant(o) and o["kind"] == "Deployment"]
    svc_templates = [o for o in overlay if _is_variant(o) and o["kind"] == "Service"]
    if not templates or not svc_templates:
        raise UserError("the overlay has no variant Deployment/Service to use as a template",
                        expected="objects labelled scalearena.io/component=variant")
    out = [o for o in overlay if not _is_variant(o)]
    max_len = workload_max_len(sc)
    for v in sc.cluster.variants:
        tpl = next((t for t in templates if t["metadata"].get("annotations", {}).get("scalearena.io/gpu") == v.gpu),
                   templates[0])
        d = copy.deepcopy(tpl)
        labels = {"scalearena.io/component": "variant", "scalearena.io/variant": v.name, "scalearena.io/model": v.model}
        md = d["metadata"]
        md["name"] = v.name
        md["labels"] = {**md.get("labels", {}), **labels}
        md["annotations"] = {**md.get("annotations", {}), "scalearena.io/gpu": v.gpu,
                             "scalearena.io/variant-cost": plain(v.cost), "scalearena.io/startup-s": plain(v.startup_s)}
        spec = d["spec"]
        spec["replicas"] = v.start_replicas
        spec["selector"] = {"matchLabels": {"scalearena.io/variant": v.name}}
        tmeta = spec["template"].setdefault("metadata", {})
        tmeta["labels"] = {**tmeta.get("labels", {}), **labels}
        pod = spec["template"]["spec"]
        pod["terminationGracePeriodSeconds"] = int(round(v.termination_grace_s))
        c = pod["containers"][0]
        vllm = "vllm-openai" in c.get("image", "")
        if not vllm and v.engine.latency.kind != "constant":
            serve_engine_container(c, v, max_len, sc.cluster.gpu_types)
        else:
            c["args"] = engine_args(v, list(c.get("args", [])), vllm, max_len)
        res = c.setdefault("resources", {})
        if "nvidia.com/gpu" in res.get("limits", {}) or vllm:
            for part in ("requests", "limits"):
                res.setdefault(part, {})["nvidia.com/gpu"] = str(v.gpus_per_replica)
        if "nodeSelector" in pod or vllm:
            pod.setdefault("nodeSelector", {})["nvidia.com/gpu.product"] = GPU_PRODUCT.get(v.gpu, v.gpu)
        if not vllm and c["image"] != ENGINE_IMAGE and v.startup_s > 0:  # the simulator starts at once: cold start = not Ready for startup_s
            c.setdefault("readinessProbe", {})["initialDelaySeconds"] = int(round(v.startup_s))
        out.append(d)
        s = copy.deepcopy(svc_templates[0])
        s["metadata"]["name"] = v.name
        s["metadata"]["labels"] = {**s["metadata"].get("labels", {}), **labels}
        s["spec"]["selector"] = {"scalearena.io/variant": v.name}
        out.append(s)
    prometheus_settings(out, sc)
    for o in out:
        if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "gateway-config":
            o["data"]["ROUTER_SPEC"] = json.dumps(sc.router.model_dump(mode="json"), sort_keys=True)
            # the models serve-router accepts before any pod registers (scale from zero); others are 404
            o["data"][ROUTER_MODELS_ENV] = " ".join(sorted({v.model for v in sc.cluster.variants}))
    return out


ROUTER_MODELS_ENV = "SCALEARENA_ROUTER_MODELS"  # serve-router's --model, space-separated (envFrom gateway-config)


def _meta(name: str, variant: str) -> Obj:
    return {"name": name, "namespace": NAMESPACE, "labels": {"scalearena.io/variant": variant}}


def _target(v: VariantSpec) -> Obj:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "name": v.name}


def wva_objects(sc: Scenario, cfg: AutoscalerConfig, actuation: str = "hpa") -> list[Obj]:
    c = cfg.model_dump()
    saturation = (f"kvCacheThreshold: {plain(c['tau_kv'])}\nqueueLengthThreshold: {plain(c['tau_q'])}\n"
                  f"kvSpareTrigger: {plain(c['gamma_kv'])}\nqueueSpareTrigger: {plain(c['gamma_q'])}\n"
                  f"minNonSaturatedReplicasForScaleDown: {c['min_non_saturated_for_scale_down']}\n")
    stz = c.get("scale_to_zero") or {}
    zero = (f"enableScaleToZero: {'true' if stz.get('enabled') else 'false'}\n"
            f"scaleToZeroRetentionPeriod: {int(stz.get('retention_s', 600))}s\n")
    objs: list[Obj] = [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "wva-saturation-scaling-config",
                                                               "namespace": NAMESPACE}, "data": {"default": saturation}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "wva-scale-to-zero-config",
                                                               "namespace": NAMESPACE}, "data": {"default": zero}},
    ]
    for v in sc.cluster.variants:
        objs.append({"apiVersion": "llmd.ai/v1alpha1", "kind": "VariantAutoscaling", "metadata": _meta(v.name, v.name),
                     "spec": {"modelID": v.model, "variantCost": f"{v.cost:.1f}" if v.cost == int(v.cost)
                              else plain(v.cost), "accelerator": v.gpu, "acceleratorCount": v.gpus_per_replica,
                              "minReplicas": v.min_replicas, "maxReplicas": v.max_replicas,
                              "scaleTargetRef": _target(v)}})
        if actuation == "hpa":
            objs.append({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
                         "metadata": _meta(f"{v.name}-wva", v.name),
                         "spec": {"scaleTargetRef": _target(v), "minReplicas": hpa_min_replicas(
                                      v, True, WVA_METRIC, "autoscalers[wva]"),
                                  "maxReplicas": v.max_replicas,
                                  # tolerance 0 (HPAConfigurableTolerance): the default 0.1 swallows WVA's
                                  # +-1 steps from 11 replicas up (12/11 = 1.09 is within 10 % of 1)
                                  "behavior": {d: {"stabilizationWindowSeconds": 0, "tolerance": "0", "policies": [
                                      {"type": "Pods", "value": 10, "periodSeconds": 15}]}
                                      for d in ("scaleUp", "scaleDown")},
                                  "metrics": [{"type": "External", "external": {
                                      "metric": {"name": "wva_desired_replicas",
                                                 "selector": {"matchLabels": {"variant_name": v.name}}},
                                      "target": {"type": "AverageValue", "averageValue": "1"}}}]}})
        elif actuation == "keda":  # manifests/autoscalers/wva/keda-actuation.yaml: KEDA reads the desired gauge
            objs.append({"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject",
                         "metadata": _meta(f"{v.name}-wva", v.name),
                         "spec": {"scaleTargetRef": _target(v), "pollingInterval": 5, "cooldownPeriod": 30,
                                  "minReplicaCount": v.min_replicas, "maxReplicaCount": v.max_replicas,
                                  "triggers": [{"type": "prometheus", "metricType": "AverageValue", "metadata": {
                                      "serverAddress": f"http://prometheus.{NAMESPACE}.svc:9090",
                                      "query": f'max(wva_desired_replicas{{variant_name="{v.name}",'
                                               f'namespace="{NAMESPACE}"}})',
                                      "threshold": "1", "activationThreshold": "0"}}]}})
    return objs


def wva_actuation(cfg: AutoscalerConfig, external_metrics: str) -> str:
    """How WVA's decisions reach the Deployments: ``direct`` where the config says so, else through the
    object that reads the published target: a KEDA ScaledObject where KEDA serves external metrics, an HPA
    on prometheus-adapter's otherwise (the path the simulator times, harness/control/actuation.py)."""
    if getattr(cfg, "actuation", "hpa") == "direct":
        return "direct"
    return "keda" if external_metrics == "keda" else "hpa"


def wva_controller_settings(objs: list[Obj], cfg: AutoscalerConfig, actuator: str = "hpa") -> None:
    """The WVA loop periods and its actuator (``hpa`` or ``keda``) into the controller's ConfigMap
    (WVA_INTERVAL_S / WVA_FAST_INTERVAL_S / WVA_ACTUATOR)."""
    c: Any = cfg
    for o in objs:
        if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "wva-controller-config":
            o["data"]["WVA_ACTUATOR"] = actuator
            o["data"]["WVA_INTERVAL_S"] = plain(c.period_s)
            o["data"]["WVA_FAST_INTERVAL_S"] = plain(c.fast_period_s) if c.fast_period_s else "0"


def prometheus_settings(objs: list[Obj], sc: Scenario) -> None:
    """The scenario's scrape interval into the in-cluster Prometheus' global config."""
    import yaml

    for o in objs:
        if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "prometheus-config":
            doc = yaml.safe_load(o["data"]["prometheus.yml"])
            doc.setdefault("global", {})["scrape_interval"] = prom_duration(sc.metrics.scrape_interval_s)
            o["data"]["prometheus.yml"] = yaml.safe_dump(doc, sort_keys=False)


def hpa_min_replicas(v: VariantSpec, scale_to_zero: bool, metrics: list[Obj], where: str) -> int:
    """minReplicas as the API server accepts it and as the simulated HPA behaves.

    Kubernetes (pkg/apis/autoscaling/validation/validation.go, validateMetrics) forbids minReplicas 0
    unless the HPAScaleToZero gate is on AND at least one Object or External metric is configured. The
    simulated HPA (controllers/hpa/policy.py) floors a variant's min_replicas 0 at 1 unless scale_to_zero is set,
    so the rendered object does the same; scale_to_zero with only Pods metrics is refused.
    """
    if v.min_replicas > 0:
        return v.min_replicas
    if not scale_to_zero:
        return min(1, v.max_replicas)
    if not any(m["type"] in ("Object", "External") for m in metrics):
        raise UserError(f"variant {v.name}: minReplicas 0 needs an Object or External metric (Kubernetes "
                        "validation.go); this HPA has only Pods metrics", where=where,
                        expected="scale_to_zero: false, or min_replicas >= 1 for this variant")
    return 0


def hpa_objects(sc: Scenario, cfg: AutoscalerConfig) -> list[Obj]:
    c: Any = cfg
    metrics = []
    for m in c.metrics:
        if m.type != "Pods":
            raise UserError(f"hpa metric {m.type} cannot be served by prometheus-adapter's rules here",
                            where="autoscalers[hpa].metrics", expected="Pods metrics on CLUSTER=kind/cluster")
        metrics.append({"type": "Pods", "pods": {"metric": {"name": m.metric.replace(":", "_")},
                                                 "target": {"type": "AverageValue",
                                                            "averageValue": quantity(m.average_value)}}})
    behavior = hpa_behavior(c.behavior, c.tolerance)
    if c.behavior.scale_down.stabilization_window_seconds is None:
        behavior.setdefault("scaleDown", {})["stabilizationWindowSeconds"] = int(c.downscale_stabilization_s)
    objs = []
    for v in sc.cluster.variants:
        spec: Obj = {"scaleTargetRef": _target(v),
                     "minReplicas": hpa_min_replicas(v, c.scale_to_zero, metrics, "autoscalers[hpa].scale_to_zero"),
                     "maxReplicas": v.max_replicas, "metrics": metrics, "behavior": behavior}
        objs.append({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
                     "metadata": _meta(v.name, v.name), "spec": spec})
    return objs
