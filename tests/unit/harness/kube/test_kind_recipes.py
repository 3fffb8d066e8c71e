"""Issue 13 item 1 on CLUSTER=kind|cluster: the llm-d recipes through the objects path, kube-state-metrics in the
manifests, and the recipes the stack cannot feed refused with the series and why.

Offline only (no Docker, no API server where this was written): the objects a run applies are rendered by the
backend's own ``plan`` and checked against kubernetes-validate (v1.33, strict), the API server's semantic rules
(harness/kube/validate.py), promql-parser and, when on PATH, promtool; the run's command sequence and
readiness against a recording shell, canned Prometheus answers and a virtual clock.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import urllib.parse
from pathlib import Path
from typing import Any

import kubernetes_validate
import promql_parser as pp
import pytest
import yaml

from scalearena.contracts.errors import RunFailed, UserError
from scalearena.contracts.series import of_exporter
from scalearena.controllers.llmd import RECIPES
from scalearena.harness.config.scenario import load_scenario
from scalearena.harness.kube.backend import KubeBackend, runs_in_cluster
from scalearena.harness.kube.cluster import KEDA_MANIFEST, Kubectl
from scalearena.harness.kube.honesty import Readiness
from scalearena.harness.kube.render import render
from scalearena.harness.kube.sampling import Sampler
from scalearena.harness.kube.validate import object_errors
from scalearena.harness.objects.reads import reads_kube_state, series_read
from scalearena.harness.objects.recipes import exposed_series
from tests.unit.harness.kube.test_kube_backend import RecordingShell, backend, writer
from tests.unit.harness.kube.test_kube_honest import Clock
from tests.unit.pinskit import fake_digest, run_pins

ROOT = Path(__file__).resolve().parents[4]
EXP2 = ROOT / "workloads/scenarios/exp2-cost-aware.yaml"  # one model, two variants (va-a100, va-h100)
AGGREGATED = [n for n, r in RECIPES.items() if not r.roles]  # all but llmd-token-pd
# kubernetes/k8s.io registry.k8s.io/images/k8s-staging-kube-state-metrics/images.yaml (image promoter manifest):
# the digest it lists for kube-state-metrics v2.15.0
KSM_IMAGE = ("registry.k8s.io/kube-state-metrics/kube-state-metrics:v2.15.0"
             "@sha256:db384bf43222b066c378e77027a675d4cd9911107adba46c2922b3a55e10d6fb")


def by(objs: list[dict], kind: str, name: str) -> dict:
    (o,) = [o for o in objs if o["kind"] == kind and o["metadata"]["name"] == name]
    return o


def names_in(query: str) -> set[str]:
    out: set[str] = set()
    pp.walk(pp.parse(query), lambda n: out.add(n.name) if isinstance(n, pp.VectorSelector) and n.name else True)
    return {n.removesuffix("_bucket") for n in out}


# ---- kube-state-metrics in manifests/base ------------------------------------------------------------------
def test_kube_state_metrics_is_namespaced_deployments_only_and_serves_exactly_the_catalogue_series() -> None:
    objs = render(ROOT / "manifests/base")
    dep = by(objs, "Deployment", "kube-state-metrics")
    (c,) = dep["spec"]["template"]["spec"]["containers"]
    assert c["image"] == KSM_IMAGE
    args = dict(a.removeprefix("--").split("=", 1) for a in c["args"])
    assert args["namespaces"] == "$(POD_NAMESPACE)"  # the kubelet expands it from the downward API
    assert {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}} in c["env"]
    assert args["resources"] == "deployments"
    # the allowlist is the catalogue's kube-state-metrics entries (contracts/series.py), no more, no less
    assert set(args["metric-allowlist"].split(",")) == {s.name for s in of_exporter("kube-state-metrics")} == {
        "kube_deployment_spec_replicas", "kube_deployment_status_replicas", "kube_deployment_status_replicas_ready",
        "kube_deployment_status_replicas_unavailable"}
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    assert ports == {"http-metrics": 8080, "telemetry": 8081} and (args["port"], args["telemetry-port"]) == (
        "8080", "8081")
    assert (c["livenessProbe"]["httpGet"], c["readinessProbe"]["httpGet"]) == (
        {"path": "/livez", "port": "http-metrics"}, {"path": "/readyz", "port": "telemetry"})
    # RBAC: one namespaced Role, list/watch on deployments; no cluster-wide grant at all
    assert not [o for o in objs if o["kind"] in ("ClusterRole", "ClusterRoleBinding")]
    assert by(objs, "Role", "kube-state-metrics")["rules"] == [
        {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["list", "watch"]}]
    rb = by(objs, "RoleBinding", "kube-state-metrics")
    assert rb["roleRef"]["kind"] == "Role" and rb["subjects"] == [
        {"kind": "ServiceAccount", "name": "kube-state-metrics", "namespace": "scalearena"}]
    assert dep["spec"]["template"]["spec"]["serviceAccountName"] == "kube-state-metrics"
    # only Prometheus reaches the metrics port
    np = by(objs, "NetworkPolicy", "kube-state-metrics-ingress")
    assert np["spec"]["ingress"] == [{"from": [{"podSelector": {"matchLabels": {
        "scalearena.io/component": "prometheus"}}}], "ports": [{"port": "http-metrics", "protocol": "TCP"}]}]
    for o in objs:
        if o["metadata"]["name"].startswith("kube-state-metrics"):
            kubernetes_validate.validate(o, "1.33.0", strict=True)


@pytest.mark.parametrize("mode", ["kind", "cluster"])
def test_kube_state_metrics_runs_hardened_in_every_plan(mode: str) -> None:
    sc = load_scenario(EXP2)
    objs = KubeBackend(mode, image_prefix="registry.example/org").plan(sc, sc.autoscaler("llmd-slo"))
    pod = by(objs, "Deployment", "kube-state-metrics")["spec"]["template"]["spec"]
    assert pod["securityContext"] == {"runAsNonRoot": True, "runAsUser": 65534,
                                      "seccompProfile": {"type": "RuntimeDefault"}}
    (c,) = pod["containers"]
    assert c["image"] == KSM_IMAGE  # third-party: never rewritten to the image prefix
    assert c["securityContext"] == {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                                    "capabilities": {"drop": ["ALL"]}}


def _relabel_keeps(job: dict, meta: dict[str, str]) -> bool:
    """Prometheus' `keep` steps of ``job`` on one discovered target's meta labels (joined with ';')."""
    for step in job["relabel_configs"]:
        if step.get("action") == "keep":
            value = ";".join(meta.get(s, "") for s in step["source_labels"])
            if not re.fullmatch(step["regex"], value):
                return False
    return True


def test_prometheus_scrapes_kube_state_metrics_once_keeping_its_namespace_and_deployment_labels() -> None:
    objs = render(ROOT / "manifests/base")
    conf = yaml.safe_load(by(objs, "ConfigMap", "prometheus-config")["data"]["prometheus.yml"])
    jobs = {j["job_name"]: j for j in conf["scrape_configs"]}
    ksm = jobs["kube-state-metrics"]
    assert ksm["honor_labels"] is True  # the series' own namespace (the Deployment's) wins over any target label
    assert not [s for s in ksm["relabel_configs"] if "target_label" in s]  # no pod/variant/component labels
    assert ksm["kubernetes_sd_configs"] == [{"role": "pod", "namespaces": {"names": ["scalearena"]}}]
    # the targets kubernetes_sd (role pod: one per container port) gives for the KSM pod and a variant pod
    tmpl = by(objs, "Deployment", "kube-state-metrics")["spec"]["template"]
    ksm_pod = {"__meta_kubernetes_pod_label_scalearena_io_component": tmpl["metadata"]["labels"][
        "scalearena.io/component"], "__meta_kubernetes_pod_phase": "Running"}
    ports = [p["name"] for p in tmpl["spec"]["containers"][0]["ports"]]
    kept = [p for p in ports if _relabel_keeps(ksm, {**ksm_pod, "__meta_kubernetes_pod_container_port_name": p})]
    assert kept == ["http-metrics"]  # the exposition port, not its own telemetry
    variant = {"__meta_kubernetes_pod_label_scalearena_io_component": "variant", "__meta_kubernetes_pod_phase":
               "Running", "__meta_kubernetes_pod_container_port_name": "http",
               "__meta_kubernetes_pod_annotation_prometheus_io_scrape": "true"}
    assert not _relabel_keeps(ksm, variant) and _relabel_keeps(jobs["scalearena-pods"], variant)
    # and the annotation job leaves the KSM pod alone (no prometheus.io/scrape annotation): scraped once
    assert "prometheus.io/scrape" not in (tmpl["metadata"].get("annotations") or {})
    assert not _relabel_keeps(jobs["scalearena-pods"], {**ksm_pod, "__meta_kubernetes_pod_container_port_name":
                                                        "http-metrics"})


# ---- each recipe rendered and validated on kind ------------------------------------------------------------
@pytest.mark.parametrize("recipe", AGGREGATED)
def test_each_aggregated_recipe_renders_on_kind_and_passes_every_offline_check(recipe: str) -> None:
    sc = load_scenario(EXP2)
    cfg = sc.autoscaler(recipe)
    objs = KubeBackend("kind").plan(sc, cfg)  # plan() runs the semantic checks itself
    assert "${" not in json.dumps(objs)  # every placeholder filled from the scenario or the tunables
    sos = {o["metadata"]["name"]: o for o in objs if o["kind"] == "ScaledObject"}
    assert sorted(sos) == [f"{recipe}-va-a100", f"{recipe}-va-h100"]  # one per variant, named after it
    for v in sc.cluster.variants:
        spec = sos[f"{recipe}-{v.name}"]["spec"]
        assert spec["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": v.name}
        assert (spec["minReplicaCount"], spec["maxReplicaCount"]) == (v.min_replicas, v.max_replicas)
        for t in spec["triggers"]:
            assert t["metadata"]["serverAddress"] == "http://prometheus.scalearena.svc:9090"
            assert names_in(t["metadata"]["query"]) - {"llmd_slo:saturation"} <= exposed_series("kind"), t
    for o in objs:
        assert object_errors(o) == [], (o["kind"], o["metadata"]["name"])
        if o["kind"] != "ScaledObject":  # KEDA's CRD schema is not vendored; validate.py checks it
            kubernetes_validate.validate(o, "1.33.0", strict=True)
    assert runs_in_cluster(cfg)  # KEDA scales; the harness only records
    assert reads_kube_state(cfg) == (recipe in ("llmd-queue-guard", "llmd-slo"))
    assert series_read(cfg) - set(RECIPES[recipe].optional) <= exposed_series("kind")


def test_slo_recipe_brings_its_recording_rules_as_a_prometheus_rule_file(tmp_path: Path) -> None:
    sc = load_scenario(EXP2)
    objs = KubeBackend("kind").plan(sc, sc.autoscaler("llmd-slo"))
    assert not [o for o in objs if o["kind"] == "PrometheusRule"]  # no prometheus-operator here
    cm = by(objs, "ConfigMap", "prometheus-config")
    conf = yaml.safe_load(cm["data"]["prometheus.yml"])
    assert conf["rule_files"] == ["scalearena-rules.yml"]  # beside the config file, wherever it is mounted
    (group,) = yaml.safe_load(cm["data"]["scalearena-rules.yml"])["groups"]  # one model: one group
    assert group["name"] == "llmd-slo-aware-llama3-70b" and group["interval"] == "15s"
    assert [r["record"] for r in group["rules"]] == ["llmd_slo:latency_over_slo"] * 2 + [
        "llmd_slo:saturation_raw", "llmd_slo:saturation_clamped", "llmd_slo:saturation"]
    # exp2's slo: ttft 1000 ms, itl 50 ms -> the rules divide by 1.0 and 0.05 s
    assert group["rules"][0]["expr"].rstrip().endswith("/ 1.0") and group["rules"][1]["expr"].rstrip().endswith(
        "/ 0.05")
    if shutil.which("promtool"):  # the real Prometheus accepts the rule file and the config that loads it
        (tmp_path / "scalearena-rules.yml").write_text(cm["data"]["scalearena-rules.yml"])  # found from the config
        for job in conf["scrape_configs"]:  # Debian's promtool is built without kubernetes_sd: the relabelling,
            job["static_configs"] = [{"targets": []}]  # honor_labels and rule files are still checked
            del job["kubernetes_sd_configs"]
        (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(conf))
        done = subprocess.run(["promtool", "check", "config", str(tmp_path / "prometheus.yml")],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "SUCCESS: 5 rules found" in done.stdout


def test_token_pd_is_refused_on_kubernetes_with_the_p_d_reason() -> None:
    sc = load_scenario(ROOT / "workloads/scenarios/pd-disaggregated.yaml")
    cfg = sc.autoscaler("llmd-token-pd")
    assert {t.variant for t in cfg.targets} == {v.name for v in sc.cluster.variants}  # fine on sim/local
    with pytest.raises(UserError, match="prefill/decode disaggregation is not rendered for Kubernetes"):
        KubeBackend("kind").plan(sc, cfg)


# ---- what the stack cannot feed is refused, naming the series and why -------------------------------------
@pytest.mark.parametrize("recipe", AGGREGATED)
def test_with_the_llm_d_epp_v0_3_2_gateway_every_recipe_is_refused_naming_its_epp_series(recipe: str) -> None:
    sc = load_scenario(EXP2)
    cfg = sc.autoscaler(recipe)
    epp_needs = [s for s in RECIPES[recipe].needs if s.startswith("llm_d_epp_")]
    assert epp_needs  # every recipe reads at least one EPP series
    with pytest.raises(UserError) as e:
        KubeBackend("kind", gateway="epp").plan(sc, cfg)
    msg = str(e.value)
    assert msg.startswith(f"autoscalers[{recipe}]: --cluster kind (gateway epp) exposes no {', '.join(epp_needs)}, which the recipe's "
                          "queries read"), msg
    assert "llm-d-inference-scheduler v0.3.2" in msg and "inference_extension_flow_control_*" in msg


def test_render_refuses_with_one_error_line_and_exit_2(tmp_path: Path) -> None:
    from tests.unit.harness.cli.test_cli import scalearena

    done = scalearena("render", str(EXP2), "--cluster", "kind", "--gateway", "epp", "--autoscaler",
                      "llmd-queue-guard", "--out", str(tmp_path / "out"))
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("error: autoscalers[llmd-queue-guard]: --cluster kind (gateway epp) exposes no "
                           "llm_d_epp_flow_control_queue_size, llm_d_epp_request_running, which"), line
    assert not (tmp_path / "out" / "llmd-queue-guard").exists()  # nothing written
    ok = scalearena("render", str(EXP2), "--cluster", "kind", "--autoscaler", "llmd-queue-guard", "--out",
                    str(tmp_path / "out"))
    assert ok.returncode == 0, ok.stderr
    files = sorted(p.name for p in (tmp_path / "out" / "llmd-queue-guard").iterdir())
    assert "022-networkpolicy-scalearena-kube-state-metrics-ingress.yaml" in files
    assert [f for f in files if "scaledobject" in f] == ["027-scaledobject-scalearena-llmd-queue-guard-va-a100.yaml",
                                                         "028-scaledobject-scalearena-llmd-queue-guard-va-h100.yaml"]


# ---- the run: KEDA installed, the cluster scales, t0 waits for kube-state-metrics -------------------------
def test_a_recipe_run_installs_keda_waits_for_kube_state_metrics_and_never_patches_scale(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}

    def drive(self: Sampler, gateway: str, logs: Path, progress: Any, **kw: Any) -> None:
        seen["native"] = self.native
        raise KeyboardInterrupt

    monkeypatch.setattr(Sampler, "drive", drive)
    sc = load_scenario(EXP2)
    shell = RecordingShell()
    b = backend("kind", shell)
    b.readiness = lambda *a: seen.setdefault("readiness", a[3:])
    with pytest.raises(KeyboardInterrupt):
        b.run(sc, sc.autoscaler("llmd-slo"), writer(tmp_path))
    cmds = shell.joined()
    assert any(c.endswith(f"apply --server-side -f {KEDA_MANIFEST}") for c in cmds)
    # readiness: KEDA's ScaledObjects, and kube_deployment_* for both variants before t0
    assert seen["readiness"] == ("keda", "llama3-70b", ["va-a100", "va-h100"])
    assert seen["native"] is True  # KEDA's HPA scales; the harness never patches the scale subresource too


def test_readiness_waits_until_prometheus_has_every_variant_s_kube_state_series() -> None:
    clock = Clock()
    asked: list[str] = []

    def get(url: str, body: bytes | None) -> tuple[int, str]:
        asked.append(url)
        # kube-state-metrics scraped va-a100 at 2 s and va-h100 at 6 s
        deps = [d for d, at in (("va-a100", 2), ("va-h100", 6)) if clock.t >= at]
        return 200, json.dumps({"data": {"result": [{"metric": {"namespace": "scalearena", "deployment": d}}
                                                    for d in deps]}})

    r = Readiness(Kubectl(RecordingShell(), None), get=get, timeout_s=60, clock=clock.now, sleep=clock.sleep)
    assert r.kube_state("http://p", ["va-a100", "va-h100"]) == "no kube_deployment_status_replicas for va-a100, " \
        "va-h100 yet"
    r._until("kube-state-metrics", lambda: r.kube_state("http://p", ["va-a100", "va-h100"]))
    assert clock.t == 6.0  # polls every 2 s: 0 (none), 2 (va-a100), 4, 6 (both)
    assert urllib.parse.unquote(asked[-1]) == \
        'http://p/api/v1/query?query=kube_deployment_status_replicas{namespace="scalearena"}'


def test_readiness_gives_up_naming_the_deployments_kube_state_metrics_never_reported() -> None:
    from tests.unit.harness.kube.test_kube_honest import targets

    clock = Clock()

    def get(url: str, body: bytes | None) -> tuple[int, str]:
        if "/api/v1/targets" in url:
            return 200, targets("up")
        return 200, json.dumps({"data": {"result": [{"metric": {"namespace": "scalearena",
                                                                "deployment": "va-a100"}}]}})

    r = Readiness(Kubectl(RecordingShell(), None), get=get, timeout_s=10, clock=clock.now, sleep=clock.sleep)
    with pytest.raises(RunFailed, match="^not ready after 10 s: Prometheus has kube-state-metrics' series: no "
                                        "kube_deployment_status_replicas for va-h100 yet$"):
        r.wait("http://p", None, "llmd-slo", "llama3-70b", ["va-a100", "va-h100"])
    r.wait("http://p", None, "llmd-slo", "llama3-70b")  # an autoscaler that reads none: no wait for them


def test_make_pins_refreshes_the_kube_state_metrics_digest_and_keeps_its_tag(tmp_path: Path) -> None:
    """scripts/refresh-pins.sh on a copy of manifests/, with a `crane` that answers one digest per reference."""
    done = run_pins(tmp_path)
    assert done.returncode == 0, done.stderr
    ref = KSM_IMAGE.split("@")[0]
    digest = fake_digest(ref)
    assert f"pinned {ref}@{digest}" in done.stdout
    text = (tmp_path / "manifests/base/kube-state-metrics.yaml").read_text()
    assert f"image: {ref}@{digest}\n" in text and KSM_IMAGE not in text
