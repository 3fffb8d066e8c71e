"""Build the simulator's compiled core (harness/sim/native.py): ``python -m scalearena.harness.sim.native_build
[-v]`` (``make venv`` runs it, and ``make`` again whenever one of the compiled modules changed);
``--status`` says whether the build there can run."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from scalearena.harness.sim.native import _SUFFIX, GROUP, MODULES, OUT, ROOT, TYPED, check, digest, source

_SETUP = """
import sys
from setuptools import setup
from mypyc.build import mypycify
lib, tmp, cdir, group, config, *files = sys.argv[1:]
setup(name="scalearena-native", script_args=["-q", "build_ext", "--build-lib", lib, "--build-temp", tmp],
      ext_modules=mypycify(["--config-file", config, "--follow-imports=skip", *files], opt_level="3",
                           debug_level="0", multi_file=True, target_dir=cdir, group_name=group))
"""


def build(out: Path = OUT, quiet: bool = True) -> None:
    """Compile ``MODULES`` into ``out`` (replaced as a whole once the build succeeded).

    The sources are copied first and the copies compiled, so the manifest's digests are exactly
    the bytes that were compiled (an edit during the build makes the build stale, not wrong).
    Imports of modules outside ``MODULES`` are not followed (they are typed ``Any`` in the
    compiled code and called as Python), so the build reads only these files, and ``TYPED``'s as
    stubs: their types without their code (RequestSpec's fields read by position)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".native-build-", dir=out.parent))
    try:
        src = work / "src"
        digests = {}
        files = []
        for module in MODULES:
            data = source(module).read_bytes()
            digests[module] = digest(data)
            dest = src.joinpath("scalearena", *module.split(".")).with_suffix(".py")
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(data)
            files.append(str(dest.relative_to(src)))
        typed = {}
        for module in TYPED:  # as stubs: their types for the compiler, their code not compiled
            data = source(module).read_bytes()
            typed[module] = digest(data)
            dest = src.joinpath("scalearena", *module.split(".")).with_suffix(".pyi")
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(data)
        stubs = [str(src.joinpath("scalearena", *m.split(".")).relative_to(src)) for m in TYPED]
        for pkg in {p for f in (*files, *stubs) for p in Path(f).parents if p != Path(".")}:
            (src / pkg / "__init__.py").touch()  # package markers only: mypy names the modules scalearena.*
        cmd = [sys.executable, "-c", _SETUP, str(work / "new" / "lib"), str(work / "tmp"), str(work / "c"), GROUP,
               str(ROOT / "pyproject.toml"), *files]
        r = subprocess.run(cmd, cwd=src, capture_output=quiet, text=True, check=False)
        if r.returncode != 0:
            detail = ((r.stdout or "") + (r.stderr or ""))[-6000:] if quiet else ""
            raise SystemExit(f"building the compiled simulator core failed (mypyc):\n{detail}\n"
                             "NATIVE=0 make ... skips it (the pure-Python modules then run)")
        import mypy.version

        manifest = {"group": GROUP, "python": sys.version, "ext_suffix": _SUFFIX, "mypy": mypy.version.__version__,
                    "modules": digests, "typed": typed}
        (work / "new" / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
        ok, why = check(work / "new")
        if not ok:
            raise SystemExit(f"the compiled simulator core was built but can't be used: {why}")
        if out.exists():
            shutil.rmtree(out)
        os.replace(work / "new", out)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str]) -> int:
    """Build into ``OUT`` (read at the call, so a test can point it elsewhere), saying on stderr what it waits
    for before and how long it took after: the compiler is quiet and takes ~20 s (18 s measured on 2 cores)."""
    if "--status" in argv:
        ok, why = check(OUT)
        print(why)
        return 0 if ok else 1
    print("native: building the compiled simulator core with mypyc (harness/sim/native.py; first run only, and again"
          " when one of its modules changes; ~20 s)...", file=sys.stderr, flush=True)
    start = time.monotonic()
    build(OUT, quiet="-v" not in argv)
    where = OUT.relative_to(ROOT) if OUT.is_relative_to(ROOT) else OUT
    print(f"native: built in {time.monotonic() - start:.1f} s: {check(OUT)[1]}, in {where}", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
