"""`scalearena render`, `scalearena doctor`, `scalearena kind`: offline, against canned command output."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from scalearena.harness.cli.main import main
from scalearena.harness.kube.doctor import Doctor, report

ROOT = Path(__file__).resolve().parents[4]
EXP2 = ROOT / "workloads/scenarios/exp2-cost-aware.yaml"


def test_render_writes_one_file_per_object_and_touches_no_cluster(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    def no_commands(*a: object, **k: object) -> None:
        raise AssertionError("render ran a command")

    monkeypatch.setattr(subprocess, "run", no_commands)
    monkeypatch.setattr(subprocess, "Popen", no_commands)
    r = CliRunner().invoke(main, ["render", str(EXP2), "--cluster", "kind", "--autoscaler", "hpa",
                                  "--autoscaler", "wva", "--out", str(tmp_path)])
    assert r.exit_code == 0, r.output
    for label in ("hpa", "wva"):
        files = sorted((tmp_path / label).glob("*.yaml"))
        docs = [list(yaml.safe_load_all(f.read_text())) for f in files]
        assert all(len(d) == 1 for d in docs)  # one object per file
        kinds = [d[0]["kind"] for d in docs]
        assert kinds.count("HorizontalPodAutoscaler") == 2  # one per exp2 variant (wva: the actuation HPAs)
        assert f"{label}: {len(files)} objects" in r.output
    assert not any((tmp_path / "hpa").glob("*variantautoscaling*"))
    assert len(list((tmp_path / "wva").glob("*-variantautoscaling-scalearena-*"))) == 2  # one per variant


def test_render_writes_the_admin_token_readable_by_its_owner_only(tmp_path: Path) -> None:
    """Issue 31 item 11: the live admin token was written 0644; a umask of 0 must not widen it either."""
    import os

    old = os.umask(0)
    try:
        r = CliRunner().invoke(main, ["render", str(EXP2), "--cluster", "kind", "--autoscaler", "hpa",
                                      "--out", str(tmp_path)])
    finally:
        os.umask(old)
    assert r.exit_code == 0, r.output
    (secret,) = (tmp_path / "hpa").glob("*-secret-scalearena-gateway-admin.yaml")
    assert secret.stat().st_mode & 0o777 == 0o600
    assert len(yaml.safe_load(secret.read_text())["stringData"]["token"]) >= 32
    others = [f for f in (tmp_path / "hpa").glob("*.yaml") if f != secret]
    assert others and all(f.stat().st_mode & 0o077 == 0o066 for f in others)  # not secrets: the umask decides


def test_render_refuses_bad_input_with_one_line(tmp_path: Path) -> None:
    r = CliRunner().invoke(main, ["render", str(EXP2), "--autoscaler", "wva", "--set",
                                  "autoscalers=[{kind: wva, headroom: {enabled: true}}]", "--out", str(tmp_path)])
    assert r.exit_code == 2
    assert "autoscalers[wva].headroom" in r.output and "Traceback" not in r.output


class Canned:
    def __init__(self, answers: dict[str, tuple[int, str]]) -> None:
        self.answers = answers

    def run(self, argv: list[str], *, check: bool = True, timeout: float | None = None,
            input: str | None = None) -> subprocess.CompletedProcess[str]:
        line = " ".join(argv)
        rc, out = next((v for k, v in self.answers.items() if line.startswith(k)), (127, "unknown"))
        return subprocess.CompletedProcess(argv, rc, out, "")


def proc(tmp_path: Path, watches: int, instances: int) -> Path:
    d = tmp_path / "sys/fs/inotify"
    d.mkdir(parents=True)
    (d / "max_user_watches").write_text(f"{watches}\n")
    (d / "max_user_instances").write_text(f"{instances}\n")
    return tmp_path


def test_doctor_on_a_ready_kind_machine_passes_with_the_snapshotter_warning(tmp_path: Path) -> None:
    shell = Canned({
        "docker version": (0, "27.3.1\n"),
        "docker info": (0, '[["driver-type","io.containerd.snapshotter.v1"]]'),
        "kind version": (0, "kind v0.29.0 go1.24.2 linux/amd64\n"),
        "kind get clusters": (0, "No kind clusters found.\n"),
        "kubectl version --client": (0, json.dumps({"clientVersion": {"minor": "33"}})),
    })
    checks = Doctor(shell, lambda t: None if t == "helm" else f"/usr/bin/{t}",
                    proc(tmp_path, 524288, 512)).checks("kind")
    lines, code = report(checks)
    assert code == 0
    assert [c.status for c in checks] == ["OK", "WARN", "OK", "OK", "OK", "OK", "OK"]
    assert "kind#3795" in lines[1]


def test_doctor_names_what_to_fix_and_exits_1(tmp_path: Path) -> None:
    shell = Canned({
        "docker version": (1, "Cannot connect to the Docker daemon"),
        "kubectl version --client": (0, json.dumps({"clientVersion": {"minor": "30+"}})),
        "kubectl config current-context": (0, "prod\n"),
        "kubectl version -o json": (0, json.dumps({"serverVersion": {"gitVersion": "v1.31.4"}})),
        "kubectl auth can-i create customresourcedefinitions": (1, "no\n"),
        "kubectl auth can-i": (0, "yes\n"),
    })
    doctor = Doctor(shell, lambda t: None if t in ("kind", "helm") else f"/usr/bin/{t}", proc(tmp_path, 8192, 128))
    kind_lines, kind_code = report(doctor.checks("kind"))
    assert kind_code == 1
    text = "\n".join(kind_lines)
    assert "FAIL  docker: engine not reachable" in text and "FAIL  kind: not on PATH" in text
    assert "FAIL  kubectl: client v1.30" in text  # 33 - 30 > 1 minor: outside the skew policy
    assert "sudo sysctl fs.inotify.max_user_watches=524288" in text
    cluster = doctor.checks("cluster")
    failed = [c.name for c in cluster if c.status == "FAIL"]
    assert failed == ["kubectl", "RBAC create customresourcedefinitions"]
    assert next(c for c in cluster if c.name == "cluster").detail == "context prod, server v1.31.4"


# ---- pins, Makefile and the nightly job -------------------------------------------------------------------
KEDA_K8S = {"2.17": (30, 32), "2.18": (31, 33), "2.19": (32, 34), "2.20": (33, 35)}  # keda.sh compatibility table


def test_pins_are_current_for_the_kind_node_image() -> None:
    from scalearena.harness.kube.cluster import KEDA_VERSION
    from scalearena.harness.kube.doctor import KUBE_MINOR

    lo, hi = KEDA_K8S[".".join(KEDA_VERSION.split(".")[:2])]
    assert lo <= KUBE_MINOR <= hi  # KEDA 2.17.2 was outside its window for v1.33
    cluster = yaml.safe_load((ROOT / "manifests/kind/cluster.yaml").read_text())
    # kind v0.29.0's release notes publish this digest for the v1.33.1 node image
    assert {n["image"] for n in cluster["nodes"]} == {
        "kindest/node:v1.33.1@sha256:050072256b9a903bd914c0b2866828150cb229cea0efe5892e2b644d5dd3b34f"}


def test_refresh_pins_fails_clearly_without_its_tools(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "grep", "sed", "sort", "tail", "tr", "dirname", "python3", "cat"):
        src = subprocess.run(["bash", "-c", f"command -v {tool}"], capture_output=True, text=True).stdout.strip()
        if src:
            (bin_dir / tool).symlink_to(src)
    r = subprocess.run(["bash", str(ROOT / "scripts/refresh-pins.sh")], capture_output=True, text=True,
                       env={"PATH": str(bin_dir)}, timeout=60)
    assert r.returncode == 1
    assert "needs `crane` or `docker buildx imagetools`" in r.stderr


def test_make_bench_kind_runs_the_short_suite_on_one_cluster() -> None:
    r = subprocess.run(["make", "-n", "-W", ".venv/.installed", "bench", "CLUSTER=kind"], cwd=ROOT,
                       capture_output=True, text=True, timeout=60)
    lines = [x for x in r.stdout.splitlines() if "bin/scalearena " in x]
    assert lines[0] == ".venv/bin/scalearena kind up --suite workloads/suites/kind.yaml"
    # the suite, then `kind down` whatever the suite's exit code, which is kept
    assert "scalearena suite workloads/suites/kind.yaml --cluster kind --out results/kind" in lines[1]
    assert "rc=$?; .venv/bin/scalearena kind down; exit $rc" in " ".join(lines[1:])


def test_nightly_kind_job_runs_the_short_suite_then_the_gate_within_an_hour() -> None:
    wf = yaml.safe_load((ROOT / ".github/workflows/ci.yml").read_text())
    job = wf["jobs"]["bench-kind"]
    assert job["timeout-minutes"] <= 60
    runs = [str(s.get("run", "")) for s in job["steps"]]
    bench = next(i for i, r in enumerate(runs) if "make bench CLUSTER=kind" in r)
    gate = next(i for i, r in enumerate(runs) if "compare baselines/kind" in r)
    assert bench < gate and "SUITE=" not in runs[bench]  # the Makefile's kind default: workloads/suites/kind.yaml
    assert "tests/e2e" not in " ".join(runs)  # e2e is its own job, not on the suite's clock


def test_kind_up_sizes_for_the_suite_builds_once_and_installs_keda(tmp_path: Path) -> None:
    from scalearena.harness.kube.cli import suite_cluster_up

    nodes = json.dumps({"items": [{"metadata": {"name": n, "labels": {"scalearena.io/fake-gpus": "4",
                                                                     "nvidia.com/gpu.product": p}}}
                                  for n, p in (("scalearena-worker", "NVIDIA-A100-SXM4-80GB"),
                                               ("scalearena-worker2", "NVIDIA-A100-SXM4-80GB"),
                                               ("scalearena-worker3", "NVIDIA-H100-80GB-HBM3"),
                                               ("scalearena-worker4", "NVIDIA-H200"))]})

    class Rec(Canned):
        def __init__(self) -> None:
            super().__init__({"kind get clusters": (0, ""), "kubectl --context kind-scalearena get nodes": (0, nodes)})
            self.lines: list[str] = []

        def run(self, argv: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
            self.lines.append(" ".join(argv))
            r = super().run(argv)
            return subprocess.CompletedProcess(argv, 0 if r.returncode == 127 else r.returncode, r.stdout, "")

    shell = Rec()
    n, name = suite_cluster_up(str(ROOT / "workloads/suites/kind.yaml"), shell, lambda t: f"/usr/bin/{t}")
    assert (n, name) == (4, "scalearena")  # exp2 x (wva, hpa, keda) + physical-validation x wva
    lines = shell.lines
    assert sum(x.startswith("kind create cluster") for x in lines) == 1
    assert sum(x.startswith("docker build") for x in lines) == sum(x.startswith("kind load") for x in lines) == 3
    # kind suite: exp2 needs 4 A100 + 6 H100, physical-validation 10 H100 -> the H100 worker gets 10
    h100 = next(x for x in lines if "patch node scalearena-worker3" in x)
    assert json.loads(h100.split(" -p ")[1])[0]["value"] == "10"
    assert any("create configmap scalearena-cluster --from-literal=owner=suite" in x for x in lines)
    assert any("keda-2.18.0.yaml" in x for x in lines)


def test_doctor_for_kwok_names_go_and_the_tools_to_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCALEARENA_TOOLS_DIR", str(tmp_path / "bin"))  # nothing built
    monkeypatch.setenv("SCALEARENA_KWOK_DIR", str(tmp_path / "kwok"))  # no cluster running
    from scalearena.harness.kube import doctor, relay

    monkeypatch.setattr(relay, "netns_supported", lambda: False)  # not root: a warning, with what follows
    monkeypatch.setattr(doctor.Doctor, "_loopback", staticmethod(lambda: doctor.Check("loopback", "OK", "bindable")))
    checks = Doctor(Canned({}), lambda t: None, proc(tmp_path, 8192, 128)).checks("kwok")
    lines, code = report(checks)
    assert code == 1
    by = {c.name: c for c in checks}
    assert by["go"].status == "FAIL" and "Go 1.25.7 or newer" in by["go"].fix
    assert "Go module proxy" not in by  # nothing to ask without go
    # every binary of tools/versions.yaml missing: 12 (4 of kubernetes, 2 of KEDA, 6 more), a warning naming them
    assert by["built tools"].status == "WARN" and by["built tools"].detail.startswith("0 of 12 binaries")
    assert "make kwok-tools" in by["built tools"].fix
    assert by["network namespaces"].status == "WARN" and "free port" in by["network namespaces"].fix


def test_kind_down_without_kind_is_one_line_and_exit_2(monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None)  # nothing on PATH
    r = CliRunner().invoke(main, ["kind", "down"])
    assert r.exit_code == 2, r.output
    assert "needs kind on PATH" in r.output and "internal error" not in r.output


def test_cluster_without_an_image_registry_refuses_before_making_the_out_folder(tmp_path: Path,
                                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    monkeypatch.delenv("SCALEARENA_IMAGE_PREFIX", raising=False)
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: f"/usr/bin/{name}")  # kubectl "installed"
    r = CliRunner().invoke(main, ["run", str(EXP2), "--cluster", "cluster", "--autoscaler", "hpa",
                                  "--out", str(tmp_path / "out")])
    assert r.exit_code == 2, r.output
    assert "SCALEARENA_IMAGE_PREFIX" in r.output
    assert not (tmp_path / "out").exists()  # nothing written for a run that never started



def test_a_kwok_run_whose_objects_cannot_render_refuses_before_making_the_out_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from scalearena.harness.kube import tools

    monkeypatch.setattr(tools, "preflight", lambda *a, **k: None)  # as if Go and the tools were here
    # exp2's sim ITL 2 ms at time scale 5 would be 0.4 ms, which llm-d-inference-sim runs as 0 (whole-ms sleeps)
    r = CliRunner().invoke(main, ["run", str(EXP2), "--cluster", "kwok", "--autoscaler", "hpa",
                                  "--backend-option", "time_scale=5", "--out", str(tmp_path / "out")])
    assert r.exit_code == 2, r.output
    assert "--inter-token-latency=2ms would be 0.4 ms" in r.output
    assert not (tmp_path / "out").exists()
