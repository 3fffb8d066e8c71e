"""The layering of docs/architecture.md, held by the import graph of the source (tests/unit/importgraph.py).

Each rule is checked on the real tree, and the checker itself is shown to catch a violation on a
synthetic tree written to tmp_path, so a checker that finds nothing cannot pass for a clean tree.
"""
from __future__ import annotations

import functools
from pathlib import Path

from tests.unit.importgraph import (
    Edge,
    dangling,
    forbidden_edges,
    import_edges,
    impurities,
    module_cycles,
    top_level_cycles,
)

ROOT = Path(__file__).resolve().parents[2]


@functools.cache
def _real_edges() -> tuple[Edge, ...]:
    return tuple(import_edges(ROOT))  # parsed once for every test of the real tree


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        for parent in path.relative_to(root).parents:
            if str(parent) != ".":
                (root / parent / "__init__.py").touch()
        path.write_text(text)
    return root


def test_the_graph_covers_the_tree() -> None:
    edges = _real_edges()
    pairs = {(e.importer, e.target) for e in edges}
    # a module-level import, a relative one and one inside a function, all known to exist
    assert ("scalearena.harness.control.view", "scalearena.controllers.base") in pairs
    assert ("scalearena.harness.run.runner", "scalearena.reports.results") in pairs
    assert ("scalearena.paper.cli", "scalearena.harness.cli.main") in pairs  # inside paper()'s body


def test_every_import_names_an_existing_module() -> None:
    found = dangling(ROOT, _real_edges())
    assert not found, "imports of missing modules:\n" + "\n".join(map(str, found))


def test_checker_finds_an_import_left_behind_by_a_move(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"harness/control/plane.py": "from ..records import Row\n",
                            "contracts/records.py": "Row = 1\n"})
    assert [str(f) for f in dangling(root, import_edges(root))] == [
        "no such module: scalearena.harness.control.plane -> scalearena.harness.records (harness/control/plane.py:1)"]


def test_no_forbidden_import() -> None:
    found = forbidden_edges(_real_edges())
    assert not found, "layering broken:\n" + "\n".join(map(str, found))


def test_no_cycle_between_top_level_packages() -> None:
    cycles = top_level_cycles(_real_edges())
    assert not cycles, f"import cycles between top-level packages: {cycles}"


def test_no_cycle_between_modules() -> None:
    """Issue 29: not even through an import inside a function (runner -> registry -> sim -> loop -> runner
    was one); an import under `if TYPE_CHECKING:` never runs and is left out."""
    cycles = module_cycles(_real_edges())
    assert not cycles, "import cycles between modules:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_checker_finds_a_module_cycle_through_a_function_level_import(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "harness/run/a.py": "from scalearena.harness.run import b\n",
        "harness/run/b.py": "def f():\n    from scalearena.harness.sim import c\n",
        "harness/sim/c.py": "def g():\n    from scalearena.harness.run.a import X\n",
        "harness/sim/d.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from scalearena.harness.sim import e\n",
        "harness/sim/e.py": "from scalearena.harness.sim import d\n",  # d -> e only for typing: no cycle
    })
    assert module_cycles(import_edges(root)) == [
        ["scalearena.harness.run.a", "scalearena.harness.run.b", "scalearena.harness.sim.c"]]


def test_policies_read_no_clock_and_do_no_io() -> None:
    found = impurities(ROOT, "controllers")
    assert not found, "impure policy code:\n" + "\n".join(map(str, found))


def test_checker_names_a_forbidden_import_hidden_in_a_function(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "controllers/bad.py": "def f():\n    from scalearena.harness.sim import backend\n    return backend\n",
        "harness/sim/backend.py": "X = 1\n",
    })
    found = [str(f) for f in forbidden_edges(import_edges(root))]
    assert found == ["controllers may import only contracts, controllers: "
                     "scalearena.controllers.bad -> scalearena.harness.sim.backend (controllers/bad.py:2)"]


def test_checker_resolves_relative_imports(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "reports/plots/x.py": "from ...harness.local import backend\n",
        "harness/local/backend.py": "",
        "workloads/w.py": "from ..contracts import errors\n",
        "contracts/errors.py": "",
        "harness/sim/engine/core.py": "from ....controllers import base\n",
        "controllers/base.py": "",
        "contracts/c.py": "import scalearena.workloads.w\n",
    })
    found = sorted(str(f).split(": ")[0] for f in forbidden_edges(import_edges(root)))
    assert found == ["contracts may import only contracts",
                     "harness.sim.engine may import only contracts, harness.sim.engine, harness.sim.router",
                     "reports may import only contracts, controllers, reports, scalearena"]


def test_checker_finds_a_cycle_through_a_lazy_command_string(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "harness/cli/main.py": 'LAZY = {"paper": "scalearena.paper.cli:paper"}\n',
        "paper/cli.py": "from scalearena.harness import cli\n",
        "workloads/gen.py": "from scalearena.contracts import errors\n",
        "contracts/errors.py": "",
    })
    assert top_level_cycles(import_edges(root)) == [["harness", "paper"]]


def test_checker_finds_clock_reads_and_io_in_policies(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "controllers/p.py": ("import time\nfrom datetime import datetime\nimport subprocess\n\n"
                             "def decide():\n    a = time.monotonic()\n    b = datetime.now()\n"
                             "    with open('x') as f:\n        return a, b, f\n"),
        "controllers/ok.py": "import math\n\ndef decide(now):\n    return math.ceil(now)\n",
    })
    found = sorted((f.rule, f.where) for f in impurities(root, "controllers"))
    assert found == [
        ("controllers does I/O (imports subprocess)", "controllers/p.py:3"),
        ("controllers does I/O (open())", "controllers/p.py:8"),
        ("controllers reads a clock (datetime.now)", "controllers/p.py:7"),
        ("controllers reads a clock (time.monotonic)", "controllers/p.py:6"),
    ]
