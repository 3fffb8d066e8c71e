"""harness/kube/tools.py: the pinned upstream tools CLUSTER=kwok builds from source.

No test runs go: a fake runner stands in for it (and records what would have run), so these check the table,
the cache naming, reuse, the error classification and the pins the kind path shares with tools/versions.yaml.
"""
from __future__ import annotations

import re
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

from scalearena.contracts.errors import RunFailed, UserError
from scalearena.harness.kube import tools
from scalearena.harness.kube.cluster import KEDA_VERSION

ROOT = Path(__file__).resolve().parents[4]
PINNED = {"kubernetes": "v1.33.1", "etcd": "v3.5.21", "kwok": "v0.7.0", "keda": "v2.18.0",
          "prometheus-adapter": "v0.12.0", "llm-d-inference-sim": "v0.10.2", "kube-state-metrics": "v2.15.0",
          "prometheus": "v2.53.4"}
ALL_BINARIES = ["kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl", "etcd", "kwok",
                "keda-operator", "keda-metrics-apiserver", "prometheus-adapter", "llm-d-inference-sim",
                "kube-state-metrics", "prometheus"]


class FakeGo:
    """Answers `go env GOVERSION`; for `go build -o DIR/ PKG...` writes each package's file (or fails)."""

    def __init__(self, version: str = "go1.26.8", rc: int = 0, stderr: str = "") -> None:
        self.version, self.rc, self.stderr = version, rc, stderr
        self.calls: list[tuple[list[str], Path, dict[str, str]]] = []

    def __call__(self, argv: Sequence[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        argv = list(argv)
        self.calls.append((argv, cwd, env))
        if argv[1:] == ["env", "GOVERSION"]:
            return subprocess.CompletedProcess(argv, 0, self.version + "\n", "")
        assert argv[1] == "build"
        if self.rc == 0:
            out = Path(argv[argv.index("-o") + 1])
            for pkg in argv[argv.index("-o") + 2:]:
                (out / tools.exec_name(pkg)).write_text(f"binary of {pkg}")
        return subprocess.CompletedProcess(argv, self.rc, "", self.stderr)

    @property
    def builds(self) -> list[tuple[list[str], Path, dict[str, str]]]:
        return [c for c in self.calls if c[0][1] == "build"]


def no_go(argv: Sequence[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    raise AssertionError(f"go must not run: {argv}")


def go_on_path(name: str) -> str | None:
    return "/usr/local/go/bin/go" if name == "go" else None


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "bin"
    monkeypatch.setenv("SCALEARENA_TOOLS_DIR", str(folder))
    return folder


def fill(folder: Path, names: Sequence[str] = ALL_BINARIES) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for b in names:
        (folder / f"{b}-{PINNED[tools.BINARIES[b]]}").write_text("built")


# ---- the table and the pins -----------------------------------------------------------------------------------

def test_versions_reads_every_pinned_release() -> None:
    assert tools.versions() == PINNED


def test_versions_rejects_a_file_that_is_not_tool_to_tag(tmp_path: Path) -> None:
    bad = tmp_path / "versions.yaml"
    bad.write_text("kubernetes: 1.33.1\n")  # no leading v: not a release tag
    with pytest.raises(UserError) as e:
        tools.versions(bad)
    assert e.value.where == str(bad)


def test_every_pinned_release_has_a_build_and_every_build_a_pin() -> None:
    assert set(tools.TOOLS) == set(PINNED)
    assert sorted(tools.BINARIES) == sorted(ALL_BINARIES)


@pytest.mark.parametrize("name", sorted(PINNED))
def test_each_wrapper_module_requires_the_pinned_release_and_records_its_sum(name: str) -> None:
    t = tools.TOOLS[name]
    want = "v0.53.4" if name == "prometheus" else PINNED[name]  # Prometheus v2.53.4 is Go module v0.53.4
    assert t.module_version(PINNED[name]) == want
    assert tools.wrapper_require(t) == want
    gosum = (ROOT / "tools" / "go" / name / "go.sum").read_text()
    assert f"{t.module} {want} h1:" in gosum and f"{t.module} {want}/go.mod h1:" in gosum


def test_exec_names_skip_a_major_version_suffix_and_are_distinct_within_a_tool() -> None:
    assert tools.exec_name("k8s.io/kube-state-metrics/v2") == "kube-state-metrics"
    assert tools.exec_name("github.com/kedacore/keda/v2/cmd/adapter") == "adapter"
    assert tools.exec_name("scalearena.local/tools/etcd") == "etcd"
    assert tools.exec_name("example.com/cmd/v1") == "v1"  # v0/v1 are not major-version suffixes
    for t in tools.TOOLS.values():
        names = [tools.exec_name(p) for _, p in t.binaries]
        assert len(set(names)) == len(names), t.name


def test_version_ldflags_are_the_release_builds() -> None:
    k8s = tools.TOOLS["kubernetes"].ldflags_for("v1.33.1")
    assert k8s[:2] == ["-s", "-w"]
    want = {f"{p}.{k}" for p in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version") for k in (
        "gitVersion=v1.33.1", "gitMajor=1", "gitMinor=33", "gitTreeState=clean",
        "gitCommit=8adc0f041b8e7ad1d30e29cc59c6ae7a15e19828")}
    assert {a.removeprefix("-X ") for a in k8s[2:]} == want
    assert tools.TOOLS["keda"].ldflags_for("v2.18.0")[2:] == [
        "-X github.com/kedacore/keda/v2/version.Version=2.18.0",
        "-X github.com/kedacore/keda/v2/version.GitCommit=559e73850876f0c1d2fe915f9c23904608e5e235"]
    # another release: the version follows, a commit recorded for v2.18.0 is not claimed for it
    assert tools.TOOLS["keda"].ldflags_for("v2.19.0")[2:] == ["-X github.com/kedacore/keda/v2/version.Version=2.19.0"]
    assert tools.TOOLS["kwok"].ldflags_for("v0.7.0") == ["-s", "-w", "-X sigs.k8s.io/kwok/pkg/consts.Version=v0.7.0"]
    assert tools.TOOLS["etcd"].ldflags_for("v3.5.21") == ["-s", "-w"]


def _image_tags(path: Path, repo: str) -> set[str]:
    tags = re.findall(rf"image:\s*\S*{re.escape(repo)}:([^@\s]+)", path.read_text())
    assert tags, f"no {repo} image in {path}"
    return set(tags)


def test_the_images_pinned_in_manifests_are_the_releases_of_versions_yaml() -> None:
    m = ROOT / "manifests"
    assert _image_tags(m / "base" / "variants.yaml", "llm-d/llm-d-inference-sim") == {PINNED["llm-d-inference-sim"]}
    assert _image_tags(m / "autoscalers" / "prometheus-adapter" / "deployment.yaml",
                       "prometheus-adapter/prometheus-adapter") == {PINNED["prometheus-adapter"]}
    assert _image_tags(m / "base" / "kube-state-metrics.yaml",
                       "kube-state-metrics/kube-state-metrics") == {PINNED["kube-state-metrics"]}
    assert _image_tags(m / "base" / "prometheus.yaml", "prometheus/prometheus") == {PINNED["prometheus"]}
    assert _image_tags(m / "kind" / "cluster.yaml", "kindest/node") == {PINNED["kubernetes"]}
    assert "v" + KEDA_VERSION == PINNED["keda"]


# ---- the cache ------------------------------------------------------------------------------------------------

def test_binaries_are_named_binary_dash_version_in_the_cache(cache: Path) -> None:
    assert tools.cache_dir() == cache
    assert tools.binary("kube-apiserver") == cache / "kube-apiserver-v1.33.1"
    assert tools.binary("keda-metrics-apiserver") == cache / "keda-metrics-apiserver-v2.18.0"


def test_the_default_cache_is_under_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SCALEARENA_TOOLS_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert tools.binary("etcd") == tmp_path / ".cache" / "scalearena" / "bin" / "etcd-v3.5.21"


def test_an_unknown_binary_is_a_user_error(cache: Path) -> None:
    with pytest.raises(UserError, match="'kubernetes'"):
        tools.binary("kubernetes")  # a tool, not a binary
    with pytest.raises(UserError, match="unknown tool 'kubelet'"):
        tools.ensure(["kubelet"], progress=lambda _: None, runner=no_go)


def test_present_binaries_are_reused_without_go(cache: Path) -> None:
    fill(cache)
    lines: list[str] = []
    got = tools.ensure(progress=lines.append, runner=no_go, which=lambda _: None)
    assert got == {b: cache / f"{b}-{PINNED[tools.BINARIES[b]]}" for b in ALL_BINARIES}
    assert lines == []
    tools.preflight(which=lambda _: None, runner=no_go)  # nothing to build: no Go needed


def test_missing_go_is_a_user_error_that_says_how_to_fix_it(cache: Path) -> None:
    fill(cache, [b for b in ALL_BINARIES if b != "kwok"])
    for call in (lambda: tools.ensure(progress=lambda _: None, runner=no_go, which=lambda _: None),
                 lambda: tools.preflight(which=lambda _: None, runner=no_go)):
        with pytest.raises(UserError) as e:
            call()
        assert e.value.where == "PATH" and "Go toolchain" in e.value.message
        assert e.value.expected is not None and e.value.expected.startswith("Go 1.25.7 or newer: https://go.dev/doc/install")


def test_a_go_older_than_a_wrapper_module_needs_is_a_user_error(cache: Path) -> None:
    go = FakeGo(version="go1.24.3")
    with pytest.raises(UserError) as e:
        tools.ensure(["llm-d-inference-sim"], progress=lambda _: None, runner=go, which=go_on_path)
    assert "llm-d-inference-sim needs Go 1.25.7 or newer" in e.value.message and "go1.24.3" in e.value.message
    assert go.builds == []


# ---- building -------------------------------------------------------------------------------------------------

def test_a_build_renames_each_binary_into_place_and_reports_its_time(cache: Path) -> None:
    go = FakeGo()
    lines: list[str] = []
    got = tools.ensure(["keda-operator"], progress=lines.append, runner=go, which=go_on_path)
    assert got == {"keda-operator": cache / "keda-operator-v2.18.0",
                   "keda-metrics-apiserver": cache / "keda-metrics-apiserver-v2.18.0"}
    assert got["keda-operator"].read_text() == "binary of github.com/kedacore/keda/v2/cmd/operator"
    assert got["keda-metrics-apiserver"].read_text() == "binary of github.com/kedacore/keda/v2/cmd/adapter"
    [(argv, cwd, env)] = go.builds
    assert cwd == ROOT / "tools" / "go" / "keda"
    assert argv[:3] == ["/usr/local/go/bin/go", "build", "-trimpath"]
    assert argv[-2:] == ["github.com/kedacore/keda/v2/cmd/operator", "github.com/kedacore/keda/v2/cmd/adapter"]
    assert (env["GOFLAGS"], env["CGO_ENABLED"], env["GOTOOLCHAIN"]) == ("-mod=readonly", "0", "local")
    assert sorted(p.name for p in cache.iterdir()) == [".lock", "keda-metrics-apiserver-v2.18.0",
                                                        "keda-operator-v2.18.0"]  # no temporary folder left
    assert len(lines) == 2 and lines[0].startswith("building keda from source")
    assert re.fullmatch(r"built keda v2\.18\.0 \(keda-operator, keda-metrics-apiserver\) in \d+s", lines[1])
    # built once: the next call reuses it
    assert tools.ensure(["keda"], progress=lines.append, runner=no_go, which=go_on_path) == got


def test_rebuild_builds_what_is_present(cache: Path) -> None:
    fill(cache, ["kwok"])
    go = FakeGo()
    tools.ensure(["kwok"], progress=lambda _: None, rebuild=True, runner=go, which=go_on_path)
    assert len(go.builds) == 1 and (cache / "kwok-v0.7.0").read_text() == "binary of sigs.k8s.io/kwok/cmd/kwok"


COMPILE_ERROR = """go: downloading github.com/google/cel-go v0.23.2
# k8s.io/kubernetes/pkg/scheduler
k8s.io/kubernetes@v1.33.1/pkg/scheduler/schedule_one.go:41:2: undefined: framework.Handle
k8s.io/kubernetes@v1.33.1/pkg/scheduler/schedule_one.go:57:9: cannot use x (variable of type int) as string value
"""


def test_a_compile_error_is_run_failed_naming_the_tool_module_and_first_error(cache: Path) -> None:
    go = FakeGo(rc=1, stderr=COMPILE_ERROR)
    with pytest.raises(RunFailed) as e:
        tools.ensure(["kubectl"], progress=lambda _: None, runner=go, which=go_on_path)
    msg = str(e.value)
    assert msg == ("building kubernetes (k8s.io/kubernetes@v1.33.1) failed to compile: "
                   "k8s.io/kubernetes@v1.33.1/pkg/scheduler/schedule_one.go:41:2: undefined: framework.Handle")
    assert sorted(p.name for p in cache.iterdir()) == [".lock"]  # nothing half-built left behind


def test_a_module_that_cannot_be_downloaded_is_a_user_error_naming_it(cache: Path) -> None:
    stderr = ('go: k8s.io/api@v0.33.1: Get "https://proxy.golang.org/k8s.io/api/@v/v0.33.1.zip": '
              "dial tcp: lookup proxy.golang.org on 127.0.0.53:53: no such host\n")
    with pytest.raises(UserError) as e:
        tools.ensure(["kubernetes"], progress=lambda _: None, runner=FakeGo(rc=1, stderr=stderr), which=go_on_path)
    assert e.value.message.startswith("cannot download k8s.io/api@v0.33.1 (needed to build kubernetes v1.33.1)")
    assert e.value.where is not None and e.value.where.startswith("GOPROXY=")


def test_a_download_failure_after_the_importing_file_is_not_taken_for_a_compile_error() -> None:
    # go 1.26's words when the proxy refuses the connection (GOPROXY=http://127.0.0.1:9, empty module cache)
    stderr = ("go: downloading go.etcd.io/etcd/server/v3 v3.5.21\n"
              'main.go:10:2: go.etcd.io/etcd/server/v3@v3.5.21: Get "http://127.0.0.1:9/go.etcd.io/etcd/server/v3/@v/'
              'v3.5.21.zip": dial tcp 127.0.0.1:9: connect: connection refused\n')
    e = tools.classify(tools.TOOLS["etcd"], "v3.5.21", stderr)
    assert isinstance(e, UserError)
    assert e.message.startswith("cannot download go.etcd.io/etcd/server/v3@v3.5.21 (needed to build etcd v3.5.21)")


def test_go_refusing_a_newer_go_directive_is_a_user_error() -> None:
    e = tools.classify(tools.TOOLS["etcd"], "v3.5.21",
                       "go: go.mod requires go >= 1.99 (running go 1.26.8; GOTOOLCHAIN=local)\n")
    assert isinstance(e, UserError) and e.where == "PATH"
    assert e.message == ("building etcd (go.etcd.io/etcd/server/v3@v3.5.21) needs Go 1.99 or newer; the go on PATH "
                         "is go1.26.8")


def test_an_untidy_wrapper_is_run_failed_not_a_user_error(cache: Path) -> None:
    stderr = ("../../../go/pkg/mod/sigs.k8s.io/kwok@v0.7.0/pkg/kwok/cmd/root.go:30:2: missing go.sum entry for "
              "module providing package github.com/spf13/cobra (imported by sigs.k8s.io/kwok/pkg/kwok/cmd); "
              "to add:\n\tgo get sigs.k8s.io/kwok/pkg/kwok/cmd@v0.7.0\n")
    e = tools.classify(tools.TOOLS["kwok"], "v0.7.0", stderr)
    # a file:line:col prefix, but no compile error: the committed go.sum lacks an entry
    assert isinstance(e, RunFailed) and str(e).startswith("building kwok (sigs.k8s.io/kwok@v0.7.0): tools/go/kwok "
                                                          "is not tidy: ../../../go/pkg/mod/")
    assert "missing go.sum entry" in str(e) and "failed to compile" not in str(e)
    e = tools.classify(tools.TOOLS["kwok"], "v0.7.0", "go: updates to go.mod needed; to update it:\n\tgo mod tidy\n")
    assert isinstance(e, RunFailed) and str(e) == ("building kwok (sigs.k8s.io/kwok@v0.7.0): tools/go/kwok is not "
                                                   "tidy: go: updates to go.mod needed; to update it:")


def test_the_python_entry_point_exits_2_on_a_user_error_and_0_when_all_is_built(
        cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert tools.main(["--only", "kubelet"]) == 2
    assert "error: unknown tool 'kubelet'" in capsys.readouterr().err
    fill(cache)
    assert tools.main([]) == 0
    assert capsys.readouterr().out == f"12 binaries ready in {cache}\n"
