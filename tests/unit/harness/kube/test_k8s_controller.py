"""The WVA Kubernetes controller at its adapter boundary.

The API server is ``FakeKubeAPI`` seeded from the API-response fixtures in
tests/fixtures/k8s/; Prometheus is a fake ``MetricsReader``; sockets are
disabled for the whole module, so any real network call fails loudly.
"""
from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from scalearena.contracts.errors import MetricsUnavailable, UserError
from scalearena.controllers.base import ClusterView, Decision, PodMetrics, Reason
from scalearena.controllers.registry import REGISTRY
from scalearena.controllers.static import Static, StaticConfig
from scalearena.harness.control.ports import VirtualClock
from scalearena.harness.kube.wva.config import wva_config_from_configmaps
from scalearena.harness.kube.wva.controller import WVAKubeController, engine_from_args, pod_counts
from scalearena.harness.kube.wva.fake import FakeKubeAPI
from scalearena.harness.kube.wva.kubeapi import ClientKubeAPI, Conflict, find_kubeconfig

ROOT = Path(__file__).resolve().parents[4]
FIX = ROOT / "tests/fixtures/k8s"
NS = "scalearena"
CRD = yaml.safe_load((ROOT / "manifests/autoscalers/wva/crd.yaml").read_text())
VA_SCHEMA = CRD["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*a: Any, **k: Any) -> None:
        raise RuntimeError("network call in a unit test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def api() -> FakeKubeAPI:
    return FakeKubeAPI.from_fixtures(FIX, "variantautoscalings.json", "deployment-va-a100.json",
                                     "deployment-va-h100.json", "pods-va-a100.json", "configmaps.json")


class FakeMetrics:
    """What Prometheus would answer; ``down=True`` is an unreachable Prometheus."""

    def __init__(self, samples: dict[str, list[PodMetrics]], queue: int = 0, down: bool = False) -> None:
        self.samples, self.queue, self.down = samples, queue, down

    def _check(self) -> None:
        if self.down:
            raise MetricsUnavailable("prometheus at http://prometheus:9090 could not answer (ConnectionError)")

    def evaluate_at(self, now: float) -> None:
        pass  # answers do not depend on the time

    def latest_pod_samples(self, variant: str) -> list[PodMetrics]:
        self._check()
        return self.samples.get(variant, [])

    def router_queue(self, model: str) -> int:
        self._check()
        return self.queue

    def pod_max_over_time(self, variant: str, metric: str, window_s: float) -> dict[str, float]:
        self._check()
        key = "kv_usage" if "kv_cache" in metric else "waiting"
        return {p.pod: float(getattr(p, key)) for p in self.samples.get(variant, [])}

    pod_avg_over_time = pod_max_over_time

    def counter_increase(self, variant: str, metric: str, window_s: float) -> float:
        self._check()
        return 10.0

    def histogram_quantile(self, variant: str, metric: str, q: float, window_s: float) -> float | None:
        return None


class Scripted:
    """A policy that returns fixed desired replicas and records the views it saw."""

    period_s, fast_period_s = 30.0, 0.1

    def __init__(self, desired: dict[str, int], fast: dict[str, int] | None = None) -> None:
        self.desired, self.fast, self.views = desired, fast or {}, []

    def _out(self, view: ClusterView, want: dict[str, int]) -> list[Decision]:
        self.views.append(view)
        return [Decision(v.name, v.spec_replicas, want.get(v.name, v.spec_replicas), (Reason("scripted", "test"),))
                for v in view.variants if v.name in want]

    def decide(self, now: float, view: ClusterView) -> list[Decision]:
        return self._out(view, self.desired)

    def decide_fast(self, now: float, view: ClusterView) -> list[Decision]:
        return self._out(view, self.fast)


def pods(*kv: float, ts: float = 1000.0) -> list[PodMetrics]:
    names = ["va-a100-5d8f7c9b6-abcde", "va-a100-5d8f7c9b6-fghij"]
    return [PodMetrics(pod=n, ts=ts, kv_usage=k, waiting=0, running=1) for n, k in zip(names, kv, strict=False)]


def controller(fake: FakeKubeAPI, policy: Any, metrics: FakeMetrics, mode: str = "hpa") -> WVAKubeController:
    return WVAKubeController(fake, policy, lambda variants: metrics, NS, actuator=mode, clock=VirtualClock(1000.0))


def conditions(fake: FakeKubeAPI, name: str) -> dict[str, tuple[str, str]]:
    va = fake.store[("VariantAutoscaling", NS, name)]
    jsonschema.validate(va, VA_SCHEMA)  # every status we write is valid for the CRD
    return {c["type"]: (c["status"], c["reason"]) for c in va["status"]["conditions"]}


def test_view_is_built_from_the_recorded_deployment_and_pods() -> None:
    fake = api()
    policy = Scripted({})
    controller(fake, policy, FakeMetrics({"va-a100": pods(0.5, 0.6)})).reconcile()
    a100 = policy.views[0].variant("va-a100")
    # pods fixture: 2 ready, 1 Pending, 1 with a deletionTimestamp
    assert (a100.spec_replicas, a100.ready, a100.pending, a100.terminating) == (2, 2, 1, 1)
    assert a100.cost == 1.0 and a100.gpu == "A100-80GB" and a100.startup_s == 30.0
    assert a100.engine == {"max_num_seqs": 256, "max_waiting_queue": 1000, "kv_cache_blocks": 1024, "block_size": 16}
    assert [p.pod for p in a100.pods] == ["va-a100-5d8f7c9b6-abcde", "va-a100-5d8f7c9b6-fghij"]


def test_decision_is_published_for_the_hpa_and_status_written() -> None:
    fake = api()
    c = controller(fake, Scripted({"va-a100": 3, "va-h100": 0}), FakeMetrics({"va-a100": pods(0.9, 0.9)}))
    c.reconcile()
    labels = {"variant_name": "va-a100", "namespace": NS, "accelerator_type": "A100-80GB"}
    assert c.publisher.value("wva_desired_replicas", **labels) == 3
    assert c.publisher.value("wva_current_replicas", **labels) == 2
    assert c.publisher.value("wva_desired_ratio", **labels) == 1.5  # 3 / 2
    assert c.publisher.value("wva_replica_scaling_total", direction="up", reason="scripted", **labels) == 1
    assert not [call for call in fake.calls if call[0] == "patch_scale"]  # the HPA scales, not us
    assert conditions(fake, "va-a100") == {"TargetResolved": ("True", "TargetFound"),
                                           "MetricsAvailable": ("True", "MetricsFound"),
                                           "OptimizationReady": ("True", "OptimizationSucceeded")}
    status = fake.store[("VariantAutoscaling", NS, "va-a100")]["status"]
    assert status["desiredOptimizedAlloc"]["numReplicas"] == 3
    assert "kv" not in json.dumps(status).lower()  # no ephemeral metrics in status


def test_every_cycle_logs_what_it_read_and_decided(caplog: pytest.LogCaptureFixture) -> None:
    # a kube run keeps the controller's log: each cycle's reasons are the readings a fidelity trace needs
    fake = api()
    with caplog.at_level("INFO", logger="scalearena.wva"):
        controller(fake, Scripted({"va-a100": 3}), FakeMetrics({"va-a100": pods(0.9, 0.9)})).reconcile()
    lines = [r.getMessage() for r in caplog.records]
    assert "variant va-a100: cycle at 2 replicas -> 3: test" in lines  # the scripted decision's reason
    assert "variant va-a100: up 2 -> 3 (scripted)" in lines
    # va-h100 got no decision: it holds at its own count
    assert any(m.startswith("variant va-h100: cycle at ") and m.endswith(": no decision") for m in lines)


def test_unchanged_status_is_not_written_again() -> None:
    fake = api()
    c = controller(fake, Scripted({"va-a100": 2, "va-h100": 0}), FakeMetrics({"va-a100": pods(0.5, 0.5)}))
    c.reconcile()
    writes = len([x for x in fake.calls if x[0] == "patch_variant_autoscaling_status"])
    c.reconcile()
    assert len([x for x in fake.calls if x[0] == "patch_variant_autoscaling_status"]) == writes == 2


def test_status_conflict_is_retried_on_a_fresh_read() -> None:
    fake = api()
    fake.fail_next("patch_variant_autoscaling_status", "va-a100", Conflict(), times=2)
    controller(fake, Scripted({"va-a100": 3}), FakeMetrics({"va-a100": pods(0.9, 0.9)})).reconcile()
    a100_calls = [op for op, name in fake.calls if name == "va-a100"]
    # two 409s, each followed by a re-read, then the write that lands
    assert a100_calls.count("patch_variant_autoscaling_status") == 3
    assert a100_calls.count("get_variant_autoscaling") == 2
    assert conditions(fake, "va-a100")["OptimizationReady"] == ("True", "OptimizationSucceeded")


def test_scale_conflict_is_retried_in_direct_mode() -> None:
    fake = api()
    fake.fail_next("patch_scale", "va-a100", Conflict())
    c = controller(fake, Scripted({"va-a100": 4}), FakeMetrics({"va-a100": pods(0.9, 0.9)}), mode="direct")
    c.scaler.sleep = lambda s: None
    c.reconcile()
    assert fake.store[("Deployment", NS, "va-a100")]["spec"]["replicas"] == 4
    assert [op for op, n in fake.calls if n == "va-a100" and "scale" in op] == [
        "get_scale", "patch_scale", "get_scale", "patch_scale"]


def test_missing_target_pauses_actuation() -> None:
    fake = api()
    fake.delete("Deployment", NS, "va-h100")
    c = controller(fake, Scripted({"va-a100": 2, "va-h100": 5}), FakeMetrics({"va-a100": pods(0.5, 0.5)}),
                   mode="direct")
    c.reconcile()
    assert conditions(fake, "va-h100")["TargetResolved"] == ("False", "TargetNotFound")
    assert not [x for x in fake.calls if x == ("patch_scale", "va-h100")]
    labels = {"variant_name": "va-h100", "namespace": NS, "accelerator_type": "H100-SXM"}
    assert c.publisher.value("wva_desired_replicas", **labels) is None  # nothing for an HPA to act on


def test_unreachable_prometheus_holds_replicas() -> None:
    fake = api()
    c = controller(fake, Scripted({"va-a100": 1, "va-h100": 3}), FakeMetrics({}, down=True), mode="direct")
    c.reconcile()
    assert conditions(fake, "va-a100")["MetricsAvailable"] == ("False", "MetricsUnavailable")
    assert conditions(fake, "va-a100")["OptimizationReady"] == ("False", "OptimizationHeld")
    assert not [x for x in fake.calls if x[0] == "patch_scale"]  # policy said 1 and 3: nothing moves
    labels = {"variant_name": "va-a100", "namespace": NS, "accelerator_type": "A100-80GB"}
    assert c.publisher.value("wva_desired_replicas", **labels) == 2  # held at the current count
    assert fake.store[("Deployment", NS, "va-a100")]["spec"]["replicas"] == 2


def test_fast_loop_scales_from_zero_directly() -> None:
    fake = api()
    c = controller(fake, Scripted({}, fast={"va-h100": 1}), FakeMetrics({}, queue=3))
    c.reconcile()  # learns that va-h100 is at 0
    woke = c.reconcile_fast()
    assert [d.variant for d in woke] == ["va-h100"]
    assert fake.store[("Deployment", NS, "va-h100")]["spec"]["replicas"] == 1


def test_fast_loop_does_nothing_without_queued_requests() -> None:
    fake = api()
    c = controller(fake, Scripted({}, fast={"va-h100": 1}), FakeMetrics({}, queue=0))
    c.reconcile()
    assert c.reconcile_fast() == []
    assert fake.store[("Deployment", NS, "va-h100")]["spec"]["replicas"] == 0


def test_shared_wva_policy_runs_through_the_registry() -> None:
    fake = api()
    cfg = wva_config_from_configmaps(*(fake.get_config_map(NS, n)["data"] for n in
                                       ("wva-saturation-scaling-config", "wva-scale-to-zero-config")))
    c = controller(fake, REGISTRY.build(cfg), FakeMetrics({"va-a100": pods(0.95, 0.95)}))
    decisions = c.reconcile()
    assert {d.variant for d in decisions} <= {"va-a100", "va-h100"}
    assert conditions(fake, "va-a100")["TargetResolved"] == ("True", "TargetFound")


def test_configmaps_translate_to_the_policy_config() -> None:
    fake = api()
    cfg = wva_config_from_configmaps(fake.get_config_map(NS, "wva-saturation-scaling-config")["data"],
                                     fake.get_config_map(NS, "wva-scale-to-zero-config")["data"], period_s=30)
    assert (cfg.tau_kv, cfg.tau_q, cfg.gamma_kv, cfg.gamma_q) == (0.8, 5, 0.3, 3)
    assert cfg.model_overrides["llama3-70b"].tau_kv == 0.75
    assert cfg.scale_to_zero_for("llama3-70b") == (True, 300.0)  # 5m
    assert cfg.scale_to_zero_for("other") == (False, 600.0)  # default 10m
    with pytest.raises(UserError, match="unknown keys"):
        wva_config_from_configmaps({"default": "kvCacheTreshold: 0.8\n"}, None)
    with pytest.raises(UserError) as e:  # the field and the value, not "1 validation error for WVAConfig"
        wva_config_from_configmaps({"m": "model_id: x\nqueueLengthThreshold: -3\n"}, None)
    assert e.value.render() == ("wva-saturation-scaling-config / wva-scale-to-zero-config: model_overrides.x.tau_q: "
                                "Input should be greater than 0; got -3")


def test_helpers_on_recorded_objects() -> None:
    fake = api()
    c = pod_counts(fake.list_pods(NS, "scalearena.io/variant=va-a100"))
    assert (len(c.ready), c.pending, c.terminating, c.starting) == (2, 1, 1, 0)  # klmno is phase Pending
    assert engine_from_args({"spec": {"template": {"spec": {"containers": [{"args": [
        "--num-gpu-blocks-override", "512", "--block-size=32"]}]}}}}) == {"kv_cache_blocks": 512, "block_size": 32}


def _pod(name: str, phase: str | None, ready: str | None, deleting: bool = False) -> dict[str, Any]:
    md: dict[str, Any] = {"name": name, **({"deletionTimestamp": "2026-03-01T10:05:00Z"} if deleting else {})}
    conds = [] if ready is None else [{"type": "Ready", "status": ready}]
    return {"metadata": md, "status": {"phase": phase, "conditions": conds}}


def test_running_but_not_ready_pods_are_starting_and_pending_ones_are_not() -> None:
    pods = [_pod("a", "Running", "True"), _pod("b", "Running", "False"), _pod("c", "Running", None),
            _pod("d", "Pending", "False"), _pod("e", "Pending", None), _pod("f", "Running", "False", deleting=True),
            _pod("g", "Failed", "False")]
    c = pod_counts(pods)
    # a ready; b, c Running without Ready=True -> starting; d, e Pending; f terminating; g Failed: not counted
    assert (c.ready, c.pending, c.starting, c.terminating) == (["a"], 4, 2, 1)


def test_the_controller_hands_starting_pods_to_the_policy() -> None:
    fake = api()
    for p in fake.list_pods(NS, "scalearena.io/variant=va-a100"):
        if p["metadata"]["name"].endswith("klmno"):  # the Pending pod's container starts; not Ready yet
            p["status"]["phase"] = "Running"
            fake.put(p)
    seen: dict[str, Any] = {}

    class Spy(Static):
        def decide(self, now: float, view: ClusterView) -> list[Decision]:
            seen.update({v.name: (v.ready, v.pending, v.starting) for v in view.variants})
            return []

    controller(fake, Spy(StaticConfig(kind="static")), FakeMetrics({"va-a100": pods(0.1, 0.1)})).reconcile()
    assert seen["va-a100"] == (2, 1, 1)  # 2 ready, 1 pending of which 1 starting (terminating pqrst left out)


def test_client_maps_recorded_409_and_reads_json() -> None:
    from kubernetes.client.exceptions import ApiException

    body = (FIX / "status-409-conflict.json").read_text()

    def conflict(*a: Any, **k: Any) -> None:
        e = ApiException(status=409, reason="Conflict")
        e.body = body
        raise e

    with pytest.raises(Conflict):
        ClientKubeAPI._call(conflict)

    class Resp:
        data = (FIX / "deployment-va-a100.json").read_bytes()

    assert ClientKubeAPI._call(lambda *a, **k: Resp())["spec"]["replicas"] == 2


def test_missing_kubeconfig_names_what_was_expected(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(UserError) as e:
        find_kubeconfig()
    assert "~/.kube/config" in e.value.render() and "$KUBECONFIG" in e.value.render()
    from scalearena.harness.kube.wva.__main__ import main

    assert main(["--once"]) == 2


def test_network_is_disabled_here() -> None:
    with pytest.raises(RuntimeError, match="network call"):
        socket.create_connection(("127.0.0.1", 9090))


def test_the_controller_decides_on_its_period_only_and_runs_the_fast_loop_between() -> None:
    # issue 19: it used to reconcile on every watch event, far more often than WVA's 30 s cycle
    from scalearena.harness.kube.wva.__main__ import run_cycles

    t = [0.0]
    calls: list[tuple[str, float]] = []

    class Ctl:
        def reconcile(self) -> None:
            calls.append(("main", t[0]))
            t[0] += 2.0  # a slow cycle: the next one still starts on the 30 s grid

        def reconcile_fast(self) -> None:
            calls.append(("fast", t[0]))

    def wait(s: float) -> None:
        t[0] += s

    run_cycles(Ctl(), 30.0, 5.0, lambda: t[0], wait, lambda: t[0] >= 95.0)
    # main at 0 (takes 2 s); fast every 5 s: 2, 7, ..., 27, 32 -> the first tick past the 30 s grid point is 32;
    # the grid stays 30/60/90 (not 32+30): 34 ... 59, 64 -> 64; 66 ... 86, 91 -> 91
    assert [c for k, c in calls if k == "main"] == [0.0, 32.0, 64.0, 91.0]
    fast = [c for k, c in calls if k == "fast"]
    assert fast[:7] == [2.0, 7.0, 12.0, 17.0, 22.0, 27.0, 34.0]  # no main cycle at 7..27, whatever happened


BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n" for p, c in zip("abcdefgh", "bcdefghi", strict=True))


def test_kubeconfig_is_read_through_safe_yaml(tmp_path: Path) -> None:
    # issue 17: the kubeconfig went through the client's plain yaml.safe_load; an alias bomb
    # (9 levels of 9 aliases: 9**9 = 387,420,489 values) is now refused before anything walks it
    from scalearena.harness.kube.wva.kubeapi import load_api_client

    bomb = tmp_path / "bomb"
    bomb.write_text(BOMB)
    with pytest.raises(UserError, match="too many values after expanding aliases"):
        load_api_client(str(bomb))
    listing = tmp_path / "list"
    listing.write_text("- a\n- b\n")
    with pytest.raises(UserError, match="not a kubeconfig"):
        load_api_client(str(listing))
    # a real kubeconfig still loads; a relative CA path resolves against the kubeconfig's folder
    (tmp_path / "ca.crt").write_text("-----BEGIN CERTIFICATE-----\n")
    good = tmp_path / "config"
    good.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: k, cluster: {server: 'https://127.0.0.1:6443', certificate-authority: ca.crt}}]\n"
        "users: [{name: u, user: {token: abc}}]\n"
        "contexts: [{name: c, context: {cluster: k, user: u}}]\n")
    conf = load_api_client(str(good)).configuration
    assert conf.host == "https://127.0.0.1:6443"
    assert conf.ssl_ca_cert == str(tmp_path / "ca.crt")
    assert conf.api_key == {"BearerToken": "Bearer abc"}  # the client's own key for a token user


def test_configmap_entries_are_read_through_safe_yaml() -> None:
    with pytest.raises(UserError, match="too many values") as e:
        wva_config_from_configmaps({"default": BOMB}, None)
    assert "wva-saturation-scaling-config entry 'default'" in e.value.render()
