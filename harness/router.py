"""The gateway: an llm-d EPP-like endpoint picker with admission control.

Scoring follows the llm-d inference scheduler's default scorers, each scaled
to [0, 1] and combined with the scenario's weights:

- queue-scorer: ``(max_q - q) / (max_q - min_q)`` over the candidate pods
  (1 for all when every queue is equal) — fewer waiting is better;
- kv-cache-utilization-scorer: ``1 - kv_usage``;
- prefix-cache-scorer: the share of the request's prompt blocks that the
  router's own index says a pod holds. The index remembers which pod each
  prefix was routed to (``RequestSpec.prefix_group`` or Mooncake
  ``hash_ids``), approximately LRU per pod like the EPP's in-memory indexer.

The pod with the highest weighted sum wins; ties are broken by a seeded
random choice (llm-d's max-score picker picks a random one among ties), so
runs are deterministic.

The router reads pod state itself (not Prometheus) but only every
``refresh_s``: within one refresh slot every request sees the same snapshot,
as the EPP's metrics refresh loop does. Snapshots are taken lazily at the
first request of a slot, so the cost follows requests, not time.

Admission (``admission.kind: saturation``): when every ready pod of the
model is saturated (KV usage >= kv_threshold or waiting >= queue_threshold)
the request is rejected with 429. When the model has no ready pod at all the
caller holds the request in the gateway queue (the scale-from-zero signal).
"""
from __future__ import annotations

import random
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Literal

from scalearena.workloads.base import RequestSpec

PREFIX_LRU_PER_POD = 4096  # prefix keys remembered per pod


@dataclass(eq=False)
class RoutedPod:
    """What the router needs of a pod: a name and an engine with ``load(now)``."""

    name: str
    engine: Any
    block_size: int = 16
    snapshot: tuple[int, int, float] = (0, 0, 0.0)  # waiting, running, kv_usage
    prefixes: OrderedDict = field(default_factory=OrderedDict)
    owner: Any = None  # the backend's pod object


@dataclass(frozen=True)
class Route:
    kind: Literal["pod", "reject", "queue"]
    pod: RoutedPod | None = None
    scores: dict[str, float] | None = None


class Router:
    def __init__(self, spec, seed: int = 0) -> None:  # spec: harness.scenario.RouterSpec
        self.spec = spec
        self.w = spec.scorers
        self.adm = spec.admission
        self.rng = random.Random(seed)
        self._pods: dict[str, list[RoutedPod]] = {}  # model -> ready pods (insertion order)
        self._slot: dict[str, int] = {}
        self._base: dict[str, tuple[list[float], float, list[int], bool]] = {}
        self._index: dict[Any, dict[str, RoutedPod]] = {}  # prefix key -> pods believed to hold it

    # ---- membership -------------------------------------------------------------------------------
    def add_pod(self, model: str, pod: RoutedPod) -> None:
        self._pods.setdefault(model, []).append(pod)
        self._slot.pop(model, None)

    def remove_pod(self, model: str, pod: RoutedPod) -> None:
        pods = self._pods.get(model, [])
        if pod in pods:
            pods.remove(pod)
        for key in pod.prefixes:
            holders = self._index.get(key)
            if holders is not None:
                holders.pop(pod.name, None)
                if not holders:
                    del self._index[key]
        pod.prefixes.clear()
        self._slot.pop(model, None)

    def ready_pods(self, model: str) -> list[RoutedPod]:
        return self._pods.get(model, [])

    # ---- picking ----------------------------------------------------------------------------------
    def route(self, now: float, req: RequestSpec) -> Route:
        pods = self._pods.get(req.model)
        if not pods:
            return Route("queue")
        base, _, ties, all_saturated = self._refresh(now, req.model, pods)
        if self.adm.kind == "saturation" and all_saturated:
            return Route("reject")
        keys = self._keys(req)
        if keys and self.w.prefix_cache > 0.0:
            cand: dict[int, float] = {}
            holders = self._index.get(keys[0])
            if holders:
                pos = {p.name: i for i, p in enumerate(pods)}
                for name, p in holders.items():
                    i = pos.get(name)
                    if i is not None:
                        cand[i] = base[i] + self.w.prefix_cache * self._prefix_share(p, keys, req)
            best = max([base[ties[0]], *cand.values()])
            choice = sorted({i for i in ties if base[i] >= best} | {i for i, s in cand.items() if s >= best})
            pod = pods[choice[0] if len(choice) == 1 else self.rng.choice(choice)]
        else:
            pod = pods[ties[0] if len(ties) == 1 else self.rng.choice(ties)]
        if keys:
            self._remember(pod, keys)
        return Route("pod", pod)

    def _refresh(self, now: float, model: str, pods: list[RoutedPod]) -> tuple[list[float], float, list[int], bool]:
        slot = int(now / self.spec.refresh_s)
        if self._slot.get(model) == slot:
            return self._base[model]
        snaps = [p.engine.load(now) for p in pods]
        for p, s in zip(pods, snaps, strict=True):
            p.snapshot = s
        qs = [s[0] for s in snaps]
        qmin, qmax = min(qs), max(qs)
        span = qmax - qmin
        wq, wkv = self.w.queue, self.w.kv_cache
        base = [
            wq * (1.0 if span == 0 else (qmax - s[0]) / span) + wkv * (1.0 - s[2]) for s in snaps
        ]
        top = max(base)
        ties = [i for i, b in enumerate(base) if b >= top - 1e-12]
        kv_t, q_t = self.adm.kv_threshold, self.adm.queue_threshold
        all_sat = all(s[2] >= kv_t or s[0] >= q_t for s in snaps)
        out = (base, top, ties, all_sat)
        self._slot[model], self._base[model] = slot, out
        return out

    # ---- prefix affinity --------------------------------------------------------------------------
    @staticmethod
    def _keys(req: RequestSpec) -> tuple[Any, ...]:
        if req.hash_ids:
            return tuple(("h", h) for h in req.hash_ids)
        if req.prefix_group >= 0 and req.prefix_tokens > 0:
            return (("g", req.model, req.prefix_group),)
        return ()

    @staticmethod
    def _prefix_share(pod: RoutedPod, keys: tuple[Any, ...], req: RequestSpec) -> float:
        if keys[0][0] == "g":
            return min(1.0, req.prefix_tokens / max(1, req.input_tokens))
        matched = 0
        for k in keys:
            if k not in pod.prefixes:
                break
            matched += 1
        return matched / len(keys)

    def _remember(self, pod: RoutedPod, keys: tuple[Any, ...]) -> None:
        lru = pod.prefixes
        for k in keys:
            if k in lru:
                lru.move_to_end(k)
            else:
                lru[k] = None
                self._index.setdefault(k, {})[pod.name] = pod
        while len(lru) > PREFIX_LRU_PER_POD:
            old, _ = lru.popitem(last=False)
            holders = self._index.get(old)
            if holders is not None:
                holders.pop(pod.name, None)
                if not holders:
                    del self._index[old]
