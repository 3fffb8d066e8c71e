"""The backends by cluster name, each with a strict option model.

Before this module, ``runner.get_backend`` was an if/elif chain and each backend took ``**_``, so a
misspelt option vanished and the only way to set one was an undocumented ``SCALEARENA_*``
variable. Here every backend declares its options (pydantic, ``extra="forbid"``, a description
per field); they come from ``--backend-option KEY=VALUE`` on ``run``/``suite``. The environment
variables named in ``ENV`` stay as documented overrides (docs/backends.md): a variable is used
only for an option the command line leaves unset, and it is validated like the flag. An unknown
option or a bad value is one ``error:`` line naming it (exit 2), before any run starts.

Backends are imported when built, so ``--cluster sim`` loads neither the process nor the
Kubernetes machinery.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from scalearena.contracts.cli_params import key_values
from scalearena.contracts.errors import UserError

if TYPE_CHECKING:  # `scalearena --help` does not load the results writer
    from scalearena.harness.run.backend import Backend


class _Options(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SimOptions(_Options):
    """The simulator has no options: everything it does is in the scenario."""


class LocalOptions(_Options):
    time_scale: float = Field(
        default=1.0, gt=0, le=1000,
        description="Scenario seconds per wall second: 5 runs a 600 s scenario in 120 s (engines, cold "
                    "starts and the load schedule all speed up; latencies are reported in scenario time).")
    api: Literal["completions", "chat"] = Field(
        default="completions", description="OpenAI endpoint the Locust user calls (/v1/completions or chat).")
    prompt: Literal["words", "field"] = Field(
        default="words", description="How the prompt length reaches the engine: a prompt of N words, or only "
                                     "the scalearena_prompt_tokens extension field.")
    locust_workers: int = Field(
        default=1, ge=1, le=64,
        description="Load generator processes: 1 runs Locust in one process (about 500 req/s here); N > 1 runs "
                    "Locust's master/worker mode with N workers, each sending a deterministic share of the "
                    "schedule (request_id % N), records merged. Give each worker a core of its own.")
    engine: Literal["serve-engine", "llm-d-inference-sim"] = Field(
        default="serve-engine",
        description="The program each engine pod runs: scalearena's serve-engine (the simulator's serving model "
                    "behind HTTP), or the real llm-d-inference-sim v0.10.2 built by `make kwok-tools`, with the "
                    "flags the Kubernetes path renders for it (latency.kind: constant only; docs/backends.md).")


class KubeOptions(_Options):
    image_prefix: str | None = Field(
        default=None, min_length=1, max_length=200,
        description="Registry/namespace prefix of the scalearena images (default: scalearena).")
    gateway: Literal["serve-router", "epp"] | None = Field(
        default=None, description="Gateway in front of the engines: scalearena's serve-router (default) or "
                                  "llm-d's endpoint picker behind Envoy.")
    load: Literal["auto", "port-forward", "in-cluster"] | None = Field(
        default=None, description="Where Locust runs: auto (default: in-cluster above one host's rate), "
                                  "port-forward from this host, or in-cluster Jobs.")
    load_workers: int | None = Field(
        default=None, ge=1, le=1000,
        description="In-cluster Locust workers (default: one per 400 req/s of the schedule's peak).")
    ready_timeout_s: int = Field(default=600, gt=0, le=7200,
                                 description="Seconds to wait for the stack to become ready.")
    keep: bool = Field(default=False, description="Leave the cluster objects in place after the run.")
    time_scale: float = Field(
        default=1.0, gt=0, le=100,
        description="CLUSTER=kwok only: scenario seconds per wall second, applied to the objects, the control "
                    "plane's flags, the engines and the load (docs/kubernetes.md, 'Time scale'); a suite's cluster "
                    "gets it at `scalearena kwok up --time-scale`. kind and cluster run in real time.")


@dataclass(frozen=True)
class BackendEntry:
    """One cluster name: its options, their environment overrides and how to build the backend."""

    name: str
    options: type[_Options]
    env: Mapping[str, str]  # option -> environment variable that overrides its default
    build: Callable[[Any], Backend]


def _sim(o: SimOptions) -> Backend:
    from scalearena.harness.sim.backend import SimBackend

    return SimBackend()


def _local(o: LocalOptions) -> Backend:
    from scalearena.harness.local.backend import LocalBackend

    return LocalBackend(time_scale=o.time_scale, api=o.api, prompt=o.prompt, locust_workers=o.locust_workers,
                        engine=o.engine)


def _kube(mode: str) -> Callable[[KubeOptions], Backend]:
    def build(o: KubeOptions) -> Backend:
        from scalearena.harness.kube.backend import KubeBackend

        return KubeBackend(mode=mode, keep=o.keep, image_prefix=o.image_prefix, ready_timeout_s=o.ready_timeout_s,
                           gateway=o.gateway, load=o.load, load_workers=o.load_workers, time_scale=o.time_scale)
    return build


KUBE_ENV = {"image_prefix": "SCALEARENA_IMAGE_PREFIX", "gateway": "SCALEARENA_GATEWAY", "load": "SCALEARENA_LOAD",
            "load_workers": "SCALEARENA_LOAD_WORKERS", "time_scale": "SCALEARENA_TIME_SCALE"}
BACKENDS: dict[str, BackendEntry] = {
    "sim": BackendEntry("sim", SimOptions, {}, _sim),
    "local": BackendEntry("local", LocalOptions, {"time_scale": "SCALEARENA_TIME_SCALE",
                                                  "locust_workers": "SCALEARENA_LOCUST_WORKERS"}, _local),
    "kind": BackendEntry("kind", KubeOptions, KUBE_ENV, _kube("kind")),
    "kwok": BackendEntry("kwok", KubeOptions, KUBE_ENV, _kube("kwok")),
    "cluster": BackendEntry("cluster", KubeOptions, KUBE_ENV, _kube("cluster")),
}
CLUSTERS = tuple(BACKENDS)
KUBE_CLUSTERS = ("kind", "kwok", "cluster")  # the ones that run the kube backend (manifests, objects, a gateway)


def entry(cluster: str) -> BackendEntry:
    if cluster not in BACKENDS:
        raise UserError(f"unknown cluster {cluster!r}", where="--cluster", expected="one of " + ", ".join(CLUSTERS))
    return BACKENDS[cluster]


def parse_option_flags(items: tuple[str, ...] | list[str]) -> dict[str, str]:
    """``KEY=VALUE`` strings (``--backend-option``) as a mapping; values are validated by the model."""
    return key_values(items, "--backend-option", "KEY=VALUE")


def resolve_options(cluster: str, given: Mapping[str, Any] | None = None,
                    env: Mapping[str, str] | None = None) -> _Options:
    """The validated options of ``cluster``: ``given`` (flags), then the documented environment overrides."""
    e = entry(cluster)
    env = os.environ if env is None else env
    values: dict[str, Any] = dict(given or {})
    source = {k: "--backend-option" for k in values}
    for field_name, var in e.env.items():
        if field_name not in values and env.get(var) not in (None, ""):
            values[field_name], source[field_name] = env[var], f"${var}"
    try:
        return e.options.model_validate(values)
    except ValidationError as err:
        first = err.errors()[0]
        name = str(first["loc"][0]) if first["loc"] else "?"
        where = f"{source.get(name, '--backend-option')} {name}"
        if first["type"] == "extra_forbidden":
            known = ", ".join(e.options.model_fields) or "none"
            raise UserError(f"unknown option {name!r} for --cluster {cluster}", where=where,
                            expected=f"one of: {known}") from None
        raise UserError(f"{name}={values.get(name)!r}: {first['msg']}", where=where,
                        expected="a valid value (docs/backends.md)") from None


def build_backend(cluster: str, options: Mapping[str, Any] | None = None) -> Backend:
    """The backend for ``cluster`` with its options (see ``resolve_options``)."""
    return entry(cluster).build(resolve_options(cluster, options))
