"""``scalearena render``, ``scalearena doctor`` and ``scalearena kind up|down``.

``render`` writes exactly the objects a run would apply (the backend's own
``plan``: the scenario's variants, the autoscaler's objects, hardening, a fresh
admin token, the semantic checks), one YAML file per object, without touching
a cluster — for review, or to apply through the user's own GitOps.

``kind up`` makes the kind cluster a whole suite runs on: sized for the suite's
largest scenario, images built and loaded once, KEDA installed when the suite
uses it, marked so the kube backend reuses it (each run then gets a fresh
``scalearena`` namespace, deleted after it). ``kind down`` deletes it.
"""
from __future__ import annotations

import re
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from scalearena.contracts.files import write_secret
from scalearena.harness.config.scenario import load_scenario
from scalearena.harness.kube.render import dump_yaml
from scalearena.harness.run.registry import KubeOptions, resolve_options

CLUSTER_CHOICE = click.Choice(["kind", "cluster"])
SUITE_OPTION = click.option("--suite", "suite_file", type=click.Path(dir_okay=False),
                            default="workloads/suites/kind.yaml", show_default=True,
                            help="Suite whose largest scenario sizes the fake GPUs.")


def _file_name(i: int, o: dict) -> str:
    md = o["metadata"]
    slug = re.sub(r"[^a-z0-9.-]+", "-", f"{o['kind']}-{md.get('namespace', 'cluster')}-{md['name']}".lower())
    return f"{i:03d}-{slug}.yaml"


def write_object(path: Path, o: dict) -> None:
    """One object as YAML; a Secret (the gateway's live admin token) readable by this user only, 0600 from its
    creation whatever the umask (contracts/files.write_secret)."""
    if o.get("kind") == "Secret":
        write_secret(path, dump_yaml([o]))
    else:
        path.write_text(dump_yaml([o]), encoding="utf-8")


@click.command("render")
@click.argument("scenario", type=click.Path(dir_okay=False))
@click.option("--cluster", type=CLUSTER_CHOICE, default="kind", show_default=True,
              help="kind (llm-d-inference-sim / serve-engine on fake GPUs) or cluster (vLLM on the gpu-pool overlay).")
@click.option("--autoscaler", "names", multiple=True, help="Autoscaler label or kind (repeatable); "
              "default: the scenario's autoscalers. Each goes to OUT/<label>/.")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE", help="Override a scenario field.")
@click.option("--image-prefix", default=None, help="Registry for the scalearena images (--cluster cluster); "
              "default $SCALEARENA_IMAGE_PREFIX.")
@click.option("--gateway", type=click.Choice(["serve-router", "epp"]), default=None,
              help="Gateway (default $SCALEARENA_GATEWAY, else serve-router).")
@click.option("--out", type=click.Path(file_okay=False), required=True, help="Folder for the YAML files.")
def render(scenario: str, cluster: str, names: tuple[str, ...], overrides: tuple[str, ...], image_prefix: str | None,
           gateway: str | None, out: str) -> None:
    """Write the objects a run would apply, one YAML file per object; no cluster is touched."""
    from scalearena.harness.kube.backend import KubeBackend

    sc = load_scenario(scenario, list(overrides))
    flags = {k: v for k, v in (("image_prefix", image_prefix), ("gateway", gateway)) if v is not None}
    options = resolve_options(cluster, flags)  # the flags, else the documented $SCALEARENA_* overrides
    assert isinstance(options, KubeOptions)
    backend = KubeBackend(cluster, image_prefix=options.image_prefix, gateway=options.gateway)
    configs = [sc.autoscaler(n) for n in names] if names else sc.autoscaler_configs()
    for cfg in configs:
        objs = backend.plan(sc, cfg)
        folder = Path(out) / cfg.label
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        for i, o in enumerate(objs):
            write_object(folder / _file_name(i, o), o)
        click.echo(f"{folder}: {len(objs)} objects")


@click.command("doctor")
@click.option("--cluster", type=click.Choice(["kind", "kwok", "cluster"]), default="kind", show_default=True,
              help="What to check for.")
def doctor(cluster: str) -> None:
    """Check tools, limits and cluster access for CLUSTER=kind|kwok|cluster; exit 0 ready, 1 something to fix."""
    from scalearena.harness.kube.doctor import run_doctor

    lines, code = run_doctor(cluster)
    for line in lines:
        click.echo(line)
    sys.exit(code)


@click.group("kind")
def kind() -> None:
    """One kind cluster for a whole suite: `kind up` before, `kind down` after."""


@kind.command("up")
@SUITE_OPTION
def kind_up(suite_file: str) -> None:
    """Create the suite's kind cluster, build and load the images once, install KEDA if the suite needs it."""
    from scalearena.harness.kube.cluster import Shell

    n, name = suite_cluster_up(suite_file, Shell(), shutil.which)
    click.echo(f"kind cluster {name} ready for {n} runs; `scalearena kind down` deletes it")


def suite_cluster_up(suite_file: str, shell: Any, which: Callable[[str], str | None]) -> tuple[int, str]:
    """``kind up``: (number of runs, cluster name). Bad suite input fails before anything is created."""
    from scalearena.harness.config.suite import load_suite
    from scalearena.harness.kube.backend import ROOT
    from scalearena.harness.kube.byo import uses_keda
    from scalearena.harness.kube.cluster import (
        KEDA_MANIFEST,
        KindCluster,
        build_images,
        fake_gpu_demand,
        preflight,
    )

    preflight("kind", which)
    _, plans = load_suite(suite_file)
    cluster = KindCluster(shell, ROOT / "manifests" / "kind" / "cluster.yaml")
    cluster.create(fake_gpu_demand([p.scenario for p in plans]), owner="suite")
    cluster.load_images(build_images(shell, ROOT))
    if any(uses_keda(p.autoscaler) for p in plans):
        cluster.kubectl.run("apply", "--server-side", "-f", KEDA_MANIFEST, timeout=300)
        cluster.kubectl.rollout("keda", "keda-operator", 600)
    return len(plans), cluster.name


@kind.command("down")
def kind_down() -> None:
    """Delete the kind cluster."""
    from scalearena.harness.kube.backend import ROOT
    from scalearena.harness.kube.cluster import KindCluster, Shell, preflight

    preflight("kind", need=["kind"])  # without kind there is no kind cluster to delete: bad input, exit 2
    KindCluster(Shell(), ROOT / "manifests" / "kind" / "cluster.yaml").delete()


@click.group("kwok")
def kwok() -> None:
    """The real Kubernetes control plane as local processes: `kwok tools`, `kwok up` before a suite, `kwok down`."""


@kwok.command("up")
@SUITE_OPTION
@click.option("--time-scale", type=click.FloatRange(0, 100, min_open=True), default=1.0, show_default=True,
              envvar="SCALEARENA_TIME_SCALE",
              help="Scenario seconds per wall second for every run on this cluster (the HPA controller's sync period "
                   "and durations are its flags); runs pass the same as --backend-option time_scale=...")
def kwok_up(suite_file: str, time_scale: float) -> None:
    """Build what is missing, start etcd, kube-apiserver, kube-controller-manager, kube-scheduler and KWOK with the
    suite's fake GPU nodes on loopback; it keeps running until `scalearena kwok down`."""
    from scalearena.harness.config.suite import load_suite
    from scalearena.harness.kube.byo import uses_keda
    from scalearena.harness.kube.cluster import fake_gpu_demand
    from scalearena.harness.kube.kwok import KwokCluster
    from scalearena.harness.kube.tools import ensure

    _, plans = load_suite(suite_file)
    ensure(progress=click.echo)
    cluster = KwokCluster(log=click.echo, time_scale=time_scale)
    cluster.up(fake_gpu_demand([p.scenario for p in plans]), owner="suite")
    if any(uses_keda(p.autoscaler) for p in plans):  # as `kind up` installs KEDA for such a suite
        cluster.ensure_keda()
    click.echo(f"kwok cluster ready for {len(plans)} runs: KUBECONFIG={cluster.kubeconfig}; "
               "`scalearena kwok down` stops it")


@kwok.command("down")
def kwok_down() -> None:
    """Stop every process of the kwok control plane and remove its folder; exit 1 if one would not stop."""
    from scalearena.harness.kube.kwok import KwokCluster

    left = KwokCluster().down()
    if left:
        click.echo(f"error: still running after SIGKILL: {', '.join(left)}", err=True)
        sys.exit(1)
    click.echo("kwok cluster stopped")


def _kwok_tools() -> None:
    from scalearena.harness.kube.tools import (
        tools_command,  # `scalearena kwok tools`: kube/tools.py's command
    )

    kwok.add_command(tools_command, "tools")


_kwok_tools()
