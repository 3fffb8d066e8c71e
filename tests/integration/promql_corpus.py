"""Samples and queries for the PromQL differential test (tests/integration/test_promql_differential.py).

The samples look like a 15-minute llm-d run scraped every 15 s: vLLM gauges,
counters and histograms per pod, EPP and kube-state-metrics series, plus the
awkward cases Prometheus' semantics decide: a pod that appears and vanishes
(lookback), a counter reset, a NaN sample, a series with a 5-minute gap, a
sparse series (rate extrapolation limits). The queries are every PromQL query
the repository ships (manifests/, the objects of manifests/autoscalers as harness/objects
translates them, the shipped llm-d recipes of manifests/autoscalers/llm-d filled in,
the PromQL builder of harness/metrics/prometheus.py), the llm-d recipe queries as
SPEC section 4 writes them (llm-d guides/workload-autoscaling) and edge cases.
"""
from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

import yaml

from scalearena.contracts import series as S
from scalearena.harness.metrics.prometheus import PromQL

BASE_MS = 1_700_000_000_000  # samples live at BASE + 0..900 s
STEP_MS = 15_000
END_S = 900
BUCKETS = ("0.05", "0.1", "0.25", "0.5", "1", "2.5", "+Inf")
NS = "scalearena"
MODEL = "m1"

Point = tuple[int, float]
SeriesData = dict[tuple[str, tuple[tuple[str, str], ...]], list[Point]]


def _add(data: SeriesData, name: str, labels: dict[str, str], t_s: float, v: float) -> None:
    data.setdefault((name, tuple(sorted(labels.items()))), []).append((BASE_MS + round(t_s * 1000), v))


def _pods() -> list[tuple[str, str, float, float]]:
    """(pod, variant, first scrape s, last scrape s)."""
    return [("p1", "va-a100", 0, END_S), ("p2", "va-a100", 0, END_S), ("p3", "va-h100", 0, END_S),
            ("p4", "va-a100", 300, 540)]


def _vllm(data: SeriesData, rng: random.Random) -> None:
    for k, (pod, variant, first, last) in enumerate(_pods()):
        lab = {"namespace": NS, "pod": pod, "model_name": MODEL, "variant": variant}
        success, hist, hsum = 0.0, [0.0] * len(BUCKETS), 0.0
        t = first
        while t <= last:
            i = t / 15
            kv = round(0.35 + 0.3 * math.sin(i / 6 + k), 4)
            _add(data, S.KV_USAGE, lab, t, math.nan if (pod == "p2" and t == 300) else kv)
            _add(data, S.NUM_RUNNING, lab, t, float(int(6 + 5 * math.sin(i / 5 + k))))
            _add(data, S.NUM_WAITING, lab, t, float(max(0, int(4 * math.sin(i / 7 + 2 * k)))))
            _add(data, S.GPU_UTIL, lab, t, round(0.5 + 0.4 * math.cos(i / 9 + k), 3))
            _add(data, S.CACHE_CONFIG, {**lab, "num_gpu_blocks": "4096", "block_size": "16"}, t, 1.0)
            if pod == "p1" and t == 450:
                success, hist, hsum = 0.0, [0.0] * len(BUCKETS), 0.0  # the pod restarted: counters reset
            success += rng.randint(0, 9)
            _add(data, S.REQUEST_SUCCESS, {**lab, "finished_reason": "length"}, t, success)
            new = rng.randint(0, 12)
            for _ in range(new):
                ttft = rng.choice((0.03, 0.07, 0.2, 0.4, 0.8, 2.0, 4.0))
                hsum += ttft
                for b, le in enumerate(BUCKETS):
                    if ttft <= float(le):
                        hist[b] += 1
            for b, le in enumerate(BUCKETS):
                _add(data, S.TTFT_HIST + "_bucket", {**lab, "le": le}, t, hist[b])
            _add(data, S.TTFT_HIST + "_sum", lab, t, round(hsum, 6))
            _add(data, S.TTFT_HIST + "_count", lab, t, hist[-1])
            t += STEP_MS / 1000


def _epp(data: SeriesData, rng: random.Random) -> None:
    lab = {"namespace": NS, "service": "epp", "model_name": MODEL, "inference_pool": "pool"}
    hist = {name: [0.0] * len(BUCKETS) for name in (S.EPP_TTFT_HIST, S.EPP_PREDICTED_TTFT_HIST,
                                                    S.EPP_TPOT_HIST, S.EPP_PREDICTED_TPOT_HIST)}
    for n in range(END_S // 15 + 1):
        t = n * 15
        _add(data, S.EPP_QUEUE_SIZE, lab, t, float(max(0, int(8 * math.sin(n / 8)))))
        _add(data, S.EPP_POOL_SATURATION, lab, t, round(0.6 + 0.5 * math.sin(n / 10), 4))
        _add(data, S.EPP_REQUEST_RUNNING, lab, t, float(20 + n % 17))
        for ep in ("ms-prefill-0", "ms-prefill-1", "ms-decode-0"):
            tok = {**lab, "endpoint_name": ep, "producer_name": "inflight-load-producer"}
            _add(data, S.EPP_INFLIGHT_TOKENS, tok, t, float(rng.randint(0, 60000)))
        for name, counts in hist.items():
            for _ in range(rng.randint(0, 6)):
                v = rng.choice((0.04, 0.09, 0.3, 0.7, 1.5, 3.0))
                for b, le in enumerate(BUCKETS):
                    if v <= float(le):
                        counts[b] += 1
            for b, le in enumerate(BUCKETS):
                _add(data, name + "_bucket", {**lab, "target_model_name": MODEL, "le": le}, t, counts[b])


def _ksm_and_edges(data: SeriesData) -> None:
    for n in range(END_S // 15 + 1):
        t = n * 15
        desired = 2 + (n // 20)
        ready = min(desired, 2 + max(0, (n - 4) // 20))
        for dep in ("va-a100", "va-h100"):
            lab = {"namespace": NS, "deployment": dep}
            _add(data, S.KSM_SPEC_REPLICAS, lab, t, float(desired))
            _add(data, S.KSM_REPLICAS, lab, t, float(desired))
            _add(data, S.KSM_REPLICAS_READY, lab, t, float(ready))
            _add(data, S.KSM_REPLICAS_UNAVAILABLE, lab, t, float(desired - ready))
            _add(data, "wva_desired_replicas", {"namespace": NS, "variant_name": dep}, t, float(desired + 1))
        if not 100 < t < 400:  # a 5-minute gap: the series goes stale inside it
            _add(data, "edge_gappy", {"job": "edge"}, t, float(n))
        if n % 4 == 0:  # one sample a minute: rate() extrapolates by half a spacing
            _add(data, "edge_sparse_total", {"job": "edge"}, t, float(n * n))
        _add(data, "edge_values", {"job": "edge", "kind": "nan"}, t, math.nan if n % 5 == 0 else float(n))
        _add(data, "edge_values", {"job": "edge", "kind": "neg"}, t, -1.5 * n)
        _add(data, "edge_values", {"job": "edge", "kind": "inf"}, t, math.inf if n == 30 else 0.25 * n)


def samples() -> SeriesData:
    rng = random.Random(12)
    data: SeriesData = {}
    _vllm(data, rng)
    _epp(data, rng)
    _ksm_and_edges(data)
    return data


def _fmt(v: float) -> str:
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    return repr(v)


def write_openmetrics(data: SeriesData, path: Path) -> None:
    """One family after another, each series in time order, `# EOF` last (what promtool reads)."""
    lines = []
    for (name, labels), points in sorted(data.items()):
        body = ",".join(f'{k}="{v}"' for k, v in labels)
        for t, v in points:
            lines.append(f"{name}{{{body}}} {_fmt(v)} {t // 1000}.{t % 1000:03d}")
    path.write_text("\n".join(lines) + "\n# EOF\n", encoding="utf-8")


def _walk_queries(node: Any) -> list[str]:
    """Every ``query`` (KEDA trigger, adapter-free objects) and ``expr`` (recording rule) string in a document."""
    if isinstance(node, dict):
        out = [v.strip() for k, v in node.items() if k in ("query", "expr") and isinstance(v, str)]
        return out + [q for v in node.values() for q in _walk_queries(v)]
    if isinstance(node, list):
        return [q for v in node for q in _walk_queries(v)]
    return []


def _manifest_queries() -> list[str]:
    """Queries written out in manifests/ (parsed as YAML, so folded `query: >-` blocks count). Files with
    envsubst placeholders are templates: the example objects and the llm-d recipes, read filled-in below."""
    root = Path(__file__).resolve().parents[2] / "manifests"
    out = []
    for f in sorted(root.rglob("*.yaml")):
        text = f.read_text(encoding="utf-8")
        if "examples" in f.parts or "${" in text:
            continue
        for doc in yaml.safe_load_all(text):
            out += _walk_queries(doc)
    return out


def _recipe_queries() -> list[str]:
    """Every query and recording rule of the shipped llm-d recipes (manifests/autoscalers/llm-d), their
    placeholders filled with the recipe defaults and this corpus' names, as harness/objects/recipes.py fills them
    for a scenario (EPP service `epp`, pool `pool`, peak prefill 33,821 tokens/s: the guide's reference figure)."""
    from scalearena.controllers.llmd import RECIPES, _defaults
    from scalearena.harness.objects.load import load_documents
    from scalearena.harness.objects.recipes import MANIFESTS

    cluster = {"NAMESPACE": NS, "TARGET_DEPLOYMENT": "va-a100", "MODEL": MODEL, "MODEL_KEY": MODEL,
               "EPP_SERVICE": "epp", "INFERENCE_POOL": "pool", "MIN_REPLICAS": "1", "MAX_REPLICAS": "8",
               "TTFT_SLO_S": "0.5", "TPOT_SLO_S": "0.05", "PEAK_PREFILL_TPS": "33821",
               "PREFILL_DEPLOYMENT": "ms-prefill", "DECODE_DEPLOYMENT": "ms-decode", "PREFILL_MIN_REPLICAS": "1",
               "PREFILL_MAX_REPLICAS": "8", "DECODE_MIN_REPLICAS": "1", "DECODE_MAX_REPLICAS": "8"}
    out = []
    for recipe in RECIPES.values():
        env = {**cluster, **_defaults(recipe)[0]}
        for doc in load_documents([str(MANIFESTS / f) for f in recipe.files], env, None):
            out += _walk_queries(doc.data)
    return list(dict.fromkeys(out))


def _object_queries() -> list[str]:
    """What the shipped objects send: manifests/autoscalers/hpa with the prometheus-adapter rules of
    manifests/, and manifests/autoscalers/examples (envsubst-filled), as harness/objects translates them;
    every metric's query (Pods ones for the pods p1, p2, p4 of va-a100) and every recording rule."""
    from scalearena.controllers.hpa.engine import TARGET_PODS
    from scalearena.controllers.kubernetes import KubernetesConfig
    from scalearena.harness.objects import compile_objects
    from scalearena.harness.objects.load import placeholders

    root = Path(__file__).resolve().parents[2] / "manifests" / "autoscalers"
    sets = [[root / "hpa" / "hpa.yaml", root / "prometheus-adapter" / "config.yaml"],
            sorted((root / "examples").glob("*.yaml"))]
    env = {"NAMESPACE": NS, "VARIANT": "va-a100", "MODEL": MODEL}
    out = []
    for files in sets:
        names = placeholders([str(f) for f in files])  # each set gets only the placeholders its files name
        used = {k: v for k, v in env.items() if k in names}
        cfg = compile_objects(KubernetesConfig(objects=[str(f) for f in files], env=used), None,
                              {"va-a100": MODEL, "va-h100": MODEL})
        for t in cfg.targets:
            for m in getattr(t.autoscaler, "metrics", []):
                out.append(m.query.replace(TARGET_PODS, "p1|p2|p4"))
            out += [tr.query for tr in getattr(t.autoscaler, "triggers", None) or [] if not tr.is_signal]
        out += [r["expr"] for g in cfg.rule_groups for r in g["rules"]]
    return list(dict.fromkeys(out))


def _builder_queries() -> list[str]:
    q = PromQL(extra_labels={"namespace": NS})
    v = "va-a100"
    return [
        q.pod_max_over_time(MODEL, v, S.KV_USAGE, 60), q.pod_avg_over_time(MODEL, v, S.NUM_WAITING, 60),
        q.counter_increase(MODEL, v, S.REQUEST_SUCCESS, 60), q.histogram_quantile(MODEL, v, S.TTFT_HIST, 0.9, 60),
        q.histogram_quantile(MODEL, v, S.TTFT_HIST, 0.5, 300), q.pod_latest(MODEL, v, S.NUM_RUNNING),
        q.pod_sample_time(MODEL, v), q.cache_config(MODEL, v), q.pod_max_over_time(MODEL, v, S.GPU_UTIL, 30),
    ]


_E = f'namespace="{NS}",service="epp",model_name="{MODEL}"'
_D = f'namespace="{NS}",deployment="va-a100"'
_RECIPES = [
    f"sum({S.EPP_QUEUE_SIZE}{{{_E}}})",
    f"sum({S.EPP_REQUEST_RUNNING}{{{_E}}})",
    f'max({S.EPP_POOL_SATURATION}{{inference_pool="pool",namespace="{NS}"}})',
    f"max({S.KSM_REPLICAS_UNAVAILABLE}{{{_D}}})",
    f"max({S.KSM_REPLICAS}{{{_D}}})",
    f'(sum({S.EPP_INFLIGHT_TOKENS}{{namespace="{NS}",producer_name="inflight-load-producer",'
    f'endpoint_name=~".*prefill.*"}}) / 33821) or vector(0)',
    f'(sum({S.EPP_INFLIGHT_TOKENS}{{namespace="{NS}",endpoint_name=~".*nothing.*"}}) / 33821) or vector(0)',
    # SLO-aware recording rules: P90 over 1-minute bucket rates of predicted else actual latency, NaN -> 0
    f"histogram_quantile(0.9, sum by (le) (rate({S.EPP_PREDICTED_TTFT_HIST}_bucket{{{_E}}}[1m])))",
    f"(histogram_quantile(0.9, sum by (le) (rate({S.EPP_PREDICTED_TTFT_HIST}_bucket{{{_E}}}[1m]))) or "
    f"histogram_quantile(0.9, sum by (le) (rate({S.EPP_TTFT_HIST}_bucket{{{_E}}}[1m])))) / 0.5",
    f"max(histogram_quantile(0.9, sum by (le) (rate({S.EPP_PREDICTED_TTFT_HIST}_bucket{{{_E}}}[1m]))) / 0.5 or "
    f"histogram_quantile(0.9, sum by (le) (rate({S.EPP_PREDICTED_TPOT_HIST}_bucket{{{_E}}}[1m]))) / 0.05)",
    f"clamp_max(histogram_quantile(0.9, sum by (le) (rate({S.EPP_TPOT_HIST}_bucket{{{_E}}}[1m]))) / 0.05, 2)",
    f"avg_over_time(clamp_max(sum(rate({S.EPP_TTFT_HIST}_bucket{{{_E},le=\"0.5\"}}[1m])), 2)[45s:15s])",
    f"sum({S.KSM_REPLICAS_READY}{{{_D}}}) / sum({S.KSM_SPEC_REPLICAS}{{{_D}}})",
]
_V = f'{{namespace="{NS}",model_name="{MODEL}"}}'
_EDGES = [
    "edge_gappy", "edge_gappy offset 1m", "last_over_time(edge_gappy[10m])", "count_over_time(edge_gappy[5m])",
    "rate(edge_sparse_total[2m])", "increase(edge_sparse_total[5m])", "irate(edge_sparse_total[3m])",
    "delta(edge_values{kind=\"neg\"}[2m])", "idelta(edge_values{kind=\"neg\"}[1m])",
    "edge_values", "sum(edge_values)", "max(edge_values)", "min(edge_values)", "avg(edge_values)",
    "edge_values > 10", "edge_values > bool 10", "10 < edge_values", "edge_values == edge_values",
    "abs(edge_values)", "round(edge_values, 0)", "round(edge_values / 7, 0.5)", "round(edge_values)", "ceil(edge_values / 7)", "floor(edge_values / 7)", "clamp(edge_values, -5, 50)",
    "clamp_min(edge_values, 3)", "max_over_time(edge_values[2m])", "min_over_time(edge_values[2m])",
    "avg_over_time(edge_values[3m])", "sum_over_time(edge_values[1m])", "quantile_over_time(0.75, edge_values[3m])",
    "scalar(edge_values{kind=\"neg\"}) * 2", "scalar(edge_values)", "vector(scalar(sum(edge_values{kind=\"neg\"})))",
    "time() - 1700000000", "missing_series", "sum(missing_series)", "sum(missing_series) or vector(0)",
    "rate(missing_series[1m])", "edge_values and on(kind) edge_values{kind=\"neg\"}",
    "edge_values unless edge_values{kind=\"nan\"}", "edge_values{kind=~\"n.*\"}", "edge_values{kind!~\"n.*\"}",
    "edge_values{kind!=\"neg\"} - ignoring(kind) group_left edge_gappy",
    f"{S.REQUEST_SUCCESS}{_V}", f"rate({S.REQUEST_SUCCESS}{_V}[2m])", f"resets({S.REQUEST_SUCCESS}{_V}[5m])",
    f"increase({S.REQUEST_SUCCESS}{{pod=\"p1\"}}[3m])", f"irate({S.REQUEST_SUCCESS}{{pod=\"p1\"}}[1m])",
    f"sum by (variant) ({S.NUM_RUNNING}{_V})", f"sum without (pod) ({S.NUM_RUNNING}{_V})",
    f"count by (variant) ({S.KV_USAGE}{_V})", f"topk(2, {S.NUM_RUNNING}{_V})",
    f"bottomk by (variant) (1, {S.GPU_UTIL}{_V})", f"max by (pod) ({S.KV_USAGE}{_V})",
    f"avg({S.KV_USAGE}{_V})", f"quantile(0.5, {S.NUM_RUNNING}{_V})",
    f"{S.NUM_WAITING}{_V} / on(pod) {S.NUM_RUNNING}{_V}",
    f"{S.NUM_RUNNING}{_V} * on(variant) group_left() sum by (variant) ({S.NUM_WAITING}{_V})",
    f"sum by (variant) ({S.NUM_RUNNING}{_V}) / on(variant) group_right sum by (variant, pod) ({S.NUM_WAITING}{_V})",
    f"histogram_quantile(0.99, sum by (le, pod) (rate({S.TTFT_HIST}_bucket{_V}[1m])))",
    f"histogram_quantile(0.5, {S.TTFT_HIST}_bucket{_V})",
    f"rate({S.TTFT_HIST}_sum{_V}[2m]) / rate({S.TTFT_HIST}_count{_V}[2m])",
    f"max_over_time({S.NUM_RUNNING}{_V}[5m:30s])", f"avg_over_time(sum({S.NUM_RUNNING}{_V})[2m:])",
    f"rate({S.REQUEST_SUCCESS}{_V}[2m:15s])", f"max_over_time(rate({S.REQUEST_SUCCESS}{_V}[1m])[3m:1m] offset 1m)",
    f"timestamp({S.KV_USAGE}{_V})", f"{S.KV_USAGE}{_V}[1m]", f"sum({S.NUM_RUNNING}{_V})[2m:30s]",
    f"rate({{__name__=~\"{S.REQUEST_SUCCESS}|{S.TTFT_HIST}_count\",pod=\"p1\"}}[1m])",
    f"{S.NUM_RUNNING}{_V} * on(variant) {S.NUM_RUNNING}{_V}",
    "-edge_values", "edge_values % 4", "2 ^ edge_values{kind=\"neg\"}", "(1 + 2) * 3 > bool 8",
]


def queries() -> list[str]:
    return _manifest_queries() + _object_queries() + _recipe_queries() + _builder_queries() + _RECIPES + _EDGES


def eval_times_ms() -> list[int]:
    """24 times inside the run (not aligned to scrapes) plus 3 after it (lookback expiry)."""
    inside = [BASE_MS + 7_500 + 37_000 * k for k in range(24)]
    return inside + [BASE_MS + (END_S + 200) * 1000, BASE_MS + (END_S + 300) * 1000, BASE_MS + (END_S + 301) * 1000]
