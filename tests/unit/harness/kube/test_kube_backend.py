"""The kube backend at its adapter boundaries: a recording Shell, FakeKubeAPI, a fake Prometheus.

No kind, kubectl, Docker or network here: commands are recorded and
answered from canned output, the API is the fixture-seeded fake, time is
virtual. Sockets are disabled for the module.
"""
from __future__ import annotations

import itertools
import json
import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest

from scalearena.contracts.errors import UserError
from scalearena.controllers.base import PodMetrics
from scalearena.harness.config.scenario import load_scenario
from scalearena.harness.kube import sampling as kube_sampling
from scalearena.harness.kube.backend import KubeBackend
from scalearena.harness.kube.cluster import preflight
from scalearena.harness.kube.sampling import Sampler
from scalearena.harness.kube.wva.fake import FakeKubeAPI
from scalearena.reports.results import RunWriter
from scalearena.workloads.base import RequestSpec

ROOT = Path(__file__).resolve().parents[4]
FIX = ROOT / "tests/fixtures/k8s"
EXP2 = ROOT / "workloads/scenarios/exp2-cost-aware.yaml"


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*a: Any, **k: Any) -> None:
        raise RuntimeError("network call in a unit test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


KIND_NODES = [("", "NVIDIA-A100-SXM4-80GB"), ("2", "NVIDIA-A100-SXM4-80GB"), ("3", "NVIDIA-H100-80GB-HBM3"),
              ("4", "NVIDIA-H200")]  # the workers of manifests/kind/cluster.yaml


class RecordingShell:
    def __init__(self) -> None:
        self.commands: list[list[str]] = []

    def run(self, argv: list[str], *, input: str | None = None, timeout: float | None = None,
            check: bool = True) -> subprocess.CompletedProcess[str]:
        self.commands.append(list(argv))
        out = ""
        if argv[:3] == ["kind", "get", "clusters"]:
            out = ""
        elif argv[:3] == ["kubectl", "config", "current-context"]:
            out = "gpu-pool-admin\n"
        elif "get" in argv and "nodes" in argv:
            out = json.dumps({"items": [{"metadata": {"name": f"scalearena-worker{i}", "labels": {
                "scalearena.io/fake-gpus": "4", "nvidia.com/gpu.product": product}}} for i, product in KIND_NODES]})
        elif "get" in argv and "-o" in argv and "name" in argv:
            out = ""
        return subprocess.CompletedProcess(argv, 0, out, "")

    def popen(self, argv: list[str], log: Path) -> Any:
        self.commands.append(list(argv))

        class Proc:
            returncode = None

            def terminate(self) -> None:
                pass

            def poll(self) -> int | None:  # alive for the whole run
                return None

        return Proc()

    def joined(self) -> list[str]:
        return [" ".join(c) for c in self.commands]


def writer(tmp_path: Path) -> RunWriter:
    return RunWriter(tmp_path / "run", {"scenario": "exp2", "autoscaler": "hpa", "cluster": "kind", "seed": 0,
                                        "duration_s": 60, "slo": {"ttft_ms": 2000, "itl_ms": 100}, "variants": []})


def interrupted_drive(self: Sampler, gateway: str, logs: Path, progress: Any, **kw: Any) -> None:
    raise KeyboardInterrupt


def backend(mode: str, shell: RecordingShell, **kw: Any) -> KubeBackend:
    return KubeBackend(mode, local_port=itertools.count(30000).__next__, shell=shell, which=lambda t: f"/usr/bin/{t}", api_factory=lambda ctx: FakeKubeAPI(),
                       metrics_factory=lambda url, v: None, readiness=lambda *a: None, **kw)


def test_missing_tools_are_named_once_with_versions() -> None:
    with pytest.raises(UserError) as e:
        preflight("kind", which=lambda t: None)
    msg = e.value.render()
    assert "docker, kind, kubectl" in msg and "v0.29.0" in msg and "v1.33" in msg
    with pytest.raises(UserError, match="kubectl"):
        preflight("cluster", which=lambda t: None)


def test_kind_run_creates_loads_applies_and_tears_down_on_ctrl_c(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Sampler, "drive", interrupted_drive)
    shell = RecordingShell()
    sc = load_scenario(EXP2)
    with pytest.raises(KeyboardInterrupt):
        backend("kind", shell).run(sc, sc.autoscaler("hpa"), writer(tmp_path))
    cmds = shell.joined()
    assert any(c.startswith("kind create cluster --name scalearena --config") for c in cmds)
    patches = {c.split()[5]: json.loads(c.split(" -p ")[1])[0]["value"] for c in cmds if "--subresource=status" in c}
    # exp2: va-a100 max 4 on A100 (2 nodes: max(label 4, ceil(4/2))), va-h100 max 6 on the one H100 node
    assert patches == {"scalearena-worker": "4", "scalearena-worker2": "4", "scalearena-worker3": "6",
                       "scalearena-worker4": "4"}
    assert any("create configmap scalearena-cluster --from-literal=owner=run" in c for c in cmds)
    # serve-router, wva-controller, serve-engine (roofline scenarios)
    assert sum(c.startswith("kind load docker-image") for c in cmds) == 3
    assert any("apply --server-side" in c for c in cmds)
    assert any("port-forward svc/gateway" in c for c in cmds)
    assert cmds[-1] == "kind delete cluster --name scalearena"  # teardown after Ctrl-C


def test_keep_leaves_the_cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Sampler, "drive", interrupted_drive)
    shell = RecordingShell()
    sc = load_scenario(EXP2)
    with pytest.raises(KeyboardInterrupt):
        backend("kind", shell, keep=True).run(sc, sc.autoscaler("hpa"), writer(tmp_path))
    assert not any(c.startswith("kind delete") for c in shell.joined())


def test_cluster_mode_never_creates_or_deletes_a_cluster_and_keeps_the_crd(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Sampler, "drive", interrupted_drive)
    shell = RecordingShell()
    sc = load_scenario(EXP2)
    with pytest.raises(KeyboardInterrupt):
        backend("cluster", shell, image_prefix="ghcr.io/me").run(sc, sc.autoscaler("wva"), writer(tmp_path))
    cmds = shell.joined()
    assert not any(c.startswith("kind") for c in cmds)
    assert all("--context gpu-pool-admin" in c for c in cmds if c.startswith("kubectl") and "config" not in c)
    deletes = [c for c in cmds if " delete " in c]
    assert deletes, "what was applied is removed"
    assert not any(c.startswith("docker") for c in cmds)


def test_cluster_mode_needs_an_image_registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SCALEARENA_IMAGE_PREFIX", raising=False)
    sc = load_scenario(EXP2)
    with pytest.raises(UserError, match="SCALEARENA_IMAGE_PREFIX"):
        backend("cluster", RecordingShell()).run(sc, sc.autoscaler("wva"), writer(tmp_path))


class FakeProm:
    def evaluate_at(self, now: float) -> None:
        pass  # answers do not depend on the time

    def latest_pod_samples(self, variant: str) -> list[PodMetrics]:
        if variant != "va-a100":
            return []
        return [PodMetrics("va-a100-5d8f7c9b6-abcde", 9.0, 0.4, 2, 3),
                PodMetrics("va-a100-5d8f7c9b6-fghij", 9.0, 0.8, 4, 1)]

    def router_queue(self, model: str) -> int:
        return 5


def fake_api(tmp: Path, scenario_variants: list[str]) -> FakeKubeAPI:
    fake = FakeKubeAPI.from_fixtures(FIX, "deployment-va-a100.json", "deployment-va-h100.json", "pods-va-a100.json")
    return fake


def test_sampler_records_replicas_metrics_and_every_request(tmp_path: Path) -> None:
    sc = load_scenario(EXP2)
    names = [v.name for v in sc.cluster.variants]
    assert names == ["va-a100", "va-h100"]
    w = writer(tmp_path)
    s = Sampler(sc, sc.autoscaler("hpa"), w, fake_api(tmp_path, names), FakeProm(), native=True)
    model = sc.cluster.variants[0].model
    reqs = [RequestSpec(i, model, float(i), 10, 5) for i in range(4)]  # arrivals at 0, 1, 2, 3 s
    s.set_arrivals(reqs)
    s.sample(2.0)
    row = s.rows[0]
    # fixture: spec 2, pods 2 ready + 1 pending + 1 terminating; KV (0.4 + 0.8) / 2 = 0.6, waiting 2 + 4 = 6
    assert (row.spec_replicas, row.ready_replicas, row.pending_replicas, row.terminating_replicas) == (2, 2, 1, 1)
    assert row.kv_usage_mean == pytest.approx(0.6) and row.kv_usage_max == 0.8
    assert (row.waiting, row.running, row.router_queue) == (6, 4, 5)
    assert row.offered_rps == 1.5  # the first sample counts from the start: arrivals 0, 1, 2 in [0, 2] -> 3 / 2 s
    records = tmp_path / "records-0.jsonl"
    records.write_text(json.dumps({"request_id": 0, "model": model, "arrival_s": 0.0, "first_token_s": 0.2,
                                   "end_s": 1.0, "input_tokens": 10, "output_tokens": 5, "status": "ok",
                                   "http_status": 200, "variant": "va-a100", "pod": "p", "ttft_ms": 200.0,
                                   "itl_ms": 10.0, "e2e_ms": 1000.0}) + "\n")
    s.clock.wall = lambda: s.t0 + 10.0
    s.finish([records], reqs)
    assert sorted(r.request_id for r in w.requests_written()) == [0, 1, 2, 3]  # every request once
    assert [r.status for r in w.requests_written()] == ["ok", "error", "error", "error"]  # 3 never reported
    assert w.timeseries_written()[0].completed_rps == 0.5  # one ok end (t=1) in (0, 2]


def test_sampler_records_an_in_cluster_hpa_scaling_as_a_decision(tmp_path: Path) -> None:
    sc = load_scenario(EXP2)
    w = writer(tmp_path)
    fake = fake_api(tmp_path, [])
    s = Sampler(sc, sc.autoscaler("hpa"), w, fake, FakeProm(), native=True)
    s.sample(5.0)
    fake.store[("Deployment", "scalearena", "va-a100")]["spec"]["replicas"] = 3
    s.sample(10.0)
    assert [(d["variant"], d["current_replicas"], d["desired_replicas"]) for d in w.decisions] == [("va-a100", 2, 3)]


def test_non_native_autoscaler_runs_here_and_patches_scale(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from scalearena.controllers.registry import REGISTRY

    sc = load_scenario(EXP2)
    cfg = REGISTRY.default_config("static")
    fake = fake_api(tmp_path, [])
    s = Sampler(sc, cfg, writer(tmp_path), fake, FakeProm(), native=False)
    s.sample(5.0)
    s.decide(5.0, fast=False)
    assert s.writer.decisions, "the out-of-cluster policy's decisions are recorded"
    assert all(d["autoscaler"] == cfg.label for d in s.writer.decisions)


def test_loop_uses_virtual_time(tmp_path: Path) -> None:
    sc = load_scenario(EXP2, overrides=["duration_s=20", "drain_s=0", "metrics.sample_interval_s=5"])
    now = [100.0]
    s = Sampler(sc, sc.autoscaler("hpa"), writer(tmp_path), fake_api(tmp_path, []), FakeProm(), native=True,
                clock=lambda: now[0], sleep=lambda dt: now.__setitem__(0, now[0] + dt))
    s.t0 = 100.0
    s.loop(lambda: False, None)
    # samples at t = 0, 5, 10, 15, 20 (within float slack), two variants each
    assert len(s.rows) == 2 * 5
    assert now[0] - 100.0 == pytest.approx(20.0, abs=0.2)


def test_module_has_no_shell_of_its_own() -> None:
    assert not hasattr(kube_sampling, "Shell")


def test_an_hpa_objects_external_metric_is_refused_where_keda_serves_external_metrics() -> None:
    """sim-vs-real's hpa-object reads model_requests_queued through prometheus-adapter's externalRules; on a
    cluster where KEDA's metrics server holds v1beta1.external.metrics.k8s.io the real HPA controller never got
    it ("scaledObject name is not specified", every sync) while the simulator did (docs/fidelity.md)."""
    from scalearena.harness.kube.byo import refuse_external_behind_keda

    sc = load_scenario(ROOT / "workloads" / "scenarios" / "sim-vs-real.yaml")
    cfg = sc.autoscaler("hpa-object")
    refuse_external_behind_keda(cfg, "adapter")  # the adapter serves it: fine
    with pytest.raises(UserError, match="External metric model_requests_queued would never be served"):
        refuse_external_behind_keda(cfg, "keda")
    refuse_external_behind_keda(sc.autoscaler("hpa"), "keda")  # the preset's metrics are Pods metrics: fine


def test_teardown_waits_until_the_hpa_controller_forgot_the_runs_hpas(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from scalearena.harness.kube import backend as backend_module
    from scalearena.harness.kube.cluster import Kubectl
    from scalearena.harness.kube.kwok import KwokCluster

    calls: list[tuple[Any, ...]] = []
    monkeypatch.setattr(backend_module, "wait_forgotten", lambda *a: calls.append(a))
    shell = RecordingShell()
    kubectl = Kubectl(shell, "gpu-pool-admin")
    b = backend("cluster", shell, image_prefix="ghcr.io/me")
    # CLUSTER=cluster: no controller log to read; the default 15 s sync period
    b._teardown(None, kubectl, [], None, hpas=["va-sim"])
    assert calls == [(["va-sim"], "scalearena", 15.0, None, 0)]
    # a suite's kwok cluster at time scale 2: its controller's log, read from its size before the deletion,
    # and its sync period in wall seconds, 15 / 2
    kwok = KwokCluster(tmp_path, time_scale=2.0)
    kwok.reused = True
    kwok.logs.mkdir()
    (kwok.logs / "kube-controller-manager.log").write_text("0123456789")
    calls.clear()
    b._teardown(None, kubectl, [], kwok, hpas=["keda-hpa-va-sim"])
    assert calls == [(["keda-hpa-va-sim"], "scalearena", 7.5, tmp_path / "logs" / "kube-controller-manager.log", 10)]
    assert any("delete namespace scalearena" in c for c in shell.joined())
