# size: one run on a cluster in order (set-up, apply, sample, teardown and its waits), one stage after another
"""CLUSTER=kind, kwok and cluster: the suite on Kubernetes.

``kind`` runs on the cluster ``scalearena kind up`` made for the suite (four workers with fake
A100/H100/H200 GPUs, images loaded once; each run's namespace is deleted after it), or makes a cluster of
its own for a single run and deletes it afterwards (kube/cluster.py). ``cluster`` uses the current
kubeconfig context as it is and never creates or deletes a cluster: it applies into the ``scalearena``
namespace and removes what it applied. ``kwok``: the upstream control plane as local processes (kube/kwok.py).

Per run: render the overlay (kind or gpu-pool) with the scenario's variants in place of the overlay's
(kube/scenario.py), add the autoscaler's objects, apply them, wait for readiness, then drive the open-loop
Locust user (workloads/locust_user.py) against the gateway through ``kubectl port-forward`` while sampling
replicas from the API server and vLLM metrics from the cluster's Prometheus into the same results layout as
every other backend. In kind/cluster the ``hpa`` and ``keda`` autoscalers ARE the real HPA and KEDA objects,
``wva`` is the in-cluster controller (harness/kube/wva) and its decisions are read back from VariantAutoscaling
status; any other autoscaler runs here, out of cluster, on the same view, patching the scale subresource.

Options (backend keyword, else environment): ``gateway`` / ``$SCALEARENA_GATEWAY`` = ``serve-router`` (default)
or ``epp``, llm-d's endpoint picker behind Envoy with the scenario's scorer weights (kube/gateway.py);
``load`` / ``$SCALEARENA_LOAD`` = ``auto`` (default), ``port-forward`` or ``in-cluster``, distributed Locust
Jobs in the cluster for rates one host process cannot carry (kube/load.py).

Teardown always runs — after an error, on Ctrl-C and on SIGTERM — unless ``keep=True``.
"""
from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scalearena.contracts.errors import UserError
from scalearena.controllers.base import AutoscalerConfig
from scalearena.controllers.kubernetes import KubernetesConfig
from scalearena.harness.config.scenario import Scenario
from scalearena.harness.config.startup_spec import refuse_sim_only
from scalearena.harness.config.suite import RunPlan
from scalearena.harness.kube.births import KCM_LOG, HpaBirths, wait_forgotten
from scalearena.harness.kube.byo import refuse_external_behind_keda, user_objects, uses_keda
from scalearena.harness.kube.cluster import (
    IMAGES,
    KEDA_MANIFEST,
    KindCluster,
    Kubectl,
    Shell,
    build_images,
    fake_gpu_demand,
    preflight as check_tools,
    require_image_prefix,
    split_scope,
)
from scalearena.harness.kube.gateway import GIE_CRDS, INFERENCEPOOL_CRD, choose_gateway, with_gateway
from scalearena.harness.kube.honesty import Readiness, check_run
from scalearena.harness.kube.keda import keda_objects
from scalearena.harness.kube.knobs import HPA_SYNC_PERIOD_S, refuse_lead, refuse_unrendered
from scalearena.harness.kube.kwok_stack import LocalStack
from scalearena.harness.kube.load import InClusterLoad, choose_load, locust_objects
from scalearena.harness.kube.render import Obj, render
from scalearena.harness.kube.sampling import Sampler
from scalearena.harness.kube.scenario import (
    NAMESPACE,
    hpa_objects,
    variant_objects,
    wva_actuation,
    wva_controller_settings,
    wva_objects,
)
from scalearena.harness.kube.security import admin_token, harden
from scalearena.harness.kube.timescale import refuse_scaled_promql, scale_objects
from scalearena.harness.kube.validate import check_objects
from scalearena.harness.local.supervisor import free_port
from scalearena.harness.objects.reads import reads_kube_state
from scalearena.harness.objects.recipes import check_series
from scalearena.harness.run.interrupts import interruptible
from scalearena.reports.results import RunWriter

if TYPE_CHECKING:
    from scalearena.harness.kube.kwok import KwokCluster

ROOT = Path(__file__).resolve().parents[2]
KUBE_MODES = ("kind", "kwok", "cluster")
EXTERNAL_METRICS = "v1beta1.external.metrics.k8s.io"
NATIVE = ("wva", "hpa", "keda", "kubernetes")  # autoscalers that run as Kubernetes objects in kind/cluster (and
# every KubernetesConfig: the llm-d recipes)
STATIC_WVA_KINDS = ("VariantAutoscaling", "HorizontalPodAutoscaler", "ScaledObject")


def runs_in_cluster(cfg: AutoscalerConfig) -> bool:
    """Whether the cluster itself scales for ``cfg`` (its HPA, KEDA or WVA objects; the llm-d recipes are
    ``kubernetes`` configs under their own kinds), so the harness only records what it did and never patches
    the scale subresource alongside it."""
    return cfg.kind in NATIVE or isinstance(cfg, KubernetesConfig)


class KubeBackend:
    def __init__(self, mode: str = "kind", *, keep: bool = False, root: Path | None = None,
                 shell: Shell | None = None, which: Callable[[str], str | None] = shutil.which,
                 api_factory: Callable[[str | None], Any] | None = None,
                 metrics_factory: Callable[[str, dict[str, str]], Any] | None = None,
                 image_prefix: str | None = None, ready_timeout_s: int = 600, gateway: str | None = None,
                 load: str | None = None, load_workers: int | None = None, readiness: Callable[..., None] | None = None,
                 local_port: Callable[[], int] = free_port, time_scale: float = 1.0) -> None:
        if mode not in KUBE_MODES:
            raise UserError(f"unknown kube mode {mode!r}", expected=" or ".join(KUBE_MODES))
        self.mode, self.keep = mode, keep
        self.root = root or ROOT
        self.manifests = self.root / "manifests"
        self.shell = shell or Shell()
        self.which = which
        self.api_factory, self.metrics_factory = api_factory, metrics_factory
        self.image_prefix = image_prefix  # resolved with $SCALEARENA_IMAGE_PREFIX by harness/run/registry.py
        self.ready_timeout_s = ready_timeout_s
        self.gateway = choose_gateway(gateway)
        if mode == "kwok" and (self.gateway == "epp" or load == "in-cluster"):  # no local program for those images
            what = "gateway=epp (Envoy and llm-d's EPP images)" if self.gateway == "epp" else \
                "load=in-cluster (Locust Jobs in pods)"
            raise UserError(f"--cluster kwok does not run {what}", where="--backend-option",
                            expected="the serve-router gateway and load from this host (the defaults), or kind")
        if time_scale != 1 and mode != "kwok":
            raise UserError(f"time_scale {time_scale:g} on --cluster {mode}: its kubelets, containers and controllers "
                            "run in real time", where="--backend-option time_scale", expected="time_scale=1, or "
                            "--cluster kwok (which runs every component at the time scale)")
        self.time_scale = float(time_scale)
        self.time_scale_notes: list[str] = []  # the whole-second roundings of the last plan (kube/timescale.py)
        self.load_option, self.load_workers = load, load_workers
        self.readiness = readiness  # tests replace the readiness wait (kube/honesty.py)
        self.local_port = local_port  # local end of a port-forward; unit tests pass a counter (no sockets)

    # ---- what gets applied -----------------------------------------------------------------------
    def image(self, name: str) -> str:
        if self.mode in ("kind", "kwok") or name not in IMAGES:
            return name
        require_image_prefix(self.mode, self.image_prefix)
        return f"{str(self.image_prefix).rstrip('/')}/{name.split('/', 1)[1]}"

    def preflight(self, plans: Sequence[RunPlan]) -> None:
        """This mode's tools (kind/kubectl/docker; kwok's built from source), then every run's objects rendered
        (``plan`` is pure: a time scale, a knob or an image registry the objects cannot carry is refused)."""
        check_tools(self.mode)
        for p in plans:
            self.plan(p.scenario, p.autoscaler)

    def plan(self, sc: Scenario, autoscaler: AutoscalerConfig, external_metrics: str = "adapter") -> list[Obj]:
        """The objects a run applies. ``external_metrics``: who serves v1beta1.external.metrics.k8s.io on the cluster,
        ``adapter`` (scalearena's prometheus-adapter registers it) or ``keda`` (KEDA's metrics server owns it and its
        operator keeps injecting its caBundle into it: the adapter then registers the custom metrics API only, and
        WVA actuates through KEDA ScaledObjects, manifests/autoscalers/wva/keda-actuation.yaml)."""
        for i, v in enumerate(sc.cluster.variants):
            if v.role != "both":  # bad input, never silently served aggregated
                raise UserError(f"role {v.role!r}: prefill/decode disaggregation is not rendered for Kubernetes "
                                "(no llm-d routing sidecar, NIXL KV transfer or P/D EPP profiles in manifests/)",
                                where=f"cluster.variants[{i}].role", expected="role: both on CLUSTER=kind/cluster, "
                                "or run P/D on sim/local")
        overlay = "gpu-pool" if self.mode == "cluster" else "kind"  # kwok runs kind's objects
        objs = with_gateway(self.gateway, sc, variant_objects(sc, render(self.manifests / "overlays" / overlay)),
                            self.manifests)
        kind = autoscaler.kind
        refuse_unrendered(autoscaler)  # a knob the objects cannot carry is bad input, never silently dropped
        refuse_sim_only(sc, self.mode)  # node pools, sleep mode, warm buffer: the simulator's only
        refuse_lead(sc, autoscaler, runs_in_cluster(autoscaler))  # the cluster's own controllers set their phase
        check_series(autoscaler, self.mode, self.gateway)  # a recipe reading series this stack does not serve
        if kind == "wva":
            infra = [o for o in render(self.manifests / "autoscalers" / "wva")
                     if o["kind"] not in STATIC_WVA_KINDS and not o["metadata"]["name"].startswith(
                         ("wva-saturation", "wva-scale-to-zero"))]
            how = wva_actuation(autoscaler, external_metrics)
            wva_controller_settings(infra, autoscaler, actuator=how)
            objs += infra + wva_objects(sc, autoscaler, actuation=how)
        elif kind == "hpa":
            objs += render(self.manifests / "autoscalers" / "prometheus-adapter") + hpa_objects(sc, autoscaler)
        elif kind == "keda":
            objs += keda_objects(sc, autoscaler)
        elif isinstance(autoscaler, KubernetesConfig):  # kind: kubernetes, and the llm-d recipes (its subclass)
            objs += user_objects(autoscaler, objs, self.manifests)
        if external_metrics == "keda":
            objs = [o for o in objs if not (o["kind"] == "APIService" and o["metadata"]["name"] == EXTERNAL_METRICS)]
        for o in objs:
            pod = o.get("spec", {}).get("template", {}).get("spec", {})
            for c in pod.get("containers", []):
                c["image"] = self.image(c["image"])
        harden(objs)  # securityContext on every workload (kube/security.py)
        admin_token(objs)  # a fresh gateway admin token per plan
        if self.time_scale != 1:  # kwok only (__init__): every duration the objects carry, divided
            refuse_scaled_promql(autoscaler, self.time_scale)
            objs, self.time_scale_notes = scale_objects(objs, self.time_scale)
        check_objects(objs)  # the API server's semantic rules, before any cluster work
        return objs

    # ---- the run -----------------------------------------------------------------------------------
    def run(self, scenario: Scenario, autoscaler: AutoscalerConfig, writer: RunWriter,
            progress: Callable[[float, float], None] | None = None) -> None:
        with interruptible():  # SIGINT/SIGTERM: the one contract (harness/run/interrupts.py), teardown still runs
            self._run(scenario, autoscaler, writer, progress)

    def _run(self, scenario: Scenario, autoscaler: AutoscalerConfig, writer: RunWriter,
             progress: Callable[[float, float], None] | None) -> None:  # size: a run's steps in order, then teardown
        from scalearena.workloads.generate import build_requests

        check_tools(self.mode, self.which)
        objs = self.plan(scenario, autoscaler)  # bad scenario/autoscaler input fails before any cluster work
        requests = build_requests(scenario)
        workers, load_objs = self._load(scenario, requests, writer)
        (logs := writer.dir / "logs").mkdir(parents=True, exist_ok=True)
        kind_cluster = KindCluster(self.shell, self.manifests / "kind" / "cluster.yaml") if self.mode == "kind" else None
        kwok = self._kwok_cluster() if self.mode == "kwok" else None
        kubectl = kind_cluster.kubectl if kind_cluster else kwok.kubectl if kwok else Kubectl(self.shell)
        named: list[tuple[str, Any, Path]] = []  # (target, process, log) of each port-forward
        applied: list[Obj] = []
        local: LocalStack | None = None  # kwok: the processes that play the kubelet's part
        births: HpaBirths | None = None  # when each HPA came to be: the in-cluster controllers' phase
        marks: dict[str, int] = {}  # kwok: where this run's part of each control-plane log begins
        try:
            if kwok:
                local = self._kwok_up(kwok, writer, scenario)
                marks = kwok.log_marks()
            else:
                self._cluster(kind_cluster, kubectl, writer, scenario, objs)
            self._cluster_wide(kubectl, autoscaler, kwok)
            external = self._external_metrics(kubectl)
            refuse_external_behind_keda(autoscaler, external)
            if external != "adapter":  # KEDA serves external metrics here: never fight over its APIService
                objs = self.plan(scenario, autoscaler, external_metrics=external)
            writer.meta.update(kube_external_metrics=external, time_scale=self.time_scale)
            for note in self.time_scale_notes:  # into summary.json's events (docs/kubernetes.md "Whole seconds")
                writer.add_event(0.0, "time_scale_rounding", note=note)
            applied = objs
            api = (self.api_factory(kubectl.context) if self.api_factory else
                   self._api(kubectl.context, kubectl.kubeconfig))
            self._apply(kubectl, objs, local)
            births = HpaBirths(api, NAMESPACE).start() if runs_in_cluster(autoscaler) else None  # HPAs' phase
            urls = local.start_services(objs) if local else {}
            for o in objs:
                if o["kind"] == "Deployment" and o["spec"].get("replicas", 1) > 0:
                    kubectl.rollout(o["metadata"].get("namespace", NAMESPACE), o["metadata"]["name"],
                                    self.ready_timeout_s)
            runner = None
            if load_objs:
                applied = objs + load_objs
                kubectl.apply(load_objs)
                runner = InClusterLoad(kubectl, workers, writer.dir, ready_timeout_s=self.ready_timeout_s)
            gw_url, prom_url = (urls["gateway"], urls["prometheus"]) if local else \
                self._forward(kubectl, logs, named, gateway=runner is None)
            self._ready(kubectl, prom_url, None if runner else gw_url, scenario, autoscaler, external)
            metrics = self._metrics(prom_url, {v.name: v.model for v in scenario.cluster.variants})
            sampler = Sampler(scenario, autoscaler, writer, api, metrics, native=runs_in_cluster(autoscaler),
                              time_scale=self.time_scale, births=births)
            sampler.drive(gw_url, logs, progress, requests=requests, load_runner=runner)
            if local:
                local.check()  # a container that exited during the run fails it, with its log tail
            check_run(writer.tally(), named)  # measured nothing -> exit 1, with why
        finally:
            if births:
                births.stop()
            for _, proc, _ in named:
                proc.terminate()
            if not self.keep:
                self._teardown(kind_cluster, kubectl, applied, kwok, hpas=list(births.seen) if births else [])
            if local:
                local.stop()  # after the namespace went: the launcher finishes the deleted pods
            if kwok:
                kwok.copy_logs(marks, writer.dir / "kwok" / "control-plane")
            if kwok and not self.keep and not kwok.reused:
                kwok.down()

    def _load(self, scenario: Scenario, requests: list[Any], writer: RunWriter) -> tuple[int, list[Obj]]:
        """(in-cluster Locust workers, their objects); none when the load runs on this host (kwok: always)."""
        load_mode, workers = (("port-forward", 0) if self.mode == "kwok" else
                              choose_load(self.load_option, requests, self.load_workers))
        writer.meta["kube_gateway"], writer.meta["kube_load"] = self.gateway, load_mode
        load_objs = harden(locust_objects(self.manifests, workers, scenario.window_s, self.image)
                           if load_mode == "in-cluster" else [])
        check_objects(load_objs)
        return workers, load_objs

    def _kwok_up(self, kwok: KwokCluster, writer: RunWriter, scenario: Scenario) -> LocalStack:
        """Start (or reuse the `kwok up` one) the control plane; the run's pod launcher and services to come."""
        kwok.up(fake_gpu_demand([scenario]))
        writer.meta["kube_context"], writer.meta["kube_cluster_reused"] = f"kwok:{kwok.folder}", kwok.reused
        return LocalStack(kwok, writer.dir / "kwok", self.ready_timeout_s, time_scale=self.time_scale)

    def _cluster_wide(self, kubectl: Kubectl, autoscaler: AutoscalerConfig, kwok: KwokCluster | None) -> None:
        """What a run needs installed cluster-wide and leaves there: KEDA, the Gateway API inference CRDs."""
        if uses_keda(autoscaler):
            if kwok:  # as on kind, KEDA stays installed once a run needed it
                kwok.ensure_keda()
            else:
                kubectl.run("apply", "--server-side", "-f", KEDA_MANIFEST, timeout=300)
                kubectl.rollout("keda", "keda-operator", self.ready_timeout_s)
        if self.gateway == "epp":  # the InferencePool CRD (and the GIE CRDs the EPP watches)
            kubectl.run("apply", "--server-side", "-f", GIE_CRDS, timeout=300)
            kubectl.wait_established(INFERENCEPOOL_CRD)

    @staticmethod
    def _apply(kubectl: Kubectl, objs: list[Obj], local: LocalStack | None) -> None:
        """CRDs first (established), then the rest; on kwok as kwok applies them, with the launcher watching."""
        crds = [o for o in objs if o["kind"] == "CustomResourceDefinition"]
        kubectl.apply(crds)
        for crd in crds:
            kubectl.wait_established(crd["metadata"]["name"])
        rest = [o for o in objs if o["kind"] != "CustomResourceDefinition"]
        if local:
            rest = local.objects(rest)
            local.start_pods()  # the launcher watches before the pods exist
        kubectl.apply(rest)

    def _kwok_cluster(self) -> KwokCluster:
        from scalearena.harness.kube.kwok import KwokCluster

        return KwokCluster(shell=self.shell, time_scale=self.time_scale)

    # ---- helpers -----------------------------------------------------------------------------------
    def _forward(self, kubectl: Kubectl, logs: Path, named: list[tuple[str, Any, Path]],
                 gateway: bool) -> tuple[str, str]:
        """Port-forwards to Prometheus and (unless in-cluster load talks to svc/gateway directly) the
        gateway, appended to ``named`` as (target, process, log); returns (gateway URL, Prometheus URL)."""
        gw_port, prom_port = self.local_port(), self.local_port()
        targets = ([("svc/gateway", gw_port, 8080, "pf-gateway.log")] if gateway else []) + [
            ("svc/prometheus", prom_port, 9090, "pf-prometheus.log")]
        for target, port, remote, log in targets:
            named.append((target, kubectl.port_forward(NAMESPACE, target, port, remote, logs / log), logs / log))
        return f"http://127.0.0.1:{gw_port}", f"http://127.0.0.1:{prom_port}"

    def _cluster(self, kind_cluster: KindCluster | None, kubectl: Kubectl, writer: RunWriter, scenario: Scenario,
                 objs: list[Obj]) -> None:
        """kind: make (or reuse, when `scalearena kind up` made it) the cluster; cluster: check the context."""
        if kind_cluster:
            kind_cluster.create(fake_gpu_demand([scenario]))
            if not kind_cluster.reused:  # a suite's cluster got its images once, at `kind up`
                kind_cluster.load_images(build_images(self.shell, self.root))
            writer.meta["kube_context"] = f"kind-{kind_cluster.name}"
            writer.meta["kube_cluster_reused"] = kind_cluster.reused
        else:
            kubectl.context = kubectl.current_context()
            writer.meta["kube_context"] = kubectl.context
            self._refuse_foreign_adapter(kubectl, objs)

    def _external_metrics(self, kubectl: Kubectl) -> str:
        """``keda`` when KEDA's metrics server holds v1beta1.external.metrics.k8s.io on this cluster, else ``adapter``
        (ours, or nobody's yet). On CLUSTER=cluster someone else's adapter is refused earlier
        (``_refuse_foreign_adapter``)."""
        r = kubectl.run("get", "apiservice", EXTERNAL_METRICS, "-o", "json", check=False, timeout=60)
        if r.returncode != 0 or not r.stdout.strip():
            return "adapter"
        svc = (json.loads(r.stdout).get("spec") or {}).get("service") or {}
        return "keda" if svc.get("namespace") == "keda" else "adapter"

    def _ready(self, kubectl: Kubectl, prom_url: str, gateway_url: str | None, sc: Scenario,
               autoscaler: AutoscalerConfig, external: str = "adapter") -> None:
        """Wait until the metrics pipeline serves and one request goes through (kube/honesty.py): an object-form
        autoscaler with ScaledObjects (a recipe) waits as ``keda`` does; one whose queries read ``kube_deployment_*``
        also for kube-state-metrics' series of every variant."""
        kind = ("keda" if (isinstance(autoscaler, KubernetesConfig) and uses_keda(autoscaler))
                or (autoscaler.kind == "wva" and external == "keda") else autoscaler.kind)
        model = sc.cluster.variants[0].model
        kube_state = [v.name for v in sc.cluster.variants] if reads_kube_state(autoscaler) else []
        if self.readiness is not None:
            self.readiness(kubectl, prom_url, gateway_url, kind, model, kube_state)
            return
        Readiness(kubectl, timeout_s=self.ready_timeout_s).wait(prom_url, gateway_url, kind, model, kube_state)

    def _api(self, context: str | None, kubeconfig: str | None = None) -> Any:
        from scalearena.harness.kube.wva.kubeapi import ClientKubeAPI, load_api_client

        return ClientKubeAPI(load_api_client(kubeconfig, context=context))

    def _metrics(self, url: str, variants: dict[str, str]) -> Any:
        if self.metrics_factory:
            return self.metrics_factory(url, variants)
        from scalearena.harness.metrics.prometheus import PrometheusMetrics, PromQL

        return PrometheusMetrics(url, variants, promql=PromQL(extra_labels={"namespace": NAMESPACE},
                                                              time_scale=self.time_scale))

    def _refuse_foreign_adapter(self, kubectl: Kubectl, objs: list[Obj]) -> None:
        """On a shared cluster, never replace someone else's metrics APIService."""
        for o in objs:
            if o["kind"] != "APIService" or not kubectl.exists("apiservice", o["metadata"]["name"]):
                continue
            svc = kubectl.get_json("apiservice", o["metadata"]["name"]).get("spec", {}).get("service") or {}
            if svc.get("namespace") != NAMESPACE:
                raise UserError(f"APIService {o['metadata']['name']} already points at "
                                f"{svc.get('namespace')}/{svc.get('name')}", where=f"context {kubectl.context}",
                                expected="a cluster without another metrics adapter, or add scalearena's rules "
                                         "(manifests/autoscalers/prometheus-adapter/config.yaml) to yours")

    def _teardown(self, kind_cluster: KindCluster | None, kubectl: Kubectl, applied: list[Obj],
                  kwok: KwokCluster | None = None, hpas: list[str] | None = None) -> None:
        if kind_cluster and not kind_cluster.reused:
            kind_cluster.delete()
            return
        if kwok and not kwok.reused:
            return  # the run's own control plane: stopped whole (KwokCluster.down)
        kcm_log, since = (kwok.logs / KCM_LOG, kwok.log_marks().get(KCM_LOG, 0)) if kwok else (None, 0)
        namespaced, cluster_scoped = split_scope(applied)
        # the CRD stays: deleting it would delete every VariantAutoscaling on the cluster. The APIServices go first:
        # once the adapter's pod is gone, a namespace deletion that still has to discover their API groups stays
        # Terminating (kubernetes#75788)
        kubectl.delete([o for o in cluster_scoped if o["kind"] == "APIService"])
        if kind_cluster or kwok:  # a suite's cluster: the next run starts from an empty namespace
            kubectl.run("delete", "namespace", NAMESPACE, "--ignore-not-found", "--wait=true", "--timeout=300s",
                        check=False, timeout=330)
        else:
            kubectl.delete([o for o in namespaced if o["kind"] != "Namespace"])
        kubectl.delete([o for o in cluster_scoped if o["kind"] not in ("CustomResourceDefinition", "APIService")])
        # the next run's HPAs carry the same names: the controller must have forgotten these first (kube/births.py)
        wait_forgotten(hpas or [], NAMESPACE, kwok.hpa_sync_s / kwok.time_scale if kwok else HPA_SYNC_PERIOD_S,
                       kcm_log, since)

