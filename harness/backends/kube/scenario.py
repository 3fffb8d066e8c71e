"""Manifests from a scenario: one Deployment per variant, and the autoscaler objects.

The overlay (manifests/overlays/kind or gpu-pool) says what a variant pod
looks like on that cluster — image, resources, node placement, probes. The
scenario says which variants exist and with which engine settings. So the
overlay's variant Deployments are templates: each scenario variant takes the
template of its GPU type (else the first), gets its own name, labels, replica
count, GPU count, node selector and engine flags, and the overlay's own
variants are dropped. The autoscaler objects (VariantAutoscaling + actuating
HPA, HPA, ScaledObject) are rendered per variant from the autoscaler config.

Engine flags mirror the scenario's engine section in the spelling of the
engine the template runs: llm-d-inference-sim (kind) or vLLM (gpu-pool).
"""
from __future__ import annotations

import copy
import json

from scalearena.contracts.errors import UserError
from scalearena.controllers.base import AutoscalerConfig
from scalearena.harness.scenario import Scenario, VariantSpec

from .render import Obj

NAMESPACE = "scalearena"
GPU_PRODUCT = {  # scalearena GPU type -> nvidia.com/gpu.product node label (GPU feature discovery)
    "A100-80GB": "NVIDIA-A100-SXM4-80GB", "A100-40GB": "NVIDIA-A100-SXM4-40GB", "H100-SXM": "NVIDIA-H100-80GB-HBM3",
    "H100-PCIE": "NVIDIA-H100-PCIe", "H200": "NVIDIA-H200", "L40S": "NVIDIA-L40S", "L4": "NVIDIA-L4",
}
KEDA_QUERIES = {  # controllers/signals.py signal -> PromQL over the scrape labels of manifests/base
    "waiting_sum": "sum(vllm:num_requests_waiting{{{sel}}})",
    "running_sum": "sum(vllm:num_requests_running{{{sel}}})",
    "kv_sum": "sum(vllm:kv_cache_usage_perc{{{sel}}})",
    "kv_mean": "avg(vllm:kv_cache_usage_perc{{{sel}}})",
    "gateway_queue": "sum(scalearena_router_queue_size{{model_name=\"{model}\"}}) or vector(0)",
    "queue": "(sum(vllm:num_requests_waiting{{{sel}}}) or vector(0))"
             " + (sum(scalearena_router_queue_size{{model_name=\"{model}\"}}) or vector(0))",
    "inflight_sum": "(sum(vllm:num_requests_waiting{{{sel}}}) or vector(0))"
                    " + (sum(vllm:num_requests_running{{{sel}}}) or vector(0))"
                    " + (sum(scalearena_router_queue_size{{model_name=\"{model}\"}}) or vector(0))",
}


def _ms(x: float) -> str:
    return f"{x:g}ms"


def engine_args(v: VariantSpec, template_args: list[str], vllm: bool) -> list[str]:
    base_model = next((a.split("=", 1)[1] for a in template_args if a.startswith("--model=")), v.model)
    e = v.engine
    args = [f"--model={base_model}", f"--served-model-name={v.model}", "--port=8000",
            f"--max-num-seqs={e.max_num_seqs}", f"--block-size={e.block_size}"]
    if e.max_model_len:
        args.append(f"--max-model-len={e.max_model_len}")
    if vllm:
        if e.kv_cache_blocks:
            args.append(f"--num-gpu-blocks-override={e.kv_cache_blocks}")
        args += [f"--gpu-memory-utilization={e.gpu_memory_utilization:g}",
                 "--enable-prefix-caching" if e.enable_prefix_caching else "--no-enable-prefix-caching"]
        if v.gpus_per_replica > 1:
            args.append(f"--tensor-parallel-size={v.gpus_per_replica}")
        return args
    if e.latency.kind != "constant":
        raise UserError(f"variant {v.name}: llm-d-inference-sim supports only the constant latency model",
                        where="cluster.variants[].engine.latency.kind",
                        expected="kind: constant on CLUSTER=kind (roofline runs on sim and local)")
    lat = e.latency
    args += [f"--max-waiting-queue-length={e.max_waiting_queue}", "--enable-kvcache"]
    if e.kv_cache_blocks:
        args.append(f"--kv-cache-size={e.kv_cache_blocks}")
    args += [f"--time-to-first-token={_ms(lat.ttft_ms)}", f"--inter-token-latency={_ms(lat.itl_ms)}",
             f"--prefill-overhead={_ms(lat.prefill_overhead_ms)}",
             f"--prefill-time-per-token={_ms(lat.prefill_time_per_token_ms)}",
             f"--time-factor-under-load={lat.time_factor_under_load:g}"]
    return args


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
    for v in sc.cluster.variants:
        tpl = next((t for t in templates if t["metadata"].get("annotations", {}).get("scalearena.io/gpu") == v.gpu),
                   templates[0])
        d = copy.deepcopy(tpl)
        labels = {"scalearena.io/component": "variant", "scalearena.io/variant": v.name, "scalearena.io/model": v.model}
        md = d["metadata"]
        md["name"] = v.name
        md["labels"] = {**md.get("labels", {}), **labels}
        md["annotations"] = {**md.get("annotations", {}), "scalearena.io/gpu": v.gpu,
                             "scalearena.io/variant-cost": f"{v.cost:g}", "scalearena.io/startup-s": f"{v.startup_s:g}"}
        spec = d["spec"]
        spec["replicas"] = v.start_replicas
        spec["selector"] = {"matchLabels": {"scalearena.io/variant": v.name}}
        tmeta = spec["template"].setdefault("metadata", {})
        tmeta["labels"] = {**tmeta.get("labels", {}), **labels}
        pod = spec["template"]["spec"]
        pod["terminationGracePeriodSeconds"] = int(round(v.termination_grace_s))
        c = pod["containers"][0]
        vllm = "vllm-openai" in c.get("image", "")
        c["args"] = engine_args(v, list(c.get("args", [])), vllm)
        res = c.setdefault("resources", {})
        if "nvidia.com/gpu" in res.get("limits", {}) or vllm:
            for part in ("requests", "limits"):
                res.setdefault(part, {})["nvidia.com/gpu"] = str(v.gpus_per_replica)
        if "nodeSelector" in pod or vllm:
            pod.setdefault("nodeSelector", {})["nvidia.com/gpu.product"] = GPU_PRODUCT.get(v.gpu, v.gpu)
        if not vllm and v.startup_s > 0:  # the simulator starts at once: cold start = not Ready for startup_s
            c.setdefault("readinessProbe", {})["initialDelaySeconds"] = int(round(v.startup_s))
        out.append(d)
        s = copy.deepcopy(svc_templates[0])
        s["metadata"]["name"] = v.name
        s["metadata"]["labels"] = {**s["metadata"].get("labels", {}), **labels}
        s["spec"]["selector"] = {"scalearena.io/variant": v.name}
        out.append(s)
    for o in out:
        if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "gateway-config":
            o["data"]["ROUTER_SPEC"] = json.dumps(sc.router.model_dump(mode="json"), sort_keys=True)
    return out


def _meta(name: str, variant: str) -> Obj:
    return {"name": name, "namespace": NAMESPACE, "labels": {"scalearena.io/variant": variant}}


def _target(v: VariantSpec) -> Obj:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "name": v.name}


def wva_objects(sc: Scenario, cfg: AutoscalerConfig, actuation: str = "hpa") -> list[Obj]:
    c = cfg.model_dump()
    saturation = (f"kvCacheThreshold: {c['tau_kv']:g}\nqueueLengthThreshold: {c['tau_q']:g}\n"
                  f"kvSpareTrigger: {c['gamma_kv']:g}\nqueueSpareTrigger: {c['gamma_q']:g}\n"
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
                              else f"{v.cost:g}", "accelerator": v.gpu, "acceleratorCount": v.gpus_per_replica,
                              "minReplicas": v.min_replicas, "maxReplicas": v.max_replicas,
                              "scaleTargetRef": _target(v)}})
        if actuation == "hpa":
            objs.append({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
                         "metadata": _meta(f"{v.name}-wva", v.name),
                         "spec": {"scaleTargetRef": _target(v), "minReplicas": v.min_replicas,
                                  "maxReplicas": v.max_replicas,
                                  "behavior": {d: {"stabilizationWindowSeconds": 0, "policies": [
                                      {"type": "Pods", "value": 10, "periodSeconds": 15}]}
                                      for d in ("scaleUp", "scaleDown")},
                                  "metrics": [{"type": "External", "external": {
                                      "metric": {"name": "wva_desired_replicas",
                                                 "selector": {"matchLabels": {"variant_name": v.name}}},
                                      "target": {"type": "AverageValue", "averageValue": "1"}}}]}})
    return objs


def _quantity(x: float) -> str:
    return f"{x:g}" if x == int(x) else f"{int(round(x * 1000))}m"


def hpa_objects(sc: Scenario, cfg: AutoscalerConfig) -> list[Obj]:
    metrics = []
    for m in getattr(cfg, "metrics", []):
        if m.type != "Pods":
            raise UserError(f"hpa metric {m.type} cannot be served by prometheus-adapter's rules here",
                            where="autoscalers[hpa].metrics", expected="Pods metrics on CLUSTER=kind/cluster")
        metrics.append({"type": "Pods", "pods": {"metric": {"name": m.metric.replace(":", "_")},
                                                 "target": {"type": "AverageValue",
                                                            "averageValue": _quantity(m.average_value)}}})
    objs = []
    for v in sc.cluster.variants:
        spec: Obj = {"scaleTargetRef": _target(v), "minReplicas": v.min_replicas, "maxReplicas": v.max_replicas,
                     "metrics": metrics}
        stab = getattr(cfg, "downscale_stabilization_s", None)
        if stab is not None:
            spec["behavior"] = {"scaleDown": {"stabilizationWindowSeconds": int(stab)}}
        objs.append({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
                     "metadata": _meta(v.name, v.name), "spec": spec})
    return objs


def keda_objects(sc: Scenario, cfg: AutoscalerConfig) -> list[Obj]:
    c = cfg.model_dump()
    signal = c.get("query", "queue")
    if signal not in KEDA_QUERIES:
        raise UserError(f"keda query {signal!r} has no PromQL here", where="autoscalers[keda].query",
                        expected="one of " + ", ".join(KEDA_QUERIES))
    objs = []
    for v in sc.cluster.variants:
        sel = f'namespace="{NAMESPACE}",variant="{v.name}"'
        meta = {"serverAddress": f"http://prometheus.{NAMESPACE}.svc:9090",
                "query": KEDA_QUERIES[signal].format(sel=sel, model=v.model),
                "threshold": f"{c.get('threshold', 3.0):g}",
                "activationThreshold": f"{c.get('activation_threshold', 0.0) or 0:g}"}
        objs.append({"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject", "metadata": _meta(v.name, v.name),
                     "spec": {"scaleTargetRef": _target(v), "pollingInterval": int(c.get("polling_interval_s", 30)),
                              "cooldownPeriod": int(c.get("cooldown_period_s", 300)),
                              "minReplicaCount": v.min_replicas, "maxReplicaCount": v.max_replicas,
                              "triggers": [{"type": "prometheus", "name": signal.replace("_", "-"),
                                            "metricType": c.get("metric_type", "AverageValue"), "metadata": meta}]}})
    return objs
