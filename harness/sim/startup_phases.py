"""A pod's start-up phases, drawn from the variant's settings (harness/config/startup_spec.py), and the
record every backend writes of them (``pods.jsonl``).

One phase record is ``{"phase", "stage", "start_s", "end_s"}``; the stage is the Kubernetes pod
lifecycle step it belongs to (Pending, ContainerCreating, Running = running but not Ready), so a
record read from a real cluster's pod conditions (harness/kube: PodScheduled, container
start, Ready) and one drawn by the simulator line up in the same report. Pure functions: the
simulator and the local backend draw the same phases for the same scenario, seed and pod.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from scalearena.harness.config.startup_spec import bytes_per_gpu, model_bytes, phase_rng, sample_s

PENDING, CREATING, RUNNING = "Pending", "ContainerCreating", "Running"
STAGE = {
    "scheduling": PENDING,  # creation until bound on a node (kube-scheduler), or until it could be
    "unschedulable": PENDING,  # no free GPU and none coming (capacity or node limit reached)
    "node_provisioning": PENDING,  # waiting for a node the cluster autoscaler is adding
    "image_pull": CREATING,
    "weight_load": RUNNING,
    "warmup": RUNNING,
    "startup": RUNNING,  # the single startup_s (image pull + model load undivided)
    "wake": RUNNING,  # sleep mode: wake_up (level 2: weights reloaded)
    "promote": RUNNING,  # a warm buffer pod put into service
    "asleep": "Asleep",  # sleep mode: holds its GPUs, serves nothing
}
PHASES = tuple(STAGE)


def phase(name: str, start_s: float, end_s: float) -> dict[str, Any]:
    return {"phase": name, "stage": STAGE[name], "start_s": round(start_s, 6), "end_s": round(end_s, 6)}


def clip(phases: list[dict[str, Any]], end_s: float) -> list[dict[str, Any]]:
    """The phases a pod went through before it ended at ``end_s`` (a pod deleted while starting did not
    finish the phases planned when it was bound)."""
    end = round(end_s, 6)
    return [{**ph, "end_s": min(ph["end_s"], end)} for ph in phases if ph["start_s"] < end or ph["end_s"] <= end]


def scheduling_delay(v: Any, seed: int, pod: str) -> float:
    """Seconds from creation until the scheduler can bind the pod (0 without ``cold_start``)."""
    return 0.0 if v.cold_start is None else sample_s(v.cold_start.scheduling_s, phase_rng(seed, pod, "scheduling"))


def pull_s(v: Any, seed: int, pod: str) -> float:
    return v.cold_start.image_pull.draw(phase_rng(seed, pod, "image_pull"))


def after_bind(v: Any, seed: int, pod: str, t: float, image_at: float | None,
               scale: Callable[[float], float] = lambda s: s) -> list[tuple[str, float, float]]:
    """The phases (name, start, end) from binding at ``t`` to Ready, unrounded (the last end is the ready
    time). ``image_at``: when the node has the image (None: pull it now; a time after ``t``: another
    pod's pull on the node is under way). ``scale``: a ``slow_cold_start`` fault on every duration."""
    if v.cold_start is None:
        return [("startup", t, t + scale(v.startup_s))]
    c = v.cold_start
    out = []
    end = t + scale(pull_s(v, seed, pod)) if image_at is None else max(t, image_at)
    if end > t:
        out.append(("image_pull", t, end))
    load = end + scale(c.weight_load.draw(model_bytes(v), phase_rng(seed, pod, "weight_load")))
    out.append(("weight_load", end, load))
    out.append(("warmup", load, load + scale(sample_s(c.warmup_s, phase_rng(seed, pod, "warmup")))))
    return out


def wake_s(v: Any, seed: int, pod: str, n: int) -> float:
    """The ``n``-th wake of a slept pod."""
    return v.sleep_mode.draw_wake(bytes_per_gpu(v), phase_rng(seed, pod, "wake", n))


def total_cold_start_s(v: Any, seed: int, pod: str) -> float:
    """One pod's start-up in one number (the local backend's engine readiness delay): scheduling plus the
    phases after binding, with the image pulled."""
    return scheduling_delay(v, seed, pod) + after_bind(v, seed, pod, 0.0, None)[-1][2]


def pod_record(name: str, variant: str, created_s: float, how: str) -> dict[str, Any]:
    """A pods.jsonl row as it starts: ``how`` is initial (ready at t=0), cold, buffer (a warm buffer pod)."""
    return {"pod": name, "variant": variant, "node": None, "created_s": round(created_s, 6), "start": how,
            "phases": [], "ready_s": None, "ended_s": None, "end": None}


# ---- a real cluster's pods (harness/kube) -------------------------------------------------


def _when(ts: Any, to_t: Callable[[float], float]) -> float | None:
    """An RFC 3339 timestamp of the API server (``2026-05-01T10:00:05Z``) on the run's time axis."""
    from datetime import datetime

    if not isinstance(ts, str) or not ts:
        return None
    try:
        return to_t(datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp())
    except ValueError:
        return None


def kube_pod_record(obj: dict[str, Any], variant: str, to_t: Callable[[float], float], unschedulable: bool,
                    last_seen: float | None) -> dict[str, Any]:
    """A pods.jsonl row from what the API server says of a pod: creation, the PodScheduled and Ready
    conditions' transition times and the containers' start. Pending is one phase (``unschedulable``
    when a read saw PodScheduled=False/Unschedulable: it then includes any node the cluster
    autoscaler added), ContainerCreating one (image pull and volume set-up), Running-not-Ready one
    (``startup``: weight load and warm-up are not told apart without the engine's log)."""
    meta, status = obj.get("metadata") or {}, obj.get("status") or {}
    conds = {c.get("type"): c for c in status.get("conditions") or [] if c.get("status") == "True"}
    created = _when(meta.get("creationTimestamp"), to_t)
    scheduled = _when((conds.get("PodScheduled") or {}).get("lastTransitionTime"), to_t)
    starts = [_when(((c.get("state") or {}).get("running") or {}).get("startedAt"), to_t)
              for c in status.get("containerStatuses") or []]
    started = max((s for s in starts if s is not None), default=None) if starts and None not in starts else None
    ready = _when((conds.get("Ready") or {}).get("lastTransitionTime"), to_t)
    rec = pod_record(str(meta.get("name")), variant, created or 0.0, "initial" if (created or 0.0) < 0 else "cold")
    rec["node"] = (obj.get("spec") or {}).get("nodeName")
    if created is not None and created >= 0:  # pods made before the run began were started before it
        marks = [("unschedulable" if unschedulable else "scheduling", created), ("image_pull", scheduled),
                 ("startup", started), (None, ready)]
        known = [(n, t) for n, t in marks if t is not None]
        rec["phases"] = [phase(n, a, b) for (n, a), (_, b) in zip(known, known[1:], strict=False) if n and b >= a]
    rec["ready_s"] = None if ready is None else round(ready, 6)
    gone = _when(meta.get("deletionTimestamp"), to_t)
    rec["ended_s"] = round(gone, 6) if gone is not None else (None if last_seen is None else round(last_seen, 6))
    rec["end"] = "deleted" if gone is not None or last_seen is not None else "running"
    return rec
