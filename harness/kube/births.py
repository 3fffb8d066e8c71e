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

The same controller keeps per HPA, keyed by namespace/name, the recommendations its downscale stabilization
takes the maximum of, and forgets them only when the key next comes off its queue and the HPA is gone
(``reconcileKey``: "Horizontal Pod Autoscaler has been deleted"); ``deleteHPA`` only calls ``queue.Forget``,
which leaves the key's pending ``AddRateLimited`` in place. An HPA of the same name made before that pop is
synced at the old key's time, within a period of its creation, with the old run's recommendations: a KEDA run
on kwok went from 1 to 4 to 6 replicas before any load, within two seconds of its ScaledObject's apply, because the
run before it had ended at 6 (docs/fidelity.md). ``wait_forgotten`` holds a suite's next run back until the
controller has forgotten the last run's HPAs.
"""
from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
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


KCM_LOG = "kube-controller-manager.log"  # its log's name in a kwok cluster's logs folder (kube/kwok.py _start)
FORGOTTEN = '"Horizontal Pod Autoscaler has been deleted"'  # reconcileKey's message (klog text, verbosity 0)


def forgotten(text: str, namespace: str) -> set[str]:
    """The names of ``namespace``'s HPAs that kube-controller-manager's log ``text`` says it forgot, from lines as
    v1.33 writes them: ``I1205 11:58:11.484834 18313 horizontal.go:510] "Horizontal Pod Autoscaler has been
    deleted" logger="horizontal-pod-autoscaler-controller" HPA="scalearena/keda-hpa-va-sim"``."""
    out: set[str] = set()
    key = f' HPA="{namespace}/'
    for line in text.splitlines():
        if FORGOTTEN in line and (i := line.find(key)) >= 0:
            out.add(line[i + len(key):].split('"', 1)[0])
    return out


def wait_forgotten(names: Iterable[str], namespace: str, sync_s: float, log: Path | None = None, since: int = 0,
                   clock: Callable[[], float] = time.monotonic,
                   sleep: Callable[[float], None] = time.sleep) -> bool | None:
    """Wait, after ``names`` were deleted, until the HPA controller has forgotten them: with ``log`` (the
    controller's own log, read from byte ``since``, the size it had before the deletion) until it has said so of
    every name; without, one sync period (``sync_s``, wall seconds) and a second, by when the key's pending sync
    has come off the queue. True when the log showed it, False when the log did not within two periods and five
    seconds, None when no log was read (or there was nothing to forget)."""
    wanted = set(names)
    if not wanted:
        return None
    start = clock()
    if log is None:
        sleep(sync_s + 1.0)
        return None
    deadline = start + 2 * sync_s + 5.0
    while True:
        try:
            with open(log, "rb") as f:
                f.seek(since)
                text = f.read().decode(errors="replace")
        except OSError:
            text = ""
        if wanted <= forgotten(text, namespace):
            return True
        if clock() >= deadline:
            print(f"note: kube-controller-manager did not log forgetting HPA(s) {', '.join(sorted(wanted))} within "
                  f"{2 * sync_s + 5:g} s of their deletion ({log})", file=sys.stderr)
            return False
        sleep(0.2)
