"""The gateway: an llm-d EPP-like endpoint picker with admission control.

Scoring follows the llm-d inference scheduler's default scorers, each scaled
to [0, 1] and combined with the scenario's weights:

- queue-scorer: ``(max_q - q) / (max_q - min_q)`` over the candidate pods
  (1 for all when every queue is equal) — fewer waiting is better;
- kv-cache-utilization-scorer: ``1 - kv_usage``;
- prefix-cache-scorer: the share of the request's prompt tokens that the
  router believes a pod holds, as llm-d's approximate prefix-cache scorer
  does (gateway-api-inference-extension ``prefix`` plugin: matched blocks /
  prompt blocks, from an index of the blocks it sent to each server, LRU per
  server). The prompt comes as (hash, tokens) units
  (``workloads.base.prefix_units``: Mooncake ``hash_ids``, a synthetic
  shared-prefix group; serve-router hashes the prompt text into 16-token
  blocks instead), chained like vLLM's block hashes
  (``engine.prefix_cache.chain_keys``), so a match is always a prefix. Each
  pod's index holds at most ``capacity_blocks`` KV blocks, least recently
  routed dropped first: the simulator sets it to the pod's KV cache size, so
  the index forgets roughly when the pod itself must evict; serve-router uses
  the upstream default ``lruCapacityPerServer`` 31,250.

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
``admission.kind: flow_control`` (llm-d EPP flow control, harness/sim/flow_control.py):
the same saturation test answers ``hold`` instead, and the caller keeps the
request in its flow queues until a later ``route`` finds room. Within one
refresh slot each request sent to a pod counts as one more waiting there, so a
freed pool whose pods all sit at the threshold takes queue_threshold requests per
pod per slot, not the whole queue at once on a stale snapshot. While one pod reads
below the threshold the pool has room, and every dispatch of the slot goes to the
best-scored pod of its snapshot, as many as are held (a newly ready pod can take
the whole queue); serve-router runs this picker on kwok and does the same, and
bounding it made the simulated HPA and KEDA scale less than the real ones
(docs/fidelity.md, "The one miss, and the real stack against itself").

Prefill/decode disaggregation (variants of ``role: prefill`` / ``decode``), as llm-d's
disagg-profile-handler runs its two scheduling profiles: the decode profile picks among the
model's ``decode`` and ``both`` pods first (the scorers above); then the P/D decider
(llm-d-inference-scheduler ``prefix-based-pd-decider``: with ``non_cached_tokens`` N > 0, a prompt
shorter than N, or whose part the chosen decode pod is not believed to hold is shorter than N, is
served decode-only; N = 0 always disaggregates) sends it through a prefill pod, picked by the same
scorers among the ``prefill`` pods. No ready prefill pod: decode-only (upstream's ProcessResults
keeps the decode result when the prefill profile fails). Admission looks at the whole pool, as the
EPP's saturation detector sees every endpoint of the InferencePool whatever its role: a request is
rejected (or held) only when every ready pod, prefill and decode alike, is saturated. The prefix
index remembers the prompt on both pods (the decode pod receives the prompt's KV).

In-flight tokens (llm-d EPP ``inflight-load-producer``, the series ``llm_d_epp_inflight_tokens``):
each routed request books its prompt tokens the target is not believed to hold (prompt - prefix
match) on every pod it was scheduled to (decode and, for P/D, prefill); the caller releases them
when the first token reaches the client (upstream: StartOfStream, with
addEstimatedOutputTokens false, its default) or when the request ends without one.
"""
from __future__ import annotations

import random
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Literal

from scalearena.harness.sim.engine.core import Engine
from scalearena.harness.sim.engine.prefix_cache import chain_keys
from scalearena.workloads.base import RequestSpec, prefix_units

PREFIX_LRU_BLOCKS = 31250  # llm-d approximate prefix scorer's default lruCapacityPerServer (blocks per server)
Units = tuple[tuple[int, int], ...]


@dataclass(eq=False)
class RoutedPod:
    """What the router needs of a pod: a name and an engine with ``load(now)``."""

    name: str
    engine: Any
    block_size: int = 16
    capacity_blocks: int = PREFIX_LRU_BLOCKS  # the prefix index's LRU capacity for this pod, KV blocks
    waiting: float = 0.0  # the last refreshed snapshot: waiting requests (a whole number) and KV usage,
    kv_usage: float = 0.0  # and the queue and KV scorers' weighted sum on it
    score: float = 0.0
    prefixes: OrderedDict = field(default_factory=OrderedDict)  # chained key -> blocks, least recent first
    indexed_blocks: int = 0
    sent: int = 0  # requests routed here in the current refresh slot (flow control's saturation test)
    owner: Any = None  # the backend's pod object
    role: str = "both"  # llm-d.ai/role: both | prefill | decode
    inflight_tokens: int = 0  # uncached prompt tokens routed here whose first token has not come back


class Booking:
    """The in-flight tokens one routed request booked, (pod, tokens) per target; released once."""

    __slots__ = ("items",)

    def __init__(self, items: tuple[tuple[RoutedPod, int], ...] = ()) -> None:
        self.items = items

    def release(self) -> None:
        """The first token reached the client (or the request ended without one); a no-op the second time."""
        for pod, n in self.items:
            pod.inflight_tokens = max(0, pod.inflight_tokens - n)
        self.items = ()


NO_BOOKING = Booking()


class Route:
    """The router's answer for one request (a slotted class: one is made per request routed, natively in
    the compiled build, where a named tuple is built by a Python call)."""

    __slots__ = ("kind", "pod", "scores", "prefill", "booked")

    def __init__(self, kind: Literal["pod", "reject", "queue", "hold"], pod: RoutedPod | None = None,
                 scores: dict[str, float] | None = None, prefill: RoutedPod | None = None,
                 booked: Booking = NO_BOOKING) -> None:
        self.kind = kind
        self.pod = pod  # the pod that decodes (and streams) the request
        self.scores = scores
        self.prefill = prefill  # P/D: the pod that prefills it first (None: served by ``pod`` alone)
        self.booked = booked  # in-flight tokens to release at the first token

    def __repr__(self) -> str:
        return f"Route(kind={self.kind!r}, pod={self.pod and self.pod.name!r}, prefill={self.prefill and self.prefill.name!r})"


QUEUE, REJECT, HOLD = Route("queue"), Route("reject"), Route("hold")  # immutable: one of each serves every request


class Router:
    def __init__(self, spec, seed: int = 0) -> None:  # spec: harness.config.scenario.RouterSpec
        self.spec = spec
        w, adm = spec.scorers, spec.admission
        # what every request reads of the spec, held as plain values (the compiled build reads them unboxed)
        self._refresh_s = float(spec.refresh_s)
        self._kv_t, self._q_t = float(adm.kv_threshold), float(adm.queue_threshold)
        self._wq, self._wkv, self._wpc = float(w.queue), float(w.kv_cache), float(w.prefix_cache)
        self._reject = adm.kind == "saturation"
        self._hold = adm.kind == "flow_control"
        self.rng = random.Random(seed)
        self._pods: dict[str, list[RoutedPod]] = {}  # model -> ready decode / both pods (insertion order)
        self._prefill: dict[str, list[RoutedPod]] = {}  # model -> ready prefill pods
        self._slot: dict[str, int] = {}
        self._scored: dict[str, tuple[list[int], bool]] = {}  # pool key -> its slot's _refresh
        self._index: dict[Any, dict[str, RoutedPod]] = {}  # prefix key -> pods believed to hold it

    # ---- membership -------------------------------------------------------------------------------
    def add_pod(self, model: str, pod: RoutedPod) -> None:
        pools, key = self._pool(model, pod.role)
        pools.setdefault(model, []).append(pod)
        self._slot.pop(key, None)

    def remove_pod(self, model: str, pod: RoutedPod) -> None:
        pools, key = self._pool(model, pod.role)
        pods = pools.get(model, [])
        if pod in pods:
            pods.remove(pod)
        pod.inflight_tokens = 0  # upstream prunes a removed endpoint's series (llm-d-router#2577)
        for k in pod.prefixes:
            holders = self._index.get(k)
            if holders is not None:
                holders.pop(pod.name, None)
                if not holders:
                    del self._index[k]
        pod.prefixes.clear()
        pod.indexed_blocks = 0
        self._slot.pop(key, None)

    def _pool(self, model: str, role: str) -> tuple[dict[str, list[RoutedPod]], str]:
        """The pods map and refresh key of a role's pool (decode and both pods share the model's)."""
        return (self._prefill, f"{model}\x00prefill") if role == "prefill" else (self._pods, model)

    def ready_pods(self, model: str) -> list[RoutedPod]:
        return self._pods.get(model, [])


    # ---- picking ----------------------------------------------------------------------------------
    def route(self, now: float, req: RequestSpec, units: Units | None = None) -> Route:
        """Pick a pod for ``req``; ``units`` overrides ``prefix_units(req)`` (serve-router's text blocks)."""
        pods = self._pods.get(req.model)
        if not pods:
            return QUEUE
        refreshed = self._refresh(now, req.model, pods)
        prefill = self._prefill.get(req.model)
        pf = self._refresh(now, f"{req.model}\x00prefill", prefill) if prefill else None
        if self._reject and refreshed[1] and (pf is None or pf[1]):
            return REJECT
        if self._hold and self.saturated(req.model):
            return HOLD
        if units is None:
            units = prefix_units(req)
        keys, sizes = chain_keys(units, 1) if units else ((), ())  # sizes: tokens per unit
        total = max(1, req.input_tokens, sum(sizes)) if keys else 1  # read by _pick with keys only
        pod = self._pick(pods, refreshed, keys, sizes, total)
        matched = self._matched(pod, keys, sizes) if keys else 0
        p_pod = None
        if pf is not None and prefill and self._disaggregate(req.input_tokens, matched):
            p_pod = self._pick(prefill, pf, keys, sizes, total)
        uncached = req.input_tokens - matched
        booked: list[tuple[RoutedPod, int]] = [(pod, uncached if uncached > 0 else 0)]
        if p_pod is not None:
            booked.append((p_pod, max(0, req.input_tokens - (self._matched(p_pod, keys, sizes) if keys else 0))))
        for target, n in booked:
            if keys:
                self._remember(target, keys, sizes)
            target.sent += 1
            target.inflight_tokens += n
        return Route("pod", pod, prefill=p_pod, booked=Booking(tuple(booked)))

    def _pick(self, pods: list[RoutedPod], refreshed: tuple[list[int], bool],
              keys: tuple[int, ...], sizes: tuple[int, ...], total: int) -> RoutedPod:
        """The highest weighted score of one pool (prefix affinity among the pods believed to hold the
        prompt's first unit), ties broken by the seeded random choice."""
        ties = refreshed[0]
        if keys and self._wpc > 0.0:
            cand: dict[int, float] = {}
            holders = self._index.get(keys[0])
            if holders:
                pos = {p.name: i for i, p in enumerate(pods)}
                for name, p in holders.items():
                    i = pos.get(name)
                    if i is not None:
                        cand[i] = pods[i].score + self._wpc * self._matched(p, keys, sizes) / total
            best = max([pods[ties[0]].score, *cand.values()])
            choice = sorted({i for i in ties if pods[i].score >= best} | {i for i, s in cand.items() if s >= best})
            return pods[choice[0] if len(choice) == 1 else self.rng.choice(choice)]
        return pods[ties[0] if len(ties) == 1 else self.rng.choice(ties)]

    def _disaggregate(self, prompt_tokens: int, matched: int) -> bool:
        """prefix-based-pd-decider: P/D unless the prompt or its part not cached on the decode pod is short."""
        n = self.spec.disaggregation.non_cached_tokens
        return n <= 0 or (prompt_tokens >= n and prompt_tokens - matched >= n)

    def saturated(self, model: str) -> bool:
        """Flow control's saturation detector: every ready pod at waiting (plus what this slot sent it)
        >= queue_threshold or KV usage >= kv_threshold (on the last refreshed snapshot), decode and
        prefill pods alike."""
        kv_t, q_t = self._kv_t, self._q_t

        def full(pods: list[RoutedPod]) -> bool:
            return all(p.waiting + p.sent >= q_t or p.kv_usage >= kv_t for p in pods)

        prefill = self._prefill.get(model)
        return full(self._pods.get(model, [])) and (not prefill or full(prefill))

    def _refresh(self, now: float, model: str, pods: list[RoutedPod]) -> tuple[list[int], bool]:
        """One pool's snapshot, scored: (the indexes of the pods at the top score, all saturated); each pod
        keeps its own snapshot and score (``model`` is the pool's key: the model, or its prefill pool's)."""
        slot = int(now / self._refresh_s)
        if self._slot.get(model) == slot:
            return self._scored[model]
        kv_t, q_t = self._kv_t, self._q_t
        qmin = qmax = 0.0
        all_sat = True
        n = len(pods)
        for i in range(n):  # one pass: snapshot, queue range, saturation (indexed loops, not zip / max /
            p = pods[i]  # enumerate: the compiled build runs them without Python calls or boxed floats)
            eng = p.engine
            # the simulator's engines: a direct call (compiled); any other (serve-router's endpoints, tests'
            # fakes) through its ``load``
            raw: tuple[int, int, float]
            if isinstance(eng, Engine):
                raw = eng.load(now)
            else:
                raw = eng.load(now)
            p.sent = 0
            # the waiting count is a whole number: as a float its differences and quotients are the int's
            q = p.waiting = float(raw[0])
            kv = p.kv_usage = float(raw[2])
            if i == 0 or q < qmin:
                qmin = q
            if i == 0 or q > qmax:
                qmax = q
            if all_sat and kv < kv_t and q < q_t:
                all_sat = False
        span = qmax - qmin
        wq, wkv = self._wq, self._wkv
        top = 0.0
        for i in range(n):
            p = pods[i]
            b = p.score = wq * (1.0 if span == 0.0 else (qmax - p.waiting) / span) + wkv * (1.0 - p.kv_usage)
            if i == 0 or b > top:
                top = b
        ties = [i for i in range(n) if pods[i].score >= top - 1e-12]
        out = (ties, all_sat)
        self._slot[model], self._scored[model] = slot, out
        return out

    # ---- prefix affinity --------------------------------------------------------------------------
    @staticmethod
    def _matched(pod: RoutedPod, keys: tuple[int, ...], sizes: tuple[int, ...]) -> int:
        """Prompt tokens of the longest chain of units the pod's index holds."""
        matched = 0
        for k, n in zip(keys, sizes, strict=True):
            if k not in pod.prefixes:
                break
            matched += n
        return matched

    def _remember(self, pod: RoutedPod, keys: tuple[int, ...], sizes: tuple[int, ...]) -> None:
        lru = pod.prefixes
        for k, n in zip(reversed(keys), reversed(sizes), strict=True):  # the chain's head ends most recent
            if k in lru:
                lru.move_to_end(k)
            else:
                blocks = max(1, n // pod.block_size)
                lru[k] = blocks
                pod.indexed_blocks += blocks
                self._index.setdefault(k, {})[pod.name] = pod
        while pod.indexed_blocks > pod.capacity_blocks and len(lru) > 1:
            old, blocks = lru.popitem(last=False)
            pod.indexed_blocks -= blocks
            holders = self._index.get(old)
            if holders is not None:
                holders.pop(pod.name, None)
                if not holders:
                    del self._index[old]
