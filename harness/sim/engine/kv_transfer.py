"""Prefill/decode disaggregation inside one engine: vLLM's KV connector (NixlConnector) semantics.

A mixin of ``core.Engine`` (it works on the engine's private state), kept apart so the P/D
bookkeeping reads on its own. The two sides, as vLLM v1 runs them with ``kv_transfer_params``
(vllm/distributed/kv_transfer/kv_connector/v1/nixl_connector.py):

- **Prefill side** (``submit(..., do_remote_decode=True)``, the llm-d sidecar's prefill request
  with ``max_tokens: 1``): the request is prefilled and finishes after its one token, but its
  prompt's KV blocks are *not* freed (``request_finished`` returns ``delay_free_blocks``): they
  stay allocated, out of the running batch, until the decode side has read them
  (``release_kv``) or ``VLLM_NIXL_ABORT_REQUEST_TIMEOUT`` (480 s by default) has passed since the
  prefill finished. Kept blocks count in KV usage, so a prefill pod whose decode side is slow to
  pull runs out of KV room for new prompts.
- **Decode side** (``submit(..., do_remote_prefill=True)``): the request waits FCFS like any
  other; when admitted (``max_num_seqs`` room and free blocks for its whole prompt), it holds the
  blocks in state LOADING and the engine emits a ``kv_pull`` event whose ``tokens`` are the prompt
  tokens to read from the prefill pod (``get_num_new_matched_tokens``: the prompt minus what the
  decode pod's own prefix cache already holds). The caller moves the bytes (the simulator's link
  model, serve-engine's timer) and calls ``kv_loaded``; then, as vLLM's scheduler does
  (``num_computed_tokens = prompt - 1``), the last prompt token is computed in the next step and
  its sample is the first output token the client sees. With the constant latency model the first
  token comes as the load completes (llm-d-inference-sim: a remote-prefill request's TTFT is the
  KV transfer time alone). A LOADING request is reported as waiting (vLLM keeps it in the waiting
  queue as WAITING_FOR_REMOTE_KVS), is never a preemption victim, and takes a ``max_num_seqs``
  slot (vLLM does not count it among the running; a deviation of at most the loads in flight).
"""
from __future__ import annotations

from heapq import heappop, heappush
from typing import Any, Final

from scalearena.harness.sim.engine.event import EngineEvent

LOADING: Final = 3  # engine state of a decode-side request whose prompt KV is being read from a prefill pod
NIXL_ABORT_REQUEST_TIMEOUT_S: Final = 480.0  # vLLM envs.VLLM_NIXL_ABORT_REQUEST_TIMEOUT default


class KVTransferMixin:
    """Kept KV (prefill side) and remote loads (decode side). Needs ``core.Engine``'s state."""

    kv_hold_timeout_s: float
    _kept: dict[int, tuple[Any, float]]  # rid -> (seq, expiry): prompt KV kept for a remote decode
    _kept_blocks: int
    _kept_heap: list[tuple[float, int]]  # (expiry, rid)
    _loading: int  # decode-side requests in LOADING
    running: dict[int, Any]
    seqs: dict[int, Any]
    shared: bool
    _pf_queue: Any
    _pf_heap: list
    _out: list

    def holds_kv(self, rid: int) -> bool:
        """True while the prefill side still keeps ``rid``'s prompt KV for a remote decode."""
        return rid in self._kept

    def release_kv(self, now: float, rid: int) -> bool:
        """The decode side has read ``rid``'s KV (or given up on it): free the kept blocks. False if
        nothing was kept (already released, expired, or never kept)."""
        self._run_until(now)  # type: ignore[attr-defined]
        if not self._drop_kept(rid):
            return False
        self._admit(now)  # type: ignore[attr-defined]
        self._reschedule()  # type: ignore[attr-defined]
        return True

    def kv_loaded(self, now: float, rid: int) -> bool:
        """The remote prompt KV of LOADING request ``rid`` has arrived: compute its last prompt token
        in the next step (roofline) or emit its first token now (constant). False if ``rid`` is not
        loading (aborted meanwhile)."""
        self._run_until(now)  # type: ignore[attr-defined]
        s = self.seqs.get(rid)
        if s is None or s.state != LOADING:
            return False
        self._loading -= 1
        s.state = 1  # PREFILL
        s.epoch += 1
        if self.shared:
            s.todo, s.done = 1, s.prompt - 1
            self._pf_queue.append(s)
        else:
            heappush(self._pf_heap, (now, s.order, s.epoch, s))
        self._admit(now)  # type: ignore[attr-defined]
        self._reschedule()  # type: ignore[attr-defined]
        return True

    # ---- hooks the engine calls --------------------------------------------------------------------
    def _keep(self, s: Any, te: float) -> None:
        """A do_remote_decode request finished its prefill: keep its prompt blocks (and its prefix-cache
        references) until the decode side reads them or the abort timeout passes."""
        expiry = te + self.kv_hold_timeout_s
        self._kept[s.rid] = (s, expiry)
        self._kept_blocks += s.held
        heappush(self._kept_heap, (expiry, s.rid))

    def _drop_kept(self, rid: int) -> bool:
        entry = self._kept.pop(rid, None)
        if entry is None:
            return False
        s = entry[0]
        self._kept_blocks -= s.held
        self._release(s)  # type: ignore[attr-defined]
        return True

    def _expire_kept(self, te: float) -> None:
        heap = self._kept_heap
        while heap and heap[0][0] <= te:
            expiry, rid = heappop(heap)
            entry = self._kept.get(rid)
            if entry is not None and entry[1] == expiry:
                self._drop_kept(rid)

    def _next_expiry(self) -> float:
        heap, kept = self._kept_heap, self._kept
        while heap and (heap[0][1] not in kept or kept[heap[0][1]][1] != heap[0][0]):
            heappop(heap)
        return heap[0][0] if heap else float("inf")

    def _begin_load(self, s: Any, now: float, cached: int) -> None:
        """Admission of a do_remote_prefill request: hold its blocks, ask the caller for the KV."""
        s.state = LOADING
        s.remote_prefill = False  # one transfer per request (vLLM clears do_remote_prefill at allocation)
        self._loading += 1
        self._out.append(EngineEvent("kv_pull", s.rid, now, max(0, s.prompt - cached)))

    def _clear_kept(self) -> None:
        for s, _ in self._kept.values():
            self._release(s)  # type: ignore[attr-defined]
        self._kept.clear()
        self._kept_heap.clear()
        self._kept_blocks = 0
