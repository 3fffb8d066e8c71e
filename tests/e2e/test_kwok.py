"""End-to-end on the real Kubernetes control plane (CLUSTER=kwok): etcd, kube-apiserver, kube-controller-manager,
kube-scheduler and KWOK built from source (`scalearena kwok tools`) and run here as processes.

Runs in `make test` wherever Go is installed (the first run builds the tools: see docs/kubernetes.md for the
time); skipped with the reason where it is not. `.ci/run` sets SCALEARENA_REQUIRE_KWOK=1, which turns that skip
into a failure, so CI cannot go green without running these.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from scalearena.contracts.errors import RunFailed

ROOT = Path(__file__).resolve().parents[2]
REQUIRED = os.environ.get("SCALEARENA_REQUIRE_KWOK") == "1"

pytestmark = [pytest.mark.e2e, pytest.mark.kwok]


def _need_go() -> None:
    from scalearena.harness.kube import tools

    try:
        tools.preflight()
    except Exception as e:  # noqa: BLE001 - the reason is the skip message
        if REQUIRED:
            pytest.fail(f"SCALEARENA_REQUIRE_KWOK=1 but the kwok tier cannot run: {e}")
        pytest.skip(f"CLUSTER=kwok needs the Go toolchain to build the control plane: {e}")


@pytest.fixture(scope="module")
def tools_built() -> None:
    from scalearena.harness.kube import tools

    _need_go()
    tools.ensure(progress=print)


def _ours(folder: Path) -> list[str]:
    """Processes whose command line names ``folder`` (every component's flags do)."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if str(folder) in cmd and state != "Z":
            out.append(f"{pid}: {cmd[:120]}")
    return out


@pytest.fixture(scope="module")
def cluster(tools_built: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    from scalearena.harness.kube.kwok import KwokCluster

    folder = tmp_path_factory.mktemp("kwok") / "cp"
    c = KwokCluster(folder, log=print)
    # sized as `kwok up --suite workloads/suites/kind.yaml` sizes it: {A100: 4, H100: 10} (exp2's va-h100 max 10)
    c.up({"NVIDIA-A100-SXM4-80GB": 4, "NVIDIA-H100-80GB-HBM3": 10}, owner="suite")
    yield c
    assert c.down() == []
    assert _ours(folder) == []


def test_nodes_have_fake_gpus_and_loopback_pod_cidrs(cluster) -> None:  # noqa: ANN001
    nodes = cluster.kubectl.get_json("nodes", "-l", "type=kwok")["items"]
    assert len(nodes) == 4  # kind's workers: 2 x A100, H100, H200
    gpus = {n["metadata"]["name"]: n["status"]["allocatable"]["nvidia.com/gpu"] for n in nodes}
    # A100: 4 asked over 2 nodes, each keeps its label's 4; H100: 10 on its one node, raised from 4; H200: 4
    assert gpus == {"kwok-worker-1": "4", "kwok-worker-2": "4", "kwok-worker-3": "10", "kwok-worker-4": "4"}
    assert all(n["spec"]["podCIDR"].startswith("127.") for n in nodes)
    ready = [c["status"] for n in nodes for c in n["status"]["conditions"] if c["type"] == "Ready"]
    assert ready == ["True"] * 4


def test_server_version_is_the_pinned_release(cluster) -> None:  # noqa: ANN001
    import yaml

    want = yaml.safe_load((ROOT / "tools/versions.yaml").read_text())["kubernetes"]
    v = json.loads(cluster.kubectl.run("version", "-o", "json").stdout)
    assert v["serverVersion"]["gitVersion"] == want
    assert v["clientVersion"]["gitVersion"] == want


@pytest.mark.parametrize("step", ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"])
def test_an_interrupted_start_leaves_no_process(tools_built: None, tmp_path: Path, step: str) -> None:
    """Issue 26 item 2: `down` leaves no process behind whatever failed: the start is interrupted right after each
    component's process starts, and no process naming the cluster's folder survives."""
    from scalearena.harness.kube.kwok import KwokCluster

    class Stop(Exception):
        pass

    def stop_at(name: str) -> None:
        if name == step:
            raise Stop(name)

    folder = tmp_path / "cp"
    c = KwokCluster(folder, on_start=stop_at)
    with pytest.raises(Stop):
        c.up()
    assert _ours(folder) == []
    assert not folder.exists()


def test_a_bad_flag_fails_the_start_with_the_component_and_its_log(tools_built: None, tmp_path: Path) -> None:
    from scalearena.harness.kube.kwok import KwokCluster
    from scalearena.harness.kube.tools import binary

    wrapper = tmp_path / "kube-scheduler"
    wrapper.write_text(f"#!/bin/sh\nexec {binary('kube-scheduler')} --no-such-flag \"$@\"\n")
    wrapper.chmod(0o755)
    c = KwokCluster(tmp_path / "cp", binary=lambda n: wrapper if n == "kube-scheduler" else binary(n))
    with pytest.raises(RunFailed) as e:
        c.up()
    assert "kube-scheduler exited" in str(e.value) and "unknown flag: --no-such-flag" in str(e.value)
    assert _ours(tmp_path / "cp") == []


# 60 s runs with a 15 s drain (exp2 drains 120 s)
SHORT = ("duration_s=60", "drain_s=15")


def _run(cluster, tmp_path: Path, autoscaler: str, scenario: str = "exp2-cost-aware.yaml",  # noqa: ANN001
         overrides: tuple[str, ...] = SHORT, time_scale: float = 1.0) -> dict:
    from scalearena.harness.config.scenario import load_scenario
    from scalearena.harness.kube.backend import KubeBackend
    from scalearena.reports.results import RunWriter

    sc = load_scenario(ROOT / "workloads/scenarios" / scenario, overrides=list(overrides))
    w = RunWriter(tmp_path / autoscaler, {"scenario": sc.name, "autoscaler": autoscaler, "cluster": "kwok",
                                          "seed": sc.seed, "duration_s": sc.duration_s, "slo": sc.slo.model_dump(),
                                          "variants": []})
    backend = KubeBackend("kwok", ready_timeout_s=240, time_scale=time_scale)
    backend._kwok_cluster = lambda: cluster  # type: ignore[method-assign]  # the module's control plane
    backend.run(sc, sc.autoscaler(autoscaler), w)
    s = w.finish()
    # every request accounted for exactly once, and some served for real
    assert s["requests_total"] == s["requests_ok"] + sum(s["failures"].values())
    assert s["requests_ok"] > 0
    # teardown left an empty cluster: no namespace, no APIService of ours (kubernetes#75788 would leave it
    # Terminating); the next run starts clean
    assert not cluster.kubectl.exists("namespace", "scalearena")
    return {**s, "meta": w.meta}


@contextlib.contextmanager
def _while_up(check: Callable[[object], None]) -> Iterator[None]:
    """Run ``check(sampler)`` once the load is over and before teardown (on kwok the stack's processes stop with
    the run, so what kind's e2e tests read afterwards is read here, while it still runs)."""
    from scalearena.harness.kube.sampling import Sampler

    finish = Sampler.finish

    def checked(self, *a, **k):  # noqa: ANN001, ANN002, ANN003, ANN202
        check(self)
        return finish(self, *a, **k)

    Sampler.finish = checked  # type: ignore[method-assign]
    try:
        yield
    finally:
        Sampler.finish = finish  # type: ignore[method-assign]


def test_short_hpa_run_on_the_real_hpa_controller(cluster, tmp_path: Path,  # noqa: ANN001
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # a relative run folder, as `--out results/kwok` gives (processes start elsewhere)
    s = _run(cluster, Path("runs"), "hpa")
    assert s["replicas"]["max"] >= 1


def test_wva_through_prometheus_adapter_then_keda_then_wva_through_keda(cluster, tmp_path: Path) -> None:  # noqa: ANN001
    """WVA's HPA actuation reads wva_desired_replicas as an External metric served by prometheus-adapter while no
    KEDA runs. Then a KEDA run installs KEDA for the cluster's lifetime (as on kind), and the next WVA run must not
    fight KEDA for v1beta1.external.metrics.k8s.io (issue 26's first blocker: the API server rejected the
    adapter's APIService, insecureSkipTLSVerify beside KEDA's injected caBundle): it actuates through KEDA."""
    assert not cluster.keda_running()
    seen: dict[str, object] = {}

    def wva_state(sampler) -> None:  # noqa: ANN001 - while the stack is up (tests/e2e/test_kind.py's wva checks)
        va = cluster.kubectl.get_json("-n", "scalearena", "variantautoscalings.llmd.ai", "va-a100")
        seen["conditions"] = {c["type"]: c["status"] for c in (va.get("status") or {}).get("conditions", [])}
        seen["external"] = cluster.kubectl.run(
            "get", "--raw", "/apis/external.metrics.k8s.io/v1beta1/namespaces/scalearena/wva_desired_replicas").stdout

    with _while_up(wva_state):
        _run(cluster, tmp_path / "a", "wva")  # served requests, left no namespace behind (asserted in _run)
    assert seen["conditions"].get("TargetResolved") == "True" and "MetricsAvailable" in seen["conditions"], seen
    assert "wva_desired_replicas" in str(seen["external"])  # served by prometheus-adapter to the real HPA
    _run(cluster, tmp_path, "keda")
    assert cluster.keda_running()
    svc = cluster.kubectl.get_json("apiservice", "v1beta1.external.metrics.k8s.io")["spec"]["service"]
    assert (svc["namespace"], svc["name"]) == ("keda", "keda-metrics-apiserver")
    _run(cluster, tmp_path / "b", "wva")
    svc = cluster.kubectl.get_json("apiservice", "v1beta1.external.metrics.k8s.io")["spec"]["service"]
    assert svc["namespace"] == "keda"  # left to KEDA


def test_llm_d_slo_recipe_runs_on_kube_state_metrics_and_its_rules(cluster, tmp_path: Path) -> None:  # noqa: ANN001
    """tests/e2e/test_kind.py's llmd-slo check on the real control plane: the recipe as its objects (two
    ScaledObjects, the recording rules as a Prometheus rule file, KEDA) on kube-state-metrics built from source."""
    seen: dict[str, list] = {}

    def series(sampler) -> None:  # noqa: ANN001
        seen["replicas"] = sampler.metrics.query('kube_deployment_status_replicas{namespace="scalearena"}')
        seen["rule"] = sampler.metrics.query('llmd_slo:saturation{model_name="llama3-70b"}')
        seen["scaledobjects"] = cluster.kubectl.get_json("-n", "scalearena", "scaledobjects")["items"]

    with _while_up(series):
        _run(cluster, tmp_path, "llmd-slo")
    assert {r["metric"]["deployment"] for r in seen["replicas"]} >= {"va-a100", "va-h100"}
    for r in seen["replicas"]:  # the simulator's labels (contracts/series.py), plus Prometheus' job and instance
        assert set(r["metric"]) - {"__name__", "job", "instance"} == {"namespace", "deployment"}, r["metric"]
    assert seen["rule"], "the recipe's rule file was loaded and evaluated"
    assert sorted(o["metadata"]["name"] for o in seen["scaledobjects"]) == ["llmd-slo-va-a100", "llmd-slo-va-h100"]


def test_a_time_scaled_run_keeps_scenario_time(tools_built: None, tmp_path: Path) -> None:
    """At time scale 2 every component runs twice as fast (kube/timescale.py): a 120 s scenario with a 15 s drain
    loads for 135 / 2 = 67.5 s of wall time (the run's wall time is measured in docs/kubernetes.md, not asserted
    here), while the results stay in scenario seconds. (2 is the largest scale
    for exp2: llm-d-inference-sim sleeps whole milliseconds and exp2's ITL is 2 ms.) The check that the engines
    were scaled too: the sim's 200 ms TTFT runs as 100 ms and Locust records it times 2, so the fastest request's
    TTFT is 200 ms plus twice the stack's overhead (a few ms at scale 1); unscaled it would be 2 x 200 = 400 ms."""
    import pyarrow.parquet as pq

    from scalearena.harness.kube.kwok import KwokCluster

    c = KwokCluster(tmp_path / "cp", log=print, time_scale=2)
    c.up({"NVIDIA-A100-SXM4-80GB": 4, "NVIDIA-H100-80GB-HBM3": 10}, owner="suite")
    try:
        s = _run(c, tmp_path, "hpa", overrides=("duration_s=120", "drain_s=15"), time_scale=2)
    finally:
        assert c.down() == []
    assert s["meta"]["time_scale"] == 2
    # exp2's hpa at 2: upstream's 15 s policy periods -> 7.5 s -> 8 s wall (16 s of scenario time), 3 per HPA,
    # one HPA per variant; 300 s stabilisation -> 150 s and the 15 s scrape -> 7.5 s are exact
    notes = s["meta"]["kube_time_scale_rounding"]
    assert len(notes) == 6 and all("15 s is 8 s wall, 16 s of scenario time" in n for n in notes), notes
    ttft = pq.read_table(tmp_path / "hpa" / "requests.parquet").to_pandas().query("status == 'ok'")["ttft_ms"]
    assert 200 <= ttft.min() < 300, ttft.describe()


def test_kwok_tools_reports_missing_go(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PATH"} | {"PATH": str(tmp_path),
                                                                 "SCALEARENA_TOOLS_DIR": str(tmp_path / "bin")}
    py = shutil.which("python3") or "python3"
    r = subprocess.run([str(ROOT / ".venv/bin/scalearena"), "kwok", "tools"], env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 2, (py, r.stdout, r.stderr)
    assert "go" in r.stderr and "Traceback" not in r.stderr


def test_sim_vs_real_short_version_meets_the_targets(tools_built: None, tmp_path: Path) -> None:
    """The CI's short version of benchmarks/sim_vs_real.py (docs/fidelity.md): hpa (the real HPA controller on
    prometheus-adapter), seed 1, the sim-vs-real staircase on the simulator and on kwok at time scale 2
    (220 s of scenario: ~110 s of wall time plus set-up). One seed is noise-bound: three kwok runs of this same
    seed measured replica-seconds +7.9 %, +10.8 % and -14.7 % against the simulator (the real HPA's 15 s sync
    phase; one run also stopped at 5 replicas), so the targets (10 %, same maxima, every move paired) are
    judged by the full benchmark over three seeds, and this gates what one seed can show: both sides scale up,
    the maxima within one replica, replica-seconds within 25 %, the gateway queue in the kube timeseries."""
    import sys

    import pyarrow.parquet as pq

    out = tmp_path / "out"
    env = {**os.environ, "SCALEARENA_KWOK_DIR": str(tmp_path / "kwok")}  # its own cluster, beside the module's
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "sim_vs_real.py"), "--autoscalers", "hpa",
                        "--seeds", "1", "--time-scale", "2", "--out", str(out), "--no-diagnostic"],
                       env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    row = json.loads((out / "sim_vs_real.json").read_text())["rows"][0]
    (sim,), (real,) = row["sim"], row["real"]
    assert row["sim_steps"] >= 2 and row["real_steps"] >= 2, r.stdout[-3000:]  # both scaled up on the staircase
    assert abs(sim["max_ready"] - real["max_ready"]) <= 1, r.stdout[-3000:]
    assert abs(real["replica_s"] - sim["replica_s"]) <= 0.25 * sim["replica_s"], r.stdout[-3000:]
    # the gateway's flow-control queue reaches a kube run's timeseries (it holds requests at 6 req/s)
    ts = pq.read_table(out / "kwok-ts2" / "sim-vs-real" / "hpa" / "seed-1" / "timeseries.parquet").to_pydict()
    assert max(q for q in ts["router_queue"] if q is not None) > 0
