"""The import graph of scalearena's top-level folders and the layering rules it must obey.

docs/architecture.md draws the layering (controllers -> contracts and controllers; the engine -> nothing above it; reports
and workloads import nothing of the harness; contracts import nothing of ours) and says a test enforces it.
This module computes the graph from source with the standard library's `ast`: every `import` and
`from ... import` at any depth (inside functions too), relative imports resolved against the
importing module, and the lazy-import strings `"scalearena.pkg.mod:attr"` the CLI hands to
`importlib`. No maintained tool fits here: import-linter needs the package importable under its
real name per folder and cannot read the checks on clocks and I/O below, and pydeps draws graphs
rather than checking rules, so the ~150 lines stay here next to the test that uses them.

Areas: a module's area is its top-level folder (`contracts`, `controllers`, `harness`,
`workloads`, `reports`, `scalearena`), except under `harness/` where it is the first sub-package
(`harness.sim`, `harness.kube`, `harness.run`, ...; the serving model in `harness.sim`, its engine and
router, are areas of their own), because the rules name those.
"""
from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

TOPS = ("contracts", "controllers", "harness", "workloads", "reports", "paper", "scalearena")
SERVING_MODEL = ("engine", "router")  # harness.sim's modules below the simulator's loop, shared with local mode
LAZY_IMPORT = re.compile(r"^scalearena(\.\w+)+:\w+$")  # "module:attribute", as importlib is handed it


@dataclass(frozen=True)
class Edge:
    """One import: `importer` (module) imports `target` (module), at `path`:`line`."""

    importer: str
    target: str
    path: str
    line: int
    typing_only: bool = False  # under `if TYPE_CHECKING:`: never executed, so it cannot close an import cycle

    def __str__(self) -> str:
        return f"{self.importer} -> {self.target} ({self.path}:{self.line})"


@dataclass(frozen=True)
class Finding:
    """A broken rule: what it is and where."""

    rule: str
    where: str

    def __str__(self) -> str:
        return f"{self.rule}: {self.where}"


def area(module: str) -> str | None:
    """The layering area of a `scalearena.*` module name, or None if it is not ours."""
    parts = module.split(".")
    if parts[0] != "scalearena":
        return None
    if len(parts) == 1:
        return "scalearena"
    top = parts[1]
    if top not in TOPS:
        return "scalearena"  # scalearena/cli.py, scalearena/__main__.py
    if top == "harness" and len(parts) > 2:
        if parts[2] == "sim" and len(parts) > 3 and parts[3] in SERVING_MODEL:
            return f"harness.sim.{parts[3]}"
        return f"harness.{parts[2]}"
    return top


def top_of(module: str) -> str | None:
    a = area(module)
    return None if a is None else a.split(".")[0]


def discover(root: Path) -> dict[str, Path]:
    """Every module under the top-level folders of `root`, by its `scalearena.*` name."""
    modules: dict[str, Path] = {}
    for top in TOPS:
        base = root / top
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*.py")):
            rel = path.relative_to(root).with_suffix("")
            parts = list(rel.parts)
            if parts[-1] == "__init__":
                parts.pop()
            name = ".".join(parts if top == "scalearena" else ["scalearena", *parts])
            modules[name] = path
    return modules


def _resolve_from(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if node.level == 0:
        return node.module or ""
    package = module.split(".") if is_package else module.split(".")[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _typing_only(tree: ast.AST) -> set[int]:
    """The ids of the import nodes inside an `if TYPE_CHECKING:` block."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            out |= {id(n) for stmt in node.body for n in ast.walk(stmt) if isinstance(n, ast.Import | ast.ImportFrom)}
    return out


def _targets(tree: ast.AST, module: str, is_package: bool, known: set[str]) -> Iterator[tuple[str, int, bool]]:
    typing_only = _typing_only(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno, id(node) in typing_only
        elif isinstance(node, ast.ImportFrom):
            base = _resolve_from(node, module, is_package)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                yield (sub if sub in known else base), node.lineno, id(node) in typing_only
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and LAZY_IMPORT.match(node.value):
            yield node.value.split(":")[0], node.lineno, False


def import_edges(root: Path) -> list[Edge]:
    """Every import between scalearena modules found under `root`."""
    modules = discover(root)
    known = set(modules)
    edges = []
    for module, path in modules.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        for target, line, typing_only in _targets(tree, module, path.name == "__init__.py", known):
            if area(target) is not None and target != module:
                edges.append(Edge(module, target, str(path.relative_to(root)), line, typing_only))
    return edges


def dangling(root: Path, edges: Iterable[Edge]) -> list[Finding]:
    """Imports of scalearena modules that do not exist (a stale path left behind by a move)."""
    known = set(discover(root)) | {"scalearena"}
    return [Finding("no such module", str(e)) for e in edges if e.target not in known]


# What each area may import from scalearena (area prefixes). An area not listed may import anything.
ALLOWED: dict[str, tuple[str, ...]] = {
    "contracts": ("contracts",),
    "controllers": ("contracts", "controllers"),
    # the serving model: engine + the EPP-like router it routes through (its peer, not above it)
    "harness.sim.engine": ("contracts", "harness.sim.engine", "harness.sim.router"),
    # results are read and drawn from files alone; a workload is generated without any backend
    "reports": ("contracts", "controllers", "reports", "scalearena"),
    "workloads": ("contracts", "workloads"),
}


def _matches(target_area: str, prefixes: Iterable[str]) -> bool:
    return any(target_area == p or target_area.startswith(p + ".") for p in prefixes)


def forbidden_edges(edges: Iterable[Edge]) -> list[Finding]:
    """Imports that cross the layering the wrong way, each naming the edge."""
    found = []
    for e in edges:
        src, dst = area(e.importer), area(e.target)
        assert src is not None and dst is not None
        src_top = src.split(".")[0]
        for key in (src, src_top):
            if key in ALLOWED and not _matches(dst, ALLOWED[key]):
                found.append(Finding(f"{key} may import only {', '.join(ALLOWED[key])}", str(e)))
                break
    return found


def top_level_cycles(edges: Iterable[Edge]) -> list[list[str]]:
    """Strongly connected groups (more than one member) of the graph between top-level folders."""
    graph: dict[str, set[str]] = {t: set() for t in TOPS}
    for e in edges:
        a, b = top_of(e.importer), top_of(e.target)
        if a and b and a != b and a != "scalearena":  # the scalearena/ shim only re-exports the CLI
            graph[a].add(b)
    return _cycles(graph)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one node: nodes that reach each other."""
    reach = {n: _reachable(graph, n) for n in graph}
    groups = {tuple(sorted(m for m in graph if m in reach[n] and n in reach[m])) for n in graph}
    return sorted(list(g) for g in groups if len(g) > 1)


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for nxt in graph[todo.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def module_cycles(edges: Iterable[Edge]) -> list[list[str]]:
    """Groups of modules that import each other, directly or round a loop (imports inside functions and
    lazy command strings included; a package counts as its __init__)."""
    graph: dict[str, set[str]] = {}
    for e in edges:
        if not e.typing_only:
            graph.setdefault(e.importer, set()).add(e.target)
            graph.setdefault(e.target, set())
    return _cycles(graph)


def cycle_witnesses(edges: Iterable[Edge], group: list[str]) -> list[str]:
    """The imports that hold a cycle group together (for the failure message)."""
    return [str(e) for e in edges if top_of(e.importer) in group and top_of(e.target) in group
            and top_of(e.importer) != top_of(e.target)]


# Policies read no clock and do no I/O (docs/architecture.md: policies are pure).
CLOCK_CALLS = {("time", a) for a in ("time", "time_ns", "monotonic", "monotonic_ns", "perf_counter",
                                     "perf_counter_ns", "sleep")} | {
    (c, a) for c in ("datetime", "date") for a in ("now", "utcnow", "today")}
IO_MODULES = ("socket", "subprocess", "requests", "urllib", "http", "aiohttp", "asyncio", "kubernetes",
              "prometheus_api_client", "shutil", "multiprocessing", "threading")
IO_BUILTINS = ("open", "print", "input")


def _dotted(node: ast.expr) -> tuple[str, str] | None:
    if isinstance(node, ast.Attribute):
        inner = node.value
        if isinstance(inner, ast.Attribute):  # datetime.datetime.now
            inner = ast.Name(inner.attr)
        if isinstance(inner, ast.Name):
            return inner.id, node.attr
    return None


def impurities(root: Path, top: str = "controllers") -> list[Finding]:
    """Clock reads and I/O in the modules of one top-level folder."""
    found = []
    for module, path in discover(root).items():
        if top_of(module) != top:
            continue
        where = str(path.relative_to(root))
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            for name in names:
                if name.split(".")[0] in IO_MODULES:
                    found.append(Finding(f"{top} does I/O (imports {name})", f"{where}:{node.lineno}"))
                if tuple(name.split(".")[-2:]) in CLOCK_CALLS:
                    found.append(Finding(f"{top} reads a clock ({name})", f"{where}:{node.lineno}"))
            if isinstance(node, ast.Call):
                dotted = _dotted(node.func)
                if dotted in CLOCK_CALLS:
                    found.append(Finding(f"{top} reads a clock ({'.'.join(dotted)})", f"{where}:{node.lineno}"))
                if isinstance(node.func, ast.Name) and node.func.id in IO_BUILTINS:
                    found.append(Finding(f"{top} does I/O ({node.func.id}())", f"{where}:{node.lineno}"))
    return found
