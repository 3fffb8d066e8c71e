"""Maps the repository's top-level folders (contracts/, harness/, controllers/,
workloads/, reports/) into the one importable package ``scalearena`` so the layout fixed by
the design and the import name can both hold."""
from __future__ import annotations

from setuptools import find_packages, setup

TOP = ["contracts", "harness", "controllers", "workloads", "reports"]
package_dir = {"scalearena": "scalearena"}
packages = ["scalearena"]
for top in TOP:
    package_dir[f"scalearena.{top}"] = top
    packages.append(f"scalearena.{top}")
    packages += [f"scalearena.{top}.{sub}" for sub in find_packages(top)]

setup(
    packages=packages,
    package_dir=package_dir,
    package_data={
        "scalearena.workloads": ["scenarios/*.yaml", "suites/*.yaml", "data/*", "data/**/*"],
        "scalearena.reports": ["templates/*.html", "templates/*.md"],
        "scalearena.harness": ["engine/*.json", "engine/data/*"],
    },
)
