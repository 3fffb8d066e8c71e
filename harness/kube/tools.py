"""The upstream programs CLUSTER=kwok runs, built from source at the versions of tools/versions.yaml.

CLUSTER=kwok runs the real Kubernetes control plane and the real controllers as local processes, so it needs
their binaries without Docker and without downloading a prebuilt one: each is compiled here with the local Go
toolchain from the Go module proxy. The sources, all upstream releases:

* kube-apiserver, kube-controller-manager, kube-scheduler, kubectl: k8s.io/kubernetes (its staging modules
  pinned to the published k8s.io/* tags in tools/go/kubernetes/go.mod);
* etcd: go.etcd.io/etcd/server/v3 (etcdmain, called as etcd's own main.go does);
* kwok (the controller, not kwokctl): sigs.k8s.io/kwok;
* keda-operator, keda-metrics-apiserver: github.com/kedacore/keda/v2 (cmd/operator, cmd/adapter; KEDA's own
  replace directives copied into its wrapper module);
* prometheus-adapter: sigs.k8s.io/prometheus-adapter (cmd/adapter);
* llm-d-inference-sim: github.com/llm-d/llm-d-inference-sim (pure Go: no cgo, no native libraries);
* kube-state-metrics: k8s.io/kube-state-metrics/v2;
* prometheus: github.com/prometheus/prometheus (Go module v0.<minor>.<patch> of release v2.<minor>.<patch>).

Each is built from a wrapper module under tools/go/<tool>/ whose go.mod pins the release and whose go.sum is
committed: the build runs with GOFLAGS=-mod=readonly and GOTOOLCHAIN=local, so it uses exactly the recorded
dependency versions and never fetches a Go toolchain. Version strings are set with -X as each project's
release build sets them; the commit is set only where the module proxy records the tag's commit.

Binaries land in ~/.cache/scalearena/bin/<binary>-<version> ($SCALEARENA_TOOLS_DIR overrides the folder) and
are reused from there; ``ensure`` builds what is missing, one tool at a time, into a temporary folder renamed
into place, so an interrupted build never leaves a binary that looks finished.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import click
import yaml

from scalearena.contracts.errors import RunFailed, UserError
from scalearena.contracts.files import folder_lock

ROOT = Path(__file__).resolve().parents[2]
VERSIONS = ROOT / "tools" / "versions.yaml"
WRAPPERS = ROOT / "tools" / "go"


@dataclass(frozen=True)
class Tool:
    """One upstream release built from one wrapper module (tools/go/<name>)."""

    name: str  # its key in tools/versions.yaml and its folder under tools/go
    module: str  # the upstream Go module the wrapper requires
    binaries: tuple[tuple[str, str], ...]  # (binary name, Go package), built by one `go build`
    ldflags: tuple[str, ...] = ()  # -X assignments; {version} v1.2.3, {bare} 1.2.3, {major}, {minor}
    commits: dict[str, tuple[str, ...]] = field(default_factory=dict)  # version -> -X of the tag's commit
    tags: tuple[str, ...] = ()
    cgo: bool = False  # every tool here is pure Go (CGO_ENABLED=0), as each upstream release builds it

    def module_version(self, version: str) -> str:
        """The Go module version of release ``version`` (Prometheus tags v2.x.y, its module is v0.x.y)."""
        if self.name == "prometheus" and version.startswith("v2."):
            return "v0." + version[3:]
        return version

    def ldflags_for(self, version: str) -> list[str]:
        major, minor = version.lstrip("v").split(".")[:2]
        fmt = {"version": version, "bare": version.lstrip("v"), "major": major, "minor": minor}
        assignments = [a.format(**fmt) for a in self.ldflags] + list(self.commits.get(version, ()))
        return ["-s", "-w"] + [f"-X {a}" for a in assignments]


_K8S_VERSION = ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version")
_PROM_VERSION = "github.com/prometheus/common/version"

TOOLS: dict[str, Tool] = {t.name: t for t in (
    Tool("kubernetes", "k8s.io/kubernetes",
         tuple((b, f"k8s.io/kubernetes/cmd/{b}")
               for b in ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl")),
         ldflags=tuple(f"{p}.{k}={v}" for p in _K8S_VERSION for k, v in (
             ("gitVersion", "{version}"), ("gitMajor", "{major}"), ("gitMinor", "{minor}"),
             ("gitTreeState", "clean"))),
         commits={"v1.33.1": tuple(f"{p}.gitCommit=8adc0f041b8e7ad1d30e29cc59c6ae7a15e19828" for p in _K8S_VERSION)}),
    # etcd's version (go.etcd.io/etcd/api/v3/version.Version) is already "3.5.21" in the module; GitSHA stays
    # unset: the proxy records no commit for etcd's tags.
    Tool("etcd", "go.etcd.io/etcd/server/v3", (("etcd", "scalearena.local/tools/etcd"),)),
    Tool("kwok", "sigs.k8s.io/kwok", (("kwok", "sigs.k8s.io/kwok/cmd/kwok"),),
         ldflags=("sigs.k8s.io/kwok/pkg/consts.Version={version}",)),  # as hack/releases.sh sets it
    Tool("keda", "github.com/kedacore/keda/v2",
         (("keda-operator", "github.com/kedacore/keda/v2/cmd/operator"),
          ("keda-metrics-apiserver", "github.com/kedacore/keda/v2/cmd/adapter")),
         ldflags=("github.com/kedacore/keda/v2/version.Version={bare}",),  # the release sets VERSION=2.18.0
         commits={"v2.18.0": ("github.com/kedacore/keda/v2/version.GitCommit=559e73850876f0c1d2fe915f9c23904608e5e235",)}),
    Tool("prometheus-adapter", "sigs.k8s.io/prometheus-adapter",
         (("prometheus-adapter", "sigs.k8s.io/prometheus-adapter/cmd/adapter"),)),  # upstream sets no version
    Tool("llm-d-inference-sim", "github.com/llm-d/llm-d-inference-sim",
         (("llm-d-inference-sim", "github.com/llm-d/llm-d-inference-sim/cmd/llm-d-inference-sim"),)),
    Tool("kube-state-metrics", "k8s.io/kube-state-metrics/v2", (("kube-state-metrics", "k8s.io/kube-state-metrics/v2"),),
         ldflags=(f"{_PROM_VERSION}.Version={{version}}",),
         commits={"v2.15.0": (f"{_PROM_VERSION}.Revision=4a585c9",)}),  # `git rev-parse --short`, as its Makefile
    Tool("prometheus", "github.com/prometheus/prometheus",
         (("prometheus", "github.com/prometheus/prometheus/cmd/prometheus"),),
         ldflags=(f"{_PROM_VERSION}.Version={{bare}}", f"{_PROM_VERSION}.Branch=HEAD"),
         commits={"v2.53.4": (f"{_PROM_VERSION}.Revision=c8b591988a60a5a26d2359ac69ec37e1170fa0be",)},
         tags=("netgo",)),  # promu's tags less builtinassets (tools/go/prometheus/tools.go)
)}
BINARIES: dict[str, str] = {b: t.name for t in TOOLS.values() for b, _ in t.binaries}  # binary -> tool

Runner = Callable[[Sequence[str], Path, dict[str, str]], "subprocess.CompletedProcess[str]"]


def versions(path: Path = VERSIONS) -> dict[str, str]:
    """tools/versions.yaml: tool -> release tag (``v1.33.1``)."""
    data = yaml.safe_load(path.read_text())
    if not isinstance(data, dict) or not all(isinstance(v, str) and v.startswith("v") for v in data.values()):
        raise UserError("not a mapping of tool to release tag", where=str(path), expected="e.g. `kubernetes: v1.33.1`")
    return {str(k): v for k, v in data.items()}


def cache_dir() -> Path:
    env = os.environ.get("SCALEARENA_TOOLS_DIR")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "scalearena" / "bin"


def binary(name: str, vers: dict[str, str] | None = None) -> Path:
    """Where binary ``name`` (``kube-apiserver``, ``keda-operator``, ...) of the pinned release lives."""
    if name not in BINARIES:
        raise UserError(f"no tool builds a binary named {name!r}", expected=", ".join(sorted(BINARIES)))
    version = (vers or versions())[BINARIES[name]]
    return cache_dir() / f"{name}-{version}"


def exec_name(package: str) -> str:
    """The file `go build -o DIR/` writes for ``package`` (cmd/go's DefaultExecName: a /vN suffix is skipped)."""
    parts = package.split("/")
    if len(parts) > 1 and re.fullmatch(r"v[2-9]\d*|v[1-9]\d+", parts[-1]):
        return parts[-2]
    return parts[-1]


def wrapper_require(tool: Tool) -> str | None:
    """The version of ``tool.module`` that tools/go/<tool>/go.mod requires."""
    text = (WRAPPERS / tool.name / "go.mod").read_text()
    m = re.search(rf"^\s*(?:require\s+)?{re.escape(tool.module)}\s+(v\S+)", text, re.M)
    return m.group(1) if m else None


def go_directive(tool: Tool) -> tuple[int, ...]:
    m = re.search(r"^go\s+(\d+(?:\.\d+)*)", (WRAPPERS / tool.name / "go.mod").read_text(), re.M)
    return _vtuple(m.group(1)) if m else (1,)


def _vtuple(s: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", s)[:3])


def _run(argv: Sequence[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), cwd=cwd, env=env, capture_output=True, text=True)


def _elapsed(s: float) -> str:
    m, s = divmod(int(round(s)), 60)
    return f"{m}m{s:02d}s" if m else f"{s}s"


def _resolve(names: Iterable[str] | None) -> list[Tool]:
    if names is None:
        return list(TOOLS.values())
    out: list[Tool] = []
    for n in names:
        t = TOOLS.get(n) or TOOLS.get(BINARIES.get(n, ""))
        if t is None:
            raise UserError(f"unknown tool {n!r}", expected="one of " + ", ".join([*TOOLS, *sorted(
                b for b in BINARIES if b not in TOOLS)]))
        if t not in out:
            out.append(t)
    return out


def _missing(tools: Iterable[Tool], vers: dict[str, str]) -> list[Tool]:
    return [t for t in tools if not all(binary(b, vers).exists() for b, _ in t.binaries)]


def _go(which: Callable[[str], str | None]) -> str:
    go = which("go")
    if go is None:
        want = ".".join(map(str, max(go_directive(t) for t in TOOLS.values())))
        raise UserError("CLUSTER=kwok builds Kubernetes, etcd, KWOK and the controllers from source and needs the "
                        "Go toolchain, which is not on PATH", where="PATH",
                        expected=f"Go {want} or newer: https://go.dev/doc/install, or Debian/Ubuntu `apt-get install "
                        "golang` where it is recent enough; then `make kwok-tools`")
    return go


def _check_go_version(go: str, tools: Sequence[Tool], runner: Runner) -> None:
    r = runner([go, "env", "GOVERSION"], ROOT, _env(False))
    have = r.stdout.strip()
    if r.returncode != 0 or not have.startswith("go"):
        return  # a development toolchain ("devel ..."): let the build itself say what it lacks
    need = max(tools, key=go_directive)
    if _vtuple(have) < go_directive(need):
        want = ".".join(map(str, go_directive(need)))
        raise UserError(f"building {need.name} needs Go {want} or newer; the go on PATH is {have}", where=go,
                        expected=f"Go {want} or newer on PATH (https://go.dev/doc/install); scalearena builds with "
                        "GOTOOLCHAIN=local and never downloads a toolchain")


def preflight(which: Callable[[str], str | None] = shutil.which, runner: Runner = _run) -> None:
    """Raise UserError unless every tool is built or can be (a Go toolchain recent enough is on PATH)."""
    vers = versions()
    missing = _missing(TOOLS.values(), vers)
    if missing:
        _check_go_version(_go(which), missing, runner)


def _env(cgo: bool) -> dict[str, str]:
    env = dict(os.environ)
    env.update(CGO_ENABLED="1" if cgo else "0", GOFLAGS="-mod=readonly", GOTOOLCHAIN="local", GOWORK="off")
    return env


_COMPILE_ERROR = re.compile(r"^\S+\.go:\d+:\d+: .+")
_MODVER = re.compile(r"([A-Za-z0-9][\w.~-]*(?:/[\w.~+-]+)+)@(v[\w.+-]+)")
_DOWNLOAD = re.compile(r"dial tcp|no such host|connection refused|i/o timeout|TLS handshake|proxyconnect|"
                       r"\b(?:403|404|410) |Forbidden|Not Found|Gone|unrecognized import path|reading https?://|"
                       r"Get \"https?://|GOPROXY=off|module lookup disabled|network is unreachable|"
                       r"verifying .*: checksum", re.I)
_GO_TOO_OLD = re.compile(r"requires go >= ([\d.]+) \(running go ([\d.]+)")


def classify(tool: Tool, version: str, stderr: str) -> Exception:
    """The error a failed `go build` of ``tool`` is reported as: UserError (the toolchain or the network: fix
    the machine) or RunFailed naming the tool, module@version and the first compiler error."""
    modver = f"{tool.module}@{tool.module_version(version)}"
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip() and not ln.startswith("go: downloading")]
    sums = next((ln for ln in lines if "missing go.sum entry" in ln or "updates to go.mod needed" in ln), None)
    if sums is not None:  # the committed wrapper is incomplete: ours to fix, not the user's
        return RunFailed(f"building {tool.name} ({modver}): tools/go/{tool.name} is not tidy: {sums}")
    # a download failure: `go: MOD@VER: Get ...`, or the same after the importing file's position
    net = next((ln for ln in lines if _DOWNLOAD.search(ln) and _MODVER.search(ln)), None)
    if net is not None:
        m = _MODVER.search(net)
        assert m is not None
        proxy = os.environ.get("GOPROXY") or "https://proxy.golang.org,direct (default)"
        return UserError(f"cannot download {m.group(1)}@{m.group(2)} (needed to build {tool.name} {version}): {net}",
                         where=f"GOPROXY={proxy}",
                         expected="a reachable Go module proxy (GOPROXY), or a module cache (GOMODCACHE) that a "
                         "previous build filled")
    first = next((ln for ln in lines if _COMPILE_ERROR.match(ln)), None)
    if first is not None:
        return RunFailed(f"building {tool.name} ({modver}) failed to compile: {first}")
    old = next((m for m in map(_GO_TOO_OLD.search, lines) if m), None)
    if old is not None:
        return UserError(f"building {tool.name} ({modver}) needs Go {old.group(1)} or newer; the go on PATH is "
                         f"go{old.group(2)}", where="PATH", expected=f"Go {old.group(1)} or newer")
    tail = " | ".join(lines[-5:]) or "no output"
    return RunFailed(f"building {tool.name} ({modver}) failed: {tail}")


def build(tool: Tool, version: str, go: str, runner: Runner = _run) -> dict[str, Path]:
    """Build every binary of ``tool`` into a temporary folder of the cache, then rename each into place."""
    have = wrapper_require(tool)
    want = tool.module_version(version)
    if have != want:
        raise RunFailed(f"tools/go/{tool.name}/go.mod requires {tool.module} {have}, tools/versions.yaml says "
                        f"{version}: in tools/go/{tool.name} run `go get {tool.module}@{want} && go mod tidy`")
    out = cache_dir()
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".build-{tool.name}-", dir=out))
    try:
        argv = [go, "build", "-trimpath", "-ldflags", " ".join(tool.ldflags_for(version))]
        if tool.tags:
            argv += ["-tags", ",".join(tool.tags)]
        argv += ["-o", str(tmp) + os.sep, *(pkg for _, pkg in tool.binaries)]
        r = runner(argv, WRAPPERS / tool.name, _env(tool.cgo))
        if r.returncode != 0:
            raise classify(tool, version, r.stderr or r.stdout or "")
        done = {}
        for name, pkg in tool.binaries:
            made = tmp / exec_name(pkg)
            if not made.is_file():
                raise RunFailed(f"building {tool.name}: `go build` exited 0 but wrote no {made.name} for {pkg}")
            dest = binary(name, {tool.name: version})
            os.replace(made, dest)  # same file system: atomic
            done[name] = dest
        return done
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def ensure(names: Iterable[str] | None = None, progress: Callable[[str], object] = print, *, rebuild: bool = False,
           runner: Runner = _run, which: Callable[[str], str | None] = shutil.which) -> dict[str, Path]:
    """Build what is missing of ``names`` (tool or binary names; all tools when None) and return binary -> path.

    Present binaries are reused without running go; a build prints one line when it ends, with its time.
    """
    tools = _resolve(names)
    vers = versions()
    todo = tools if rebuild else _missing(tools, vers)
    if todo:
        go = _go(which)
        _check_go_version(go, todo, runner)
        with folder_lock(cache_dir()):  # one builder per cache folder: a second waits, then finds them built
            todo = tools if rebuild else _missing(todo, vers)  # another process may have built them meanwhile
            if todo:
                progress(f"building {', '.join(t.name for t in todo)} from source into {cache_dir()} "
                         "(the first build takes tens of minutes on 2 cores)")
            for t in todo:
                start = time.monotonic()
                made = build(t, vers[t.name], go, runner)
                progress(f"built {t.name} {vers[t.name]} ({', '.join(made)}) in {_elapsed(time.monotonic() - start)}")
    return {b: binary(b, vers) for t in tools for b, _ in t.binaries}


@click.command("tools")
@click.option("--only", "only", multiple=True, metavar="NAME",
              help="Build only this tool or the tool of this binary (repeatable).")
@click.option("--rebuild", is_flag=True, help="Build again even when the cached binary exists.")
def tools_command(only: tuple[str, ...], rebuild: bool) -> None:
    """Build the pinned upstream tools (tools/versions.yaml) from source through the Go module proxy into
    ~/.cache/scalearena/bin ($SCALEARENA_TOOLS_DIR); what is there already is reused."""
    built = ensure(list(only) or None, progress=click.echo, rebuild=rebuild)
    click.echo(f"{len(built)} binaries ready in {cache_dir()}")


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m scalearena.harness.kube.tools`: exit 2 on a UserError, 1 on a failed build."""
    try:
        tools_command.main(args=list(argv) if argv is not None else None, standalone_mode=False)
    except UserError as e:
        click.echo(f"error: {e.render()}", err=True)
        return 2
    except RunFailed as e:
        click.echo(f"error: {e}", err=True)
        return 1
    except click.exceptions.ClickException as e:
        e.show()
        return e.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())
