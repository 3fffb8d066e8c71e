"""Maps the repository's top-level folders (contracts/, harness/, controllers/,
workloads/, reports/) into the one importable package ``scalearena`` so the layout fixed by
the design and the import name can both hold.

Data folders (workloads/scenarios, reports/templates, ...) are declared as namespace packages
with their files as package data: setuptools treats every folder under a package as importable
and warns ("Package would be ignored") when one is shipped as data but not listed in `packages`
(https://setuptools.pypa.io/en/latest/userguide/datafiles.html#subdirectory-for-data-files)."""
from __future__ import annotations

import warnings

from setuptools import find_namespace_packages, setup

# The mapping above is not a "simple layout", so an editable install uses setuptools' meta path
# finder and setuptools always emits an informational "Editable installation." notice about it
# (setuptools/command/editable_wheel.py, _TopLevelFinder). It names no defect; silence only it.
warnings.filterwarnings("ignore", message=r"\s*Editable installation")

TOP = ["contracts", "harness", "controllers", "workloads", "reports", "paper"]
# Files shipped with the code, per data folder (relative to its top-level folder).
DATA = {
    "workloads": {"scenarios": ["*.yaml"], "suites": ["*.yaml"], "data": ["*"]},
    "reports": {"templates": ["*.html", "*.md"], "static": ["*.js", "*.md"]},
}
package_dir = {"scalearena": "scalearena"}
packages = ["scalearena"]
package_data: dict[str, list[str]] = {}
for top in TOP:
    package_dir[f"scalearena.{top}"] = top
    packages.append(f"scalearena.{top}")
    subs = find_namespace_packages(top, exclude=["*__pycache__*"])
    packages += [f"scalearena.{top}.{sub}" for sub in subs]
    for sub, patterns in DATA.get(top, {}).items():
        package_data[f"scalearena.{top}.{sub}"] = patterns

setup(packages=packages, package_dir=package_dir, package_data=package_data)
