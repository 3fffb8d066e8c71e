"""An llm-d recipe (controllers/llmd.py) compiled against a scenario: its files read once per variant it scales,
with the cluster's placeholders filled from the scenario, and the series it reads checked against the backend.

Filled per variant (a user's ``env`` entry of the same name wins): ``NAMESPACE`` (the series' namespace label),
``TARGET_DEPLOYMENT`` (the variant: its Deployment is named after it), ``MODEL``, ``MODEL_KEY`` (the model as a
DNS label), ``EPP_SERVICE`` / ``INFERENCE_POOL`` (the EPP's ``service`` / ``inference_pool`` labels for the model's
pool: ``<model>-epp`` and ``<model>``, as the simulator's EPP writes them), ``MIN_REPLICAS`` / ``MAX_REPLICAS`` (the
variant's bounds), ``TTFT_SLO_S`` / ``TPOT_SLO_S`` (the scenario's ``slo``), ``PEAK_PREFILL_TPS`` (computed from the
engine model, harness/sim/engine/prefill.py). ``llmd-token-pd`` is read once per model that has prefill and decode
variants, with ``PREFILL_*`` / ``DECODE_*`` for the two. The values computed rather than copied are kept in the
config's ``derived`` with how they were obtained, and the run report shows them.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from scalearena.contracts.errors import UserError
from scalearena.contracts.series import CATALOGUE, EPP_QUEUE_SIZE, NAMESPACE
from scalearena.controllers.llmd import RECIPES, RecipeConfig, default_env
from scalearena.harness.objects import compile_documents
from scalearena.harness.objects.load import Doc, check_env_used, load_documents

MANIFESTS = Path(__file__).resolve().parents[2] / "manifests" / "autoscalers" / "llm-d"

# Native series each backend exposes (contracts/series.py, which names each one's exporter): what a recipe's queries
# can read there. The simulator and the local processes serve every entry without a ``condition`` (the predicted
# latency histograms need a latency predictor, which no backend models). kind/cluster serve the same set with the
# default gateway: the engines, serve-router (which serves the llm-d EPP's series too, as on local) and
# kube-state-metrics (manifests/base/kube-state-metrics.yaml). With the real llm-d EPP as gateway
# (SCALEARENA_GATEWAY=epp, manifests/gateway/epp) none of the EPP's or the gateway's series is there; why, per series:
SIM_SERIES = {s.name for s in CATALOGUE if not s.condition}
LOCAL_SERIES = set(SIM_SERIES)
EPP_IMAGE_GAP = ("the EPP gateway's image, llm-d-inference-scheduler v0.3.2 (October 2025, built on Gateway API "
                 "Inference Extension v1.0.x), exports no llm_d_epp_* series: that prefix is llm-d-router's from "
                 "v0.9 on (llm-d-router PRs #1071, #1661, 2026), and GIE v1.0's flow control has no metrics (GIE PR "
                 "#1714 added inference_extension_flow_control_* after v1.0)")
EPP_NOT_SCRAPED = ("the EPP gateway's /metrics is not scraped (it needs the TokenReview/SubjectAccessReview grants "
                   "manifests/gateway/epp does not give)")
NO_GATEWAY_QUEUE = "scalearena's gateway queue; the llm-d EPP has none"


def absent_series(cluster: str, gateway: str | None = None) -> dict[str, str]:
    """The catalogue's series a backend does not expose, each with the reason (what ``check_series`` says)."""
    out = {s.name: f"emitted only when {s.condition}" for s in CATALOGUE if s.condition}
    if cluster in ("kind", "kwok", "cluster") and gateway == "epp":
        for s in CATALOGUE:
            if s.exporter == "gateway":
                out[s.name] = NO_GATEWAY_QUEUE
            elif s.exporter == "epp" and not s.condition:
                out[s.name] = EPP_IMAGE_GAP if s.name.startswith("llm_d_epp_") else EPP_NOT_SCRAPED
    return out


def exposed_series(cluster: str, gateway: str | None = None) -> set[str]:
    """The catalogue's series a recipe's queries can read on ``cluster`` (with ``gateway`` on kind/cluster)."""
    return {s.name for s in CATALOGUE} - set(absent_series(cluster, gateway))


def check_series(cfg: Any, cluster: str, gateway: str | None = None, source: str | None = None) -> None:
    """A recipe reading a series the backend does not expose is bad input: name the series, the backend and why
    (``source``: the scenario or suite file, for the message)."""
    if not isinstance(cfg, RecipeConfig):
        return
    absent = absent_series(cluster, gateway)
    missing = [s for s in cfg.recipe.needs if s in absent]
    if missing:
        where = f"--cluster {cluster}" + (f" (gateway {gateway})" if gateway else "")
        why = "; ".join(dict.fromkeys(absent[s] for s in missing))
        raise UserError(f"{where} exposes no {', '.join(missing)}, which the recipe's queries read "
                        f"({cfg.recipe.source}): {why}",
                        where=f"{source + ': ' if source else ''}autoscalers[{cfg.label}]",
                        expected="a backend that exposes them (docs/autoscalers.md lists what each recipe needs)")


def queue_warnings(sc: Any) -> list[str]:
    """A warning per recipe that scales on the EPP's flow-control queue in a scenario whose router has no flow
    control: the queue then holds only requests waiting for a first ready engine, so the trigger reads 0."""
    kind = sc.router.admission.kind
    if kind == "flow_control":
        return []
    return [f"autoscaler {a.label!r} scales on {EPP_QUEUE_SIZE}, which holds requests only under the EPP's flow "
            f"control (router.admission.kind flow_control; here {kind}, which "
            f"{'rejects' if kind == 'saturation' else 'dispatches'} instead): it reads 0 while an engine is ready"
            for a in sc.autoscaler_configs() if isinstance(a, RecipeConfig) and EPP_QUEUE_SIZE in a.recipe.needs]


def applies(name: str, sc: Any) -> bool:
    """Whether registry autoscaler ``name`` can run on scenario ``sc`` with its defaults: a P/D recipe needs a
    model with prefill and decode variants (what ``autoscalers: all`` leaves out otherwise)."""
    recipe = RECIPES.get(name)
    if recipe is None or not recipe.roles:
        return True
    roles: dict[str, set[str]] = {}
    for v in sc.cluster.variants:
        roles.setdefault(v.model, set()).add(v.role)
    return any({"prefill", "decode"} <= r for r in roles.values())


def _key(model: str) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", model.lower()).strip("-") or "model"


def _variant_env(sc: Any, v: Any) -> dict[str, str]:
    return {"NAMESPACE": NAMESPACE, "TARGET_DEPLOYMENT": v.name, "MODEL": v.model, "MODEL_KEY": _key(v.model),
            "EPP_SERVICE": f"{v.model}-epp", "INFERENCE_POOL": v.model, "MIN_REPLICAS": str(v.min_replicas),
            "MAX_REPLICAS": str(v.max_replicas), "TTFT_SLO_S": repr(sc.slo.ttft_ms / 1000.0),
            "TPOT_SLO_S": repr(sc.slo.itl_ms / 1000.0)}


def _mean_prompt(sc: Any, model: str) -> int:
    from scalearena.workloads.generate import build_requests

    lengths = [r.input_tokens for r in build_requests(sc) if r.model == model]
    return round(sum(lengths) / len(lengths)) if lengths else 1


def _peak_prefill(sc: Any, v: Any, derived: dict[str, str]) -> str:
    from scalearena.harness.sim.engine.latency import build_latency
    from scalearena.harness.sim.engine.prefill import peak_prefill

    lat, _ = build_latency(v.engine, sc.cluster.gpu(v.gpu), where=f"variant {v.name}.engine")
    prompt = _mean_prompt(sc, v.model)
    peak = peak_prefill(lat, prompt, v.engine.max_num_batched_tokens, v.engine.max_num_seqs)
    value = "+Inf" if peak.tokens_per_s == float("inf") else f"{peak.tokens_per_s:.0f}"  # PromQL's infinity
    derived[f"PEAK_PREFILL_TPS[{v.name}]"] = (
        f"{value} tokens/s: computed from the engine model of {v.model} on {v.gpu} ({peak.how}; the workload's mean "
        f"prompt, {prompt} tokens), what llm-d's calibrate.sh measures on a real replica")
    return value


def _instances(cfg: RecipeConfig, sc: Any, derived: dict[str, str]) -> list[dict[str, str]]:
    needs_peak = cfg.recipe.prefill_peak
    variants = list(sc.cluster.variants)
    if not cfg.recipe.roles:
        out = []
        for v in variants:
            env = _variant_env(sc, v)
            if needs_peak:
                env["PEAK_PREFILL_TPS"] = _peak_prefill(sc, v, derived)
            out.append(env)
        return out
    out = []
    for model in dict.fromkeys(v.model for v in variants):
        pre = [v for v in variants if v.model == model and v.role == "prefill"]
        dec = [v for v in variants if v.model == model and v.role == "decode"]
        if not pre or not dec:
            continue
        p, d = pre[0], dec[0]
        env = _variant_env(sc, d)
        env.update({"PREFILL_DEPLOYMENT": p.name, "DECODE_DEPLOYMENT": d.name,
                    "PREFILL_MIN_REPLICAS": str(p.min_replicas), "PREFILL_MAX_REPLICAS": str(p.max_replicas),
                    "DECODE_MIN_REPLICAS": str(d.min_replicas), "DECODE_MAX_REPLICAS": str(d.max_replicas),
                    "PEAK_PREFILL_TPS": _peak_prefill(sc, p, derived)})
        out.append(env)
    if not out:
        raise UserError(f"autoscaler {cfg.label} scales a prefill/decode pool: it needs a model with variants of role "
                        "prefill and decode (cluster.variants[].role); this scenario has none",
                        where=f"autoscalers[{cfg.label}]", expected="a P/D scenario, or llmd-token for an aggregated one")
    return out


def compile_recipe(cfg: RecipeConfig, sc: Any) -> RecipeConfig:
    """``cfg`` with its targets and rule groups for scenario ``sc``."""
    if not cfg.per_variant:
        return cfg
    files = [str(Path(f) if Path(f).is_absolute() else MANIFESTS / f) for f in cfg.objects]
    derived: dict[str, str] = {}
    docs: list[Doc] = []
    instances = [env | cfg.env for env in _instances(cfg, sc, derived)]
    for env in instances:
        docs += load_documents(files, env, None)
    variants = {v.name: v.model for v in sc.cluster.variants}
    compiled = compile_documents(cfg.model_copy(update={"objects": files}), docs, variants)
    # the recipe's own tunables are in env by default (a copy of its files may drop one); a key the user added
    # must name a placeholder of the files
    check_env_used(set(cfg.env) - set(default_env(cfg.recipe)), files, None, f"autoscalers[{cfg.label}]")
    return compiled.model_copy(update={"per_variant": False, "derived": derived, "instances": instances})
