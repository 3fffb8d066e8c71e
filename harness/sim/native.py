"""The simulator's compiled core: the engine, the router and the event loop built with mypyc.

The modules in ``MODULES`` are plain, type-annotated Python and stay the reference: they are what
runs when no build is there, and what the build compiles, unchanged (mypyc compiles annotated
Python to a C extension; docs/simulator.md "Speed" has the figures: about 3x per request). A build
(``make venv``, which runs ``python -m scalearena.harness.sim.native_build``; ``make`` rebuilds when one
of the modules changes) writes the extension modules and a manifest of the SHA-256 of every
source it compiled to ``build/native/`` at the repository root.

At import, ``install()`` (called by ``harness/__init__.py``, before any of these modules loads) puts
a finder first on ``sys.meta_path`` that hands out the compiled modules only when every one of
them was compiled from the source that is there now: the same bytes as the manifest records, the
same Python. Otherwise (a module edited since the build, no build, another interpreter) every one
of them is imported from its ``.py`` file, as if no build existed: a stale build never runs, and
the modules are never mixed (compiled code calls the other compiled modules directly).
``SCALEARENA_NATIVE=0`` always runs the pure-Python modules; ``SCALEARENA_NATIVE=1`` fails the
import instead of falling back. tests/unit/harness/sim/test_native.py runs scenarios both ways and compares
every output file byte for byte.

What the compiled build needs of the code (mypy checks it; the build fails otherwise): classes
are native (no attributes beyond those declared or assigned in their methods, no monkeypatching
of methods), the simulation's mixins are mypyc traits over ``harness/sim/state.SimState``, and
annotated types hold at run time (a value of another type raises ``TypeError`` where the pure
module would carry on).
"""
from __future__ import annotations

import hashlib
import importlib.machinery
import json
import os
import sys
from pathlib import Path
from typing import Any

MODULES = (  # compiled together (one mypyc group), relative to the package ``scalearena``
    "harness.sim.engine.event",
    "harness.sim.engine.core",
    "harness.sim.engine.histogram",
    "harness.sim.engine.kv_transfer",
    "harness.sim.engine.prefix_cache",
    "harness.sim.engine.latency",
    "harness.sim.engine.cluster",
    "harness.sim.router",
    "harness.sim.events",
    "harness.sim.state",
    "harness.sim.requests",
    "harness.sim.handoff",
    "harness.sim.pods",
    "harness.sim.startup",
    "harness.sim.scrapes",
    "harness.sim.loop",
)
# read by the build for their types only, not compiled (as stubs: imports beyond MODULES are otherwise typed
# ``Any``): the compiled code reads RequestSpec's fields by position, so a build is stale when one changes too
TYPED = ("workloads.base",)
GROUP = "scalearena_native"  # the group's shared library is the top-level module f"{GROUP}__mypyc"
ROOT = Path(__file__).resolve().parents[2]  # the repository root (an editable install)
OUT = ROOT / "build" / "native"
ENV = "SCALEARENA_NATIVE"
_FULL = {f"scalearena.{m}": m for m in MODULES}
_SHARED = f"{GROUP}__mypyc"
_SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]  # e.g. .cpython-311-x86_64-linux-gnu.so
_decision: tuple[bool, str] | None = None


def source(module: str) -> Path:
    """The ``.py`` file of a module of ``MODULES``."""
    return ROOT.joinpath(*module.split(".")).with_suffix(".py")


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _ext(name: str, out: Path = OUT) -> Path:
    """The compiled file of ``scalearena.<module>`` or of the group's shared library."""
    return out / "lib" / Path(*name.split(".")).with_suffix(_SUFFIX)


def check(out: Path = OUT) -> tuple[bool, str]:
    """(whether the build in ``out`` may run, why): every module compiled from the source there now."""
    try:
        manifest = json.loads((out / "manifest.json").read_text())
    except (OSError, ValueError):
        return False, "not built (make venv builds it)"
    if manifest.get("ext_suffix") != _SUFFIX or manifest.get("python") != sys.version:
        return False, f"built for another Python ({manifest.get('python')!r}; make venv rebuilds it)"
    built = {**manifest.get("modules", {}), **manifest.get("typed", {})}
    if sorted(manifest.get("modules", {})) != sorted(MODULES) or sorted(manifest.get("typed", {})) != sorted(TYPED):
        return False, "built for another module list (make venv rebuilds it)"
    for module in (*MODULES, *TYPED):
        try:
            now = digest(source(module).read_bytes())
        except OSError:
            return False, f"{source(module)} is missing"
        if built[module] != now:
            return False, f"stale: {source(module).relative_to(ROOT)} changed since the build (make venv rebuilds it)"
    for name in (_SHARED, *_FULL):
        if not _ext(name, out).is_file():
            return False, f"incomplete build: {_ext(name, out).name} is missing (make venv rebuilds it)"
    return True, f"compiled (mypyc {manifest.get('mypy', '?')}, {len(MODULES)} modules)"


def decision() -> tuple[bool, str]:
    """Whether this process runs the compiled modules, decided once (at the first import of one)."""
    global _decision
    if _decision is None:
        env = os.environ.get(ENV, "")
        _decision = (False, f"pure Python ({ENV}=0)") if env == "0" else check()
        if env == "1" and not _decision[0]:
            raise ImportError(f"{ENV}=1 but the compiled simulator core can't be used: {_decision[1]}")
    return _decision


def active() -> bool:
    """True when the engine in this process is the compiled one."""
    mod = sys.modules.get("scalearena.harness.sim.engine.core")
    return bool(mod is not None and (getattr(mod, "__file__", None) or "").endswith(_SUFFIX))


def describe() -> str:
    """One line for benchmark output: which simulator core runs, and why."""
    use, why = decision()
    return f"simulator core: {why}" if use or why.startswith("pure") else f"simulator core: pure Python ({why})"


class _Finder:
    """``sys.meta_path`` finder of the compiled modules (first on the path; None: the usual import)."""

    @staticmethod
    def find_spec(name: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if name not in _FULL and name != _SHARED:
            return None
        if not decision()[0]:
            return None
        file = _ext(name)
        loader = importlib.machinery.ExtensionFileLoader(name, str(file))
        return importlib.machinery.ModuleSpec(name, loader, origin=str(file))


def install() -> None:
    if not any(f is _Finder for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder)  # type: ignore[arg-type]
