"""The steps the simulation's mixins call on one another, declared once.

``loop.Simulation`` is one object assembled from mixins (requests.RequestFlow, handoff.Handoff,
pods.PodLifecycle, startup.StartupLifecycle, scrapes.Scrapes), each kept in its own file so its part reads on its
own. Each calls steps another one defines; they are declared here, on the base every mixin shares,
so that the type checker (and the compiled build, harness/sim/native.py) knows them. Being the common
base, ``SimState`` comes last in ``Simulation``'s method resolution order: these stubs never
shadow the real steps.
"""
from __future__ import annotations

from typing import Any

from mypy_extensions import trait

from scalearena.harness.sim.engine.cluster import Deployment, Pod


@trait
class SimState:
    # ---- loop.Simulation
    @property
    def t(self) -> float:
        raise NotImplementedError

    def push(self, t: float, kind: int, payload: Any = None) -> None:
        raise NotImplementedError

    def arm_fast(self, t: float) -> None:
        raise NotImplementedError

    # ---- scrapes.Scrapes
    def pod_ready_scrape(self, pod: Pod, t: float) -> None:
        raise NotImplementedError

    # ---- requests.RequestFlow
    def dispatch(self, t: float, req: Any) -> None:
        raise NotImplementedError

    def drain(self, pod: Pod, t: float) -> None:
        raise NotImplementedError

    def record(self, req: Any, t: float, status: str, http: int, tokens: int) -> None:
        raise NotImplementedError

    # ---- handoff.Handoff
    def start_pd(self, t: float, req: Any, decode: Pod, prefill: Pod) -> None:
        raise NotImplementedError

    def prefill_done(self, t: float, req: Any) -> None:
        raise NotImplementedError

    def kv_pull(self, t: float, req: Any, tokens: int) -> None:
        raise NotImplementedError

    def end_pd(self, t: float, req: Any, status: str, http: int, notify: bool = True) -> None:
        raise NotImplementedError

    def leave_partner(self, t: float, req: Any, pod: Pod, notify: bool) -> None:
        raise NotImplementedError

    # ---- pods.PodLifecycle
    def dep(self, name: str) -> Deployment:
        raise NotImplementedError

    def schedule_pending(self) -> None:
        raise NotImplementedError

    def serve(self, pod: Pod, t: float) -> None:
        raise NotImplementedError

    def pod_gone(self, pod: Pod, t: float) -> None:
        raise NotImplementedError

    def create_pod(self, d: Deployment, standby: str | None = None) -> Pod:
        raise NotImplementedError

    # ---- startup.StartupLifecycle
    def pod_created(self, pod: Pod, d: Deployment) -> None:
        raise NotImplementedError

    def bind_gpus(self, pod: Pod, d: Deployment) -> bool:
        raise NotImplementedError

    def release_gpus(self, pod: Pod, d: Deployment) -> None:
        raise NotImplementedError

    def start_phases(self, pod: Pod, d: Deployment) -> None:
        raise NotImplementedError

    def take_standby(self, d: Deployment) -> bool:
        raise NotImplementedError

    def fill_buffer(self, d: Deployment) -> None:
        raise NotImplementedError

    def sleep_slot(self, d: Deployment) -> bool:
        raise NotImplementedError

    def fall_asleep(self, pod: Pod, t: float) -> None:
        raise NotImplementedError

    def pod_ended(self, pod: Pod, t: float | None, how: str) -> None:
        raise NotImplementedError
