"""When each of a run's HPAs came to be: the origin of the in-cluster controllers' phase against the load.

The HPA controller syncs an HPA one sync period after its creation and every period after that
(pkg/controller/podautoscaler/horizontal.go: ``queue.AddRateLimited`` with a fixed-interval limiter), so the
lead from an HPA's creation to the load's start sets where its syncs fall (harness.control.loop.first_tick).
The run's own HPAs are made by its apply; KEDA makes the HPA of a ScaledObject when its operator first
reconciles it, seconds later on kwok. ``metadata.creationTimestamp`` has whole seconds, two scenario seconds
at time scale 2, against a 15 s sync period and scrapes a few seconds apart; so from the apply on, the run
lists its namespace's HPAs every ``every_s`` wall seconds in a thread and keeps when each name was first seen.

Written here rather than with a watch: a list every 0.1 s is as exact as a watch's delivery needs to be here,
and it runs on the run's ``KubeAPI`` (the fake one in unit tests), which has no watch.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from scalearena.harness.kube.wva.kubeapi import ApiError


class HpaBirths:
    """Polls ``api.list_hpas(namespace)`` from ``applied_wall`` (the end of the run's apply; default: when it is
    made) until ``stop``."""

    def __init__(self, api: Any, namespace: str, applied_wall: float | None = None, every_s: float = 0.1,
                 clock: Callable[[], float] = time.time) -> None:
        self.api, self.namespace = api, namespace
        self.applied_wall = clock() if applied_wall is None else applied_wall  # default: now, the apply's end
        self.every_s, self.clock = every_s, clock
        self.seen: dict[str, float] = {}  # HPA name -> wall time first listed
        self.first_poll: set[str] = set()  # the names the first list already held (made by the apply, or before)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> HpaBirths:
        self.poll(first=True)
        self._thread = threading.Thread(target=self._run, name="hpa-births", daemon=True)
        self._thread.start()
        return self

    def poll(self, first: bool = False) -> None:
        try:
            names = [str((h.get("metadata") or {}).get("name")) for h in self.api.list_hpas(self.namespace)]
        except ApiError:
            return
        now = self.clock()
        for n in names:
            if n not in self.seen:
                self.seen[n] = now
                if first:
                    self.first_poll.add(n)

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            self.poll()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5.0)

    def origin(self) -> tuple[float, str]:
        """(wall time, what) the first HPA began syncing: the apply's end for one the first list held, else the
        middle of the poll interval it appeared in; the apply's end when no HPA was seen."""
        best = [(self.applied_wall if n in self.first_poll else max(self.applied_wall, t - self.every_s / 2), n)
                for n, t in self.seen.items()]
        if not best:
            return self.applied_wall, "apply"
        t, name = min(best)
        return t, "apply" if name in self.first_poll else f"HPA {name}, first listed {t - self.applied_wall:.2f} s " \
            "after the apply"
