"""``--objects``: your own HPA / ScaledObject files run against a scenario from the command line.

``scalearena run SCENARIO --objects FILE_OR_FOLDER ... [--target DEPLOYMENT=VARIANT]
[--model-name SERVED=MODEL] [--epp NAME=MODEL] [--env KEY=VALUE]`` adds one ``kind: kubernetes`` autoscaler,
labelled ``objects``, to the scenario's list, the same config a scenario would write
(controllers/kubernetes.py), so ``validate``, ``run`` and the reports treat it alike. The
objects keep the names of the user's cluster; harness/objects/mapping.py maps them onto the
scenario's. A folder stands for its ``*.yaml`` / ``*.yml`` files, in name order.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from scalearena.contracts.cli_params import key_values
from scalearena.contracts.errors import UserError

LABEL = "objects"


def objects_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """The five options, for ``run`` and ``validate``."""
    f = click.option("--env", "object_env", multiple=True, metavar="KEY=VALUE",
                     help="A value for a ${KEY} placeholder of the --objects files (repeatable).")(f)
    f = click.option("--epp", "epp_names", multiple=True, metavar="NAME=MODEL",
                     help="The EPP service or InferencePool name your queries select (llm-d's guides), mapped onto "
                          "the scenario's gateway for MODEL (repeatable).")(f)
    f = click.option("--model-name", "model_names", multiple=True, metavar="SERVED=MODEL",
                     help="The model name your objects' queries select, mapped onto a scenario model "
                          "(repeatable).")(f)
    f = click.option("--target", "targets", multiple=True, metavar="DEPLOYMENT=VARIANT",
                     help="The Deployment your objects scale, mapped onto a scenario variant (repeatable).")(f)
    return click.option("--objects", "object_files", multiple=True, metavar="FILE|FOLDER",
                        help="Your HPA / ScaledObject / adapter / rule YAML, run as the autoscaler 'objects' "
                             "beside the scenario's (repeatable; docs/autoscalers.md).")(f)


def _files(given: tuple[str, ...]) -> list[str]:
    """Absolute paths of the files (a folder's YAML files in name order)."""
    out: list[str] = []
    for item in given:
        path = Path(item).expanduser().resolve()
        if path.is_dir():
            found = sorted(p for p in path.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file())
            if not found:
                raise UserError(f"folder {item!r} holds no .yaml or .yml file", where="--objects",
                                expected="Kubernetes object files, or a folder of them")
            out += [str(p) for p in found]
        elif path.is_file():
            out.append(str(path))
        else:
            raise UserError(f"no such file or folder: {item!r}", where="--objects",
                            expected="Kubernetes object files, or a folder of them")
    return out


def objects_autoscaler(object_files: tuple[str, ...], targets: tuple[str, ...], model_names: tuple[str, ...],
                       object_env: tuple[str, ...], epp_names: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """The autoscaler entry the flags describe ([] without --objects; the mapping flags alone are refused)."""
    if not object_files:
        for flag, given in (("--target", targets), ("--model-name", model_names), ("--env", object_env),
                            ("--epp", epp_names)):
            if given:
                raise UserError(f"{flag} without --objects", where=flag,
                                expected="--objects FILE ... naming the objects it applies to")
        return []
    return [{"kind": "kubernetes", "name": LABEL, "objects": _files(object_files),
             "deployments": key_values(targets, "--target", "DEPLOYMENT=VARIANT", empty=False, strip=True),
             "model_names": key_values(model_names, "--model-name", "SERVED=MODEL (the model_name your queries "
                                       "select)", empty=False, strip=True),
             "epp_names": key_values(epp_names, "--epp", "NAME=MODEL (the EPP service or InferencePool your queries "
                                     "select)", empty=False, strip=True),
             "env": key_values(object_env, "--env", "KEY=VALUE", strip=True)}]
