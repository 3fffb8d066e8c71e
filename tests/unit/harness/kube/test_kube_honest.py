"""Issue 19: honest kube runs and one cluster per suite, against recording shells and a virtual clock."""
from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from scalearena.contracts.errors import RunFailed, UserError
from scalearena.contracts.records import RequestRecord, TimeseriesRecord
from scalearena.harness.config.scenario import load_scenario
from scalearena.harness.config.suite import load_suite
from scalearena.harness.kube.cluster import KindCluster, Kubectl, Shell, fake_gpu_demand
from scalearena.harness.kube.honesty import Readiness, check_run
from scalearena.reports.results import RunWriter

ROOT = Path(__file__).resolve().parents[4]
KIND_CONFIG = ROOT / "manifests/kind/cluster.yaml"
NODES = [("scalearena-worker", "NVIDIA-A100-SXM4-80GB"), ("scalearena-worker2", "NVIDIA-A100-SXM4-80GB"),
         ("scalearena-worker3", "NVIDIA-H100-80GB-HBM3"), ("scalearena-worker4", "NVIDIA-H200")]


class CannedShell:
    """Answers commands by the first matching substring; records them."""

    def __init__(self, answers: dict[str, tuple[int, str]]) -> None:
        self.answers, self.commands = answers, []
        self.inputs: list[str | None] = []

    def run(self, argv: list[str], *, input: str | None = None, timeout: float | None = None,
            check: bool = True) -> subprocess.CompletedProcess[str]:
        line = " ".join(argv)
        self.commands.append(line)
        self.inputs.append(input)
        rc, out = next((v for k, v in self.answers.items() if k in line), (0, ""))
        return subprocess.CompletedProcess(argv, rc, out, "")


def nodes_json(capacity: int | None = None) -> str:
    return json.dumps({"items": [{"metadata": {"name": n, "labels": {"scalearena.io/fake-gpus": "4",
                                                                    "nvidia.com/gpu.product": p}},
                                  "status": {"capacity": {"nvidia.com/gpu": str(capacity or 4)}}} for n, p in NODES]})


def record(status: str, http: int) -> RequestRecord:
    return RequestRecord(request_id=0, model="m", arrival_s=0, first_token_s=None, end_s=1, input_tokens=1,
                         output_tokens=0, status=status, http_status=http, variant=None, pod=None, ttft_ms=None,
                         itl_ms=None, e2e_ms=1000)


def sample(kv: float | None) -> TimeseriesRecord:
    return TimeseriesRecord(t_s=0, variant="v", model="m", spec_replicas=1, ready_replicas=1, pending_replicas=0,
                            terminating_replicas=0, kv_usage_mean=kv, kv_usage_max=kv, waiting=0, running=0,
                            gpu_util_mean=None, offered_rps=1, completed_rps=0, router_queue=0)


def tally(tmp_path: Path, requests: list[RequestRecord], samples: list[TimeseriesRecord]) -> Any:
    """What the run's writer counted of these rows (check_run reads the counts, not the rows)."""
    w = RunWriter(tmp_path / f"run-{next(_RUNS)}", {})
    w.add_requests(requests)
    for s in samples:
        w.add_timeseries(s)
    return w.tally()


_RUNS = itertools.count()


class Proc:
    def __init__(self, rc: int | None) -> None:
        self.returncode = rc

    def poll(self) -> int | None:
        return self.returncode

    def terminate(self) -> None:
        pass


# ---- after the run ----------------------------------------------------------------------------------
def test_a_run_with_no_successful_request_fails_with_the_status_counts(tmp_path: Path) -> None:
    failed = tally(tmp_path, [record("error", 500), record("error", 500), record("error", 503)], [sample(0.2)])
    with pytest.raises(RunFailed, match=r"0 of 3 requests succeeded \(HTTP status: count \{500: 2, 503: 1\}\)"):
        check_run(failed, [])
    check_run(tally(tmp_path, [record("error", 500), record("ok", 200)], [sample(0.2)]), [])  # one success counts


def test_a_dead_port_forward_fails_the_run_with_its_log_tail(tmp_path: Path) -> None:
    log = tmp_path / "pf-gateway.log"
    log.write_text("Forwarding from 127.0.0.1:4000 -> 8080\nE1201 lost connection to pod\n")
    with pytest.raises(RunFailed, match=r"port-forward to svc/gateway exited .*exit 1.*lost connection to pod"):
        check_run(tally(tmp_path, [record("ok", 200)], [sample(0.1)]), [("svc/gateway", Proc(1), log)])
    check_run(tally(tmp_path, [record("ok", 200)], [sample(0.1)]), [("svc/gateway", Proc(None), log)])


def test_metrics_that_never_arrived_fail_the_run(tmp_path: Path) -> None:
    with pytest.raises(RunFailed, match="no engine metrics arrived from Prometheus in 2 samples"):
        check_run(tally(tmp_path, [record("ok", 200)], [sample(None), sample(None)]), [])


# ---- before t0 ------------------------------------------------------------------------------------------
class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def now(self) -> float:
        return self.t

    def sleep(self, s: float) -> None:
        self.t += s


def targets(health: str) -> str:
    return json.dumps({"data": {"activeTargets": [{"labels": {"component": "variant"}, "health": health,
                                                   "lastError": "" if health == "up" else "connection refused"}]}})


def test_readiness_waits_for_targets_adapter_and_a_probe_request() -> None:
    clock = Clock()
    calls: list[str] = []

    def get(url: str, body: bytes | None) -> tuple[int, str]:
        calls.append(url)
        if url.endswith("/api/v1/targets?state=active"):
            return 200, targets("up" if clock.t >= 4 else "down")  # up after two 2 s polls
        return (200, "{}") if clock.t >= 6 else (500, "tokenizer render server unreachable")

    shell = CannedShell({"custom.metrics.k8s.io": (0, json.dumps({"items": [{"value": "0"}]}))})
    r = Readiness(Kubectl(shell, "kind-scalearena"), get=get, timeout_s=60, clock=clock.now, sleep=clock.sleep)
    r.wait("http://p", "http://g", "hpa", "llama3-70b")
    assert clock.t == 6.0  # targets up at 4 s, the probe answered 200 at 6 s
    assert any("vllm_num_requests_waiting" in c for c in shell.commands)
    assert calls[-1] == "http://g/v1/completions"


def test_readiness_gives_up_with_what_was_missing() -> None:
    clock = Clock()
    r = Readiness(Kubectl(CannedShell({}), None), get=lambda u, b: (200, targets("down")), timeout_s=10,
                  clock=clock.now, sleep=clock.sleep)
    with pytest.raises(RunFailed, match="not ready after 10 s: Prometheus scrapes a variant pod: 1 variant "
                                        "targets, none up \\(connection refused\\)"):
        r.wait("http://p", None, "wva", "m")


def test_keda_readiness_needs_every_scaledobject_ready() -> None:
    sos = {"items": [{"metadata": {"name": "va-a100"}, "status": {"conditions": [{"type": "Ready",
                                                                                 "status": "False"}]}}]}
    r = Readiness(Kubectl(CannedShell({"scaledobjects": (0, json.dumps(sos))}), None))
    assert r.scaledobjects() == "ScaledObjects not Ready: va-a100"


# ---- infrastructure failures are exit 1 with the command ------------------------------------------------
def test_a_failing_command_is_an_infrastructure_failure_with_the_whole_command() -> None:
    cmd = [sys.executable, "-c", "import sys; print('x'); sys.stderr.write('node not found\\n'); sys.exit(3)"]
    with pytest.raises(RunFailed) as e:
        Shell().run(cmd)
    assert str(e.value).startswith(f"`{sys.executable} -c import sys;")
    assert str(e.value).endswith("failed (exit 3): node not found")
    with pytest.raises(RunFailed, match="could not start"):
        Shell().run(["/nonexistent/kubectl", "version"])


# ---- one cluster per suite --------------------------------------------------------------------------------
def test_fake_gpus_are_sized_from_the_suites_largest_scenario() -> None:
    _, plans = load_suite(ROOT / "workloads/suites/paper.yaml")
    need = fake_gpu_demand([p.scenario for p in plans])
    # exp1: H100 max 30; exp2: A100 4, H100 6; physical: H100 10 -> H100 30, A100 4
    assert need == {"NVIDIA-H100-80GB-HBM3": 30, "NVIDIA-A100-SXM4-80GB": 4}
    hetero = fake_gpu_demand([load_scenario(ROOT / "workloads/scenarios/hetero-roofline.yaml")])
    assert hetero == {"NVIDIA-A100-SXM4-80GB": 8, "NVIDIA-H100-80GB-HBM3": 8, "NVIDIA-H200": 8}
    shell = CannedShell({"get nodes": (0, nodes_json())})
    kind = KindCluster(shell, KIND_CONFIG)
    kind.patch_fake_gpus({**need, **{"NVIDIA-H200": 8}})
    values = {c.split()[5]: json.loads(c.split(" -p ")[1])[0]["value"] for c in shell.commands if "patch node" in c}
    assert values == {"scalearena-worker": "4", "scalearena-worker2": "4", "scalearena-worker3": "30",
                      "scalearena-worker4": "8"}
    with pytest.raises(UserError, match="no worker with GPU product NVIDIA-L40S"):
        kind.patch_fake_gpus({"NVIDIA-L40S": 1})


def test_a_stale_cluster_is_refused_and_a_suite_cluster_is_reused() -> None:
    stale = CannedShell({"kind get clusters": (0, "scalearena\n"), "get configmap scalearena-cluster": (1, "")})
    with pytest.raises(UserError, match="already exists \\(not made by scalearena\\)"):
        KindCluster(stale, KIND_CONFIG).create({})
    mark = json.dumps({"data": {"owner": "run", "created": "2026-12-01T06:00:00Z"}})
    died = CannedShell({"kind get clusters": (0, "scalearena\n"), "get configmap scalearena-cluster": (0, mark)})
    with pytest.raises(UserError, match="made by a run at 2026-12-01T06:00:00Z"):
        KindCluster(died, KIND_CONFIG).create({})
    suite = json.dumps({"data": {"owner": "suite", "created": "2026-12-01T06:00:00Z"}})
    shell = CannedShell({"kind get clusters": (0, "scalearena\n"), "get configmap scalearena-cluster": (0, suite),
                         "get nodes": (0, nodes_json(capacity=6))})
    kind = KindCluster(shell, KIND_CONFIG)
    kind.create({"NVIDIA-H100-80GB-HBM3": 6})
    assert kind.reused and not any(c.startswith("kind create") for c in shell.commands)
    with pytest.raises(UserError, match="offers 6 fake NVIDIA-H100-80GB-HBM3 GPUs, this scenario needs 30"):
        kind.create({"NVIDIA-H100-80GB-HBM3": 30})


def test_a_run_on_a_suite_cluster_builds_nothing_and_deletes_only_its_namespace(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from scalearena.harness.kube.backend import KubeBackend
    from scalearena.harness.kube.sampling import Sampler
    from scalearena.harness.kube.wva.fake import FakeKubeAPI
    from scalearena.reports.results import RunWriter

    def interrupted(self: Any, *a: Any, **k: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(Sampler, "drive", interrupted)
    suite = json.dumps({"data": {"owner": "suite", "created": "2026-12-01T06:00:00Z"}})
    shell = CannedShell({"kind get clusters": (0, "scalearena\n"), "get configmap scalearena-cluster": (0, suite),
                         "get nodes": (0, nodes_json(capacity=8))})
    shell.popen = lambda argv, log: Proc(None)  # type: ignore[attr-defined]
    sc = load_scenario(ROOT / "workloads/scenarios/exp2-cost-aware.yaml")
    b = KubeBackend("kind", local_port=itertools.count(30000).__next__, shell=shell, which=lambda t: "/bin/" + t, api_factory=lambda c: FakeKubeAPI(),
                    metrics_factory=lambda u, v: None, readiness=lambda *a: None)
    w = RunWriter(tmp_path / "run", {"scenario": "exp2", "autoscaler": "hpa", "cluster": "kind", "seed": 0,
                                     "duration_s": 60, "slo": {"ttft_ms": 2000, "itl_ms": 100}, "variants": []})
    with pytest.raises(KeyboardInterrupt):
        b.run(sc, sc.autoscaler("hpa"), w)
    cmds = shell.commands
    assert not any(c.startswith(("docker build", "kind load", "kind create", "kind delete")) for c in cmds)
    deletes = [(c, i) for c, i in zip(cmds, shell.inputs, strict=True) if " delete " in c]
    by_file = "kubectl --context kind-scalearena delete --ignore-not-found --wait=false -f -"
    # issue 26's second blocker: the adapter's APIServices go BEFORE the namespace (once the adapter's pod is gone, a
    # namespace that still has to discover their API groups stays Terminating, kubernetes#75788), then the rest of
    # what was cluster-scoped (the adapter's ClusterRoles and bindings)
    assert [c for c, _ in deletes] == [by_file, "kubectl --context kind-scalearena delete namespace scalearena "
                                       "--ignore-not-found --wait=true --timeout=300s", by_file]
    first = [d["kind"] for d in yaml.safe_load_all(deletes[0][1] or "")]
    assert first == ["APIService", "APIService"]  # custom and external metrics
    assert "APIService" not in (deletes[2][1] or "")
    assert w.meta["kube_cluster_reused"] is True
