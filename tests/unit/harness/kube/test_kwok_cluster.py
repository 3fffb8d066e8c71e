"""CLUSTER=kwok without the binaries: the node plan, the flags' inputs, certificates, process records and `down`,
the objects a kwok run applies and how a rendered container becomes a local process (kube/kwok.py, kwok_infra.py,
pki.py). The control plane itself runs in tests/e2e/test_kwok.py."""
from __future__ import annotations

import base64
import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography import x509

from scalearena.contracts.errors import RunFailed, UserError
from scalearena.harness.kube import kwok, kwok_infra, pki
from scalearena.harness.local.supervisor import start_ticks

ROOT = Path(__file__).resolve().parents[4]


def test_nodes_mirror_kind_workers_with_loopback_pod_cidrs() -> None:
    nodes = kwok.worker_nodes()
    # manifests/kind/cluster.yaml: 2 x A100, 1 x H100, 1 x H200 workers, 4 fake GPUs each
    assert [n["metadata"]["labels"]["nvidia.com/gpu.product"] for n in nodes] == [
        "NVIDIA-A100-SXM4-80GB", "NVIDIA-A100-SXM4-80GB", "NVIDIA-H100-80GB-HBM3", "NVIDIA-H200"]
    assert [n["spec"]["podCIDR"] for n in nodes] == ["127.1.0.0/16", "127.2.0.0/16", "127.3.0.0/16", "127.4.0.0/16"]
    assert all(n["status"]["capacity"]["nvidia.com/gpu"] == "4" for n in nodes)
    assert all(n["metadata"]["annotations"]["kwok.x-k8s.io/node"] == "fake" for n in nodes)


def test_nodes_raise_fake_gpus_to_the_demand() -> None:
    # 11 A100 GPUs over the two A100 nodes: ceil(11 / 2) = 6 each; H100 needs 3 < its label's 4 -> stays 4
    nodes = kwok.worker_nodes({"NVIDIA-A100-SXM4-80GB": 11, "NVIDIA-H100-80GB-HBM3": 3})
    assert [n["status"]["capacity"]["nvidia.com/gpu"] for n in nodes] == ["6", "6", "4", "4"]
    with pytest.raises(UserError, match="no kwok node has GPU product B200"):
        kwok.worker_nodes({"B200": 1})


def test_feature_gates_are_kinds() -> None:
    assert kwok.feature_gates() == "HPAConfigurableTolerance=true,HPAScaleToZero=true"


def test_certificates_chain_to_their_ca(tmp_path: Path) -> None:
    certs = pki.control_plane(tmp_path)
    ca = x509.load_pem_x509_certificate(certs.ca.cert.read_bytes())
    api = x509.load_pem_x509_certificate(certs.apiserver.cert.read_bytes())
    api.verify_directly_issued_by(ca)
    sans = api.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "kubernetes.default.svc" in sans.get_values_for_type(x509.DNSName)
    assert [str(ip) for ip in sans.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    admin = x509.load_pem_x509_certificate(certs.admin.cert.read_bytes())
    assert admin.subject.get_attributes_for_oid(x509.NameOID.ORGANIZATION_NAME)[0].value == "system:masters"
    fp = x509.load_pem_x509_certificate(certs.front_proxy_ca.cert.read_bytes())
    x509.load_pem_x509_certificate(certs.front_proxy_client.cert.read_bytes()).verify_directly_issued_by(fp)
    assert oct(certs.admin.key.stat().st_mode & 0o777) == "0o600"


def _sleeper() -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)


def test_down_stops_recorded_processes_and_spares_a_reused_pid(tmp_path: Path) -> None:
    cluster = kwok.KwokCluster(tmp_path / "c", binary=lambda n: Path("/nonexistent") / n)
    cluster.folder.mkdir()
    a, b = _sleeper(), _sleeper()
    state = kwok.State(owner="suite", created="now", ports={}, feature_gates="", hpa_sync_s=15, time_scale=1)
    state.procs = [kwok.Proc("etcd", a.pid, ["etcd"], "", start_ticks(a.pid) or 0),
                   # b's record has another start time: a pid the kernel gave to someone else since
                   kwok.Proc("kwok", b.pid, ["kwok"], "", (start_ticks(b.pid) or 0) + 1)]
    state.save(cluster.state_path)
    cluster = kwok.KwokCluster(tmp_path / "c", binary=lambda n: Path("/nonexistent") / n)
    assert not cluster.running()  # one record is not ours any more
    try:
        assert cluster.down(grace_s=5) == []
        a.wait(timeout=5)
        assert a.returncode == -signal.SIGTERM
        assert b.poll() is None  # not ours: left alone
        assert not cluster.folder.exists()
    finally:
        b.kill()
        b.wait()


def test_a_suite_cluster_at_another_time_scale_is_refused(tmp_path: Path) -> None:
    a = _sleeper()
    try:
        cluster = kwok.KwokCluster(tmp_path / "c", binary=lambda n: Path(n))
        cluster.folder.mkdir()
        state = kwok.State(owner="suite", created="now", ports={}, feature_gates="", hpa_sync_s=15, time_scale=1)
        state.procs = [kwok.Proc("etcd", a.pid, ["etcd"], "", start_ticks(a.pid) or 0)]
        state.save(cluster.state_path)
        fast = kwok.KwokCluster(tmp_path / "c", binary=lambda n: Path(n), time_scale=5)
        with pytest.raises(UserError, match="runs at time scale 1, this run asks for 5"):
            fast.up(owner="run")
        # the controller-manager's durations at scale 4: 15 s sync -> 3.75 s, 300 s stabilisation -> 75 s
        assert kwok.KwokCluster(tmp_path / "d", time_scale=4)._seconds(15) == "3.75s"
        assert kwok.KwokCluster(tmp_path / "d", time_scale=4)._seconds(300) == "75s"
    finally:
        a.kill()
        a.wait()


def test_a_component_that_exits_is_reported_with_its_command_and_log(tmp_path: Path) -> None:
    cluster = kwok.KwokCluster(tmp_path / "c", binary=lambda n: Path(n))
    cluster.folder.mkdir()
    cluster.logs.mkdir()
    cluster.state = kwok.State(owner="run", created="now", ports={}, feature_gates="", hpa_sync_s=15, time_scale=1)
    p = cluster._start("etcd", [sys.executable, "-c", "print('flag provided but not defined: -bogus'); exit(2)"])
    with pytest.raises(RunFailed) as e:
        cluster._wait("etcd", p, lambda: False, 30)
    assert "kwok: etcd exited" in str(e.value) and "flag provided but not defined: -bogus" in str(e.value)
    assert cluster.down() == []


def test_hosts_block_replaces_only_its_own_lines(tmp_path: Path) -> None:
    hosts = tmp_path / "hosts"
    hosts.write_text("127.0.0.1 localhost\n::1 ip6-localhost\n")
    kwok_infra.write_hosts({("scalearena", "prometheus"): "127.1.0.3"}, hosts)
    kwok_infra.write_hosts({("scalearena", "prometheus"): "127.2.0.9", ("keda", "x"): "127.3.0.1"}, hosts)
    assert hosts.read_text() == ("127.0.0.1 localhost\n::1 ip6-localhost\n"
                                 "# BEGIN scalearena kwok services\n"
                                 "127.3.0.1 x.keda.svc x.keda.svc.cluster.local\n"
                                 "127.2.0.9 prometheus.scalearena.svc prometheus.scalearena.svc.cluster.local\n"
                                 "# END scalearena kwok services\n")
    kwok_infra.write_hosts({}, hosts)
    assert hosts.read_text() == "127.0.0.1 localhost\n::1 ip6-localhost\n"


def _objs() -> list[dict]:
    from scalearena.harness.config.scenario import load_scenario
    from scalearena.harness.kube.backend import KubeBackend

    sc = load_scenario(ROOT / "workloads/scenarios/exp2-cost-aware.yaml")
    return KubeBackend("kwok").plan(sc, sc.autoscaler("wva"))


def test_apiservices_point_at_local_processes_with_the_cluster_ca() -> None:
    objs = _objs()
    out = kwok_infra.local_objects(objs, b"PEM")
    svcs = {o["metadata"]["name"]: o for o in out if o["kind"] == "Service"}
    assert svcs["prometheus-adapter"]["spec"] == {
        "type": "ExternalName", "externalName": "prometheus-adapter.scalearena.svc.cluster.local",
        "ports": [{"name": "https", "port": 6443}]}  # the adapter's containerPort (its --secure-port)
    for a in (o for o in out if o["kind"] == "APIService"):
        assert a["spec"]["service"]["port"] == 6443
        assert a["spec"]["caBundle"] == base64.b64encode(b"PEM").decode()
        assert "insecureSkipTLSVerify" not in a["spec"]
    assert svcs["prometheus"]["spec"].get("type", "ClusterIP") == "ClusterIP"  # others as rendered


def test_a_rendered_container_becomes_a_local_argv(tmp_path: Path) -> None:
    objs = _objs()
    gw = next(o for o in objs if o["kind"] == "Deployment" and o["metadata"]["name"] == "gateway")
    c = kwok_infra.prepare(gw, objs, tmp_path, lambda image, cmd: [sys.executable if a == "python" else a for a in cmd],
                           index=1)  # the endpoint-sync sidecar
    assert c.argv[:3] == [sys.executable, "-m", "scalearena.harness.kube.wva.endpoints"]
    assert "--namespace=scalearena" in c.argv  # $(POD_NAMESPACE) from the downward API
    token_arg = next(a for a in c.argv if a.startswith("--admin-token-file="))
    token = Path(token_arg.split("=", 1)[1])
    assert token.parent.parent == tmp_path and token.read_text()  # the Secret volume, written here
    router = kwok_infra.prepare(gw, objs, tmp_path, lambda image, cmd: list(cmd), index=0)
    spec = next(a for a in router.argv if a.startswith("--router-spec="))
    # $(ROUTER_SPEC) from the ConfigMap in envFrom: the scenario's router section (exp2: saturation admission)
    assert json.loads(spec.split("=", 1)[1])["admission"]["kind"] == "saturation"
    assert router.ports == {"http": 8080}


def test_images_map_to_programs(tmp_path: Path) -> None:
    services = kwok_infra.LocalServices([], tmp_path, kubectl=None, server="", ca=tmp_path,  # type: ignore[arg-type]
                                        binary=lambda n: Path("/bin") / n)
    assert services.program("scalearena/wva-controller:dev", []) == [sys.executable, "-m", "scalearena.harness.kube.wva"]
    assert services.program("quay.io/prometheus/prometheus:v2.53.4", []) == ["/bin/prometheus"]  # built: Debian's has no k8s SD
    assert services.program("registry.k8s.io/prometheus-adapter/prometheus-adapter:v0.12.0", []) == [
        "/bin/prometheus-adapter"]
    with pytest.raises(RunFailed, match="no local program for image docker.io/envoyproxy/envoy"):
        services.program("docker.io/envoyproxy/envoy:distroless-v1.33.2", [])



def test_a_run_keeps_its_share_of_each_control_plane_log(tmp_path: Path) -> None:
    c = kwok.KwokCluster(tmp_path / "cluster")
    c.logs.mkdir(parents=True)
    (c.logs / "kube-controller-manager.log").write_text("before the run\n")  # 15 bytes
    marks = c.log_marks()
    assert marks == {"kube-controller-manager.log": 15}
    with open(c.logs / "kube-controller-manager.log", "a") as f:
        f.write("sync 1\nsync 2\n")
    (c.logs / "keda-operator.log").write_text("started during the run\n")  # a component the run started: whole
    (c.logs / "etcd.log").write_text("")  # nothing logged: no file
    run = tmp_path / "run" / "control-plane"
    c.copy_logs(marks, run)
    assert (run / "kube-controller-manager.log").read_text() == "sync 1\nsync 2\n"
    assert (run / "keda-operator.log").read_text() == "started during the run\n"
    assert sorted(p.name for p in run.iterdir()) == ["keda-operator.log", "kube-controller-manager.log"]
    # at most the last `limit` bytes of a file: "sync 2\n" is the last 7 of the 14 new bytes
    c.copy_logs(marks, tmp_path / "run2", limit=7)
    assert (tmp_path / "run2" / "kube-controller-manager.log").read_text() == "sync 2\n"
