"""Prefill/decode disaggregation in the simulator: one request, two pods, one KV transfer.

A mixin of ``loop.Simulation`` (next to requests.RequestFlow and pods.PodLifecycle), playing the
part of llm-d's routing sidecar on the decode pod (llm-d-inference-scheduler
pkg/sidecar/proxy/connector_nixlv2.go) and of vLLM's NixlConnector between the two engines:

1. the router picked a decode pod D and a prefill pod P; the request is in flight on D from the
   start (the sidecar holds the client's connection) and on P while P works for it;
2. P prefills it as a ``max_tokens: 1`` request with ``do_remote_decode`` and keeps the prompt's KV
   blocks when it finishes; that token is never streamed (the sidecar discards the prefill's
   response, keeping only its kv_transfer_params);
3. the sidecar sends the original request to D with ``do_remote_prefill``: it waits in D's queue
   until D has a slot and KV room for the whole prompt, then D reads the KV: the bytes (the
   prompt's blocks D's prefix cache lacks x ``kv_bytes_per_token``) go over P's KV link,
   ``cluster.kv_transfer.bandwidth_gbps``, first come first served among P's transfers, plus
   ``latency_ms``; at the end P frees the blocks and D computes the last prompt token;
4. the first token the client sees is D's (TTFT = arrival -> D's first token: P's queue and
   prefill, D's queue, the transfer, one D step); ITL and the output are D's alone.

Failures are accounted once (``record`` ignores a second outcome) and the other pod is cleaned
up: D killed -> the request fails (killed or error, as D's cause), P aborts a prefill in
progress, and KV P already keeps stays until its abort timeout (no decode side is left to notify
it: vLLM frees it after VLLM_NIXL_ABORT_REQUEST_TIMEOUT); P killed while it prefills or keeps the
KV -> the request fails with P's cause (the decode side's read would fail: vLLM's default
kv_load_failure_policy ``fail``), D drops it; KV expired on P before D got to read it -> error
500; the client gives up -> both pods drop it (D's abort notifies P, which frees the KV).
"""
from __future__ import annotations

import math
from typing import Any

from mypy_extensions import trait

from scalearena.harness.config.disagg_spec import kv_bytes_per_token
from scalearena.harness.sim.engine.cluster import GONE, Pod
from scalearena.harness.sim.engine.core import SubmitResult
from scalearena.harness.sim.events import KV_DONE
from scalearena.harness.sim.state import SimState


@trait
class Handoff(SimState):
    """The P/D path of a request. Needs the Simulation's state (see loop.Simulation)."""

    sc: Any
    _kv_bytes: dict[str, int]  # prefill variant -> KV bytes per token

    def kv_sizes(self) -> dict[str, int]:
        """KV bytes per token of every prefill variant (``kv_transfer.kv_bytes_per_token`` first)."""
        fixed = self.sc.cluster.kv_transfer.kv_bytes_per_token
        return {v.name: fixed or kv_bytes_per_token(v) or 0 for v in self.sc.cluster.variants if v.role == "prefill"}

    def start_pd(self, t: float, req: Any, decode: Pod, prefill: Pod) -> None:
        """Step 2: the sidecar's prefill request (max_tokens 1, do_remote_decode) to P."""
        spec = req.spec
        req.pod, req.prefill_pod = decode, prefill
        res = prefill.engine.submit(t, spec.request_id, spec.input_tokens, 1, t, req.units,
                                    do_remote_decode=True)
        if res is SubmitResult.ACCEPTED:
            decode.inflight[spec.request_id] = req
            prefill.inflight[spec.request_id] = req
        else:  # the sidecar answers the client with the prefill's status
            self.record(req, t, "rejected" if res is SubmitResult.REJECTED_FULL else "too_long",
                        429 if res is SubmitResult.REJECTED_FULL else 400, 0)
        self.drain(prefill, t)

    def prefill_done(self, t: float, req: Any) -> None:
        """Step 3: P finished (its KV kept): the original request goes to D's queue."""
        spec, decode = req.spec, req.pod
        if req.done or decode.state == GONE:
            return
        res = decode.engine.submit(t, spec.request_id, spec.input_tokens, spec.output_tokens, t, req.units,
                                   do_remote_prefill=True)
        if res is not SubmitResult.ACCEPTED:  # D's API turned it away: it never tells P, whose KV stays kept
            full = res is SubmitResult.REJECTED_FULL
            self.end_pd(t, req, "rejected" if full else "too_long", 429 if full else 400, notify=False)
            return
        self.drain(decode, t)

    def kv_pull(self, t: float, req: Any, tokens: int) -> None:
        """D admitted the request and reads ``tokens`` prompt tokens of KV from P over P's link."""
        prefill, rid = req.prefill_pod, req.spec.request_id
        if prefill is None or not prefill.engine.holds_kv(rid):  # expired on P: the read fails
            self.end_pd(t, req, "error", 500)
            return
        kv = self.sc.cluster.kv_transfer
        bs = prefill.engine.bs
        nbytes = math.ceil(tokens / bs) * bs * self._kv_bytes[prefill.variant]
        if nbytes:
            start = max(t, prefill.link_free_s)
            prefill.link_free_s = start + nbytes * 8.0 / (kv.bandwidth_gbps * 1e9)
            done = prefill.link_free_s + kv.latency_ms / 1000.0
        else:  # D's prefix cache held the whole prompt: only the notice that frees P's blocks
            done = t + kv.latency_ms / 1000.0
        self.push(done, KV_DONE, req)

    def on_kv_done(self, t: float, req: Any) -> None:
        """The KV is on D: P frees it, D computes the last prompt token."""
        if req.done:
            return
        prefill, decode, rid = req.prefill_pod, req.pod, req.spec.request_id
        prefill.engine.release_kv(t, rid)
        prefill.inflight.pop(rid, None)
        self.drain(prefill, t)
        if decode.engine.kv_loaded(t, rid):
            self.drain(decode, t)

    def end_pd(self, t: float, req: Any, status: str, http: int, notify: bool = True) -> None:
        """The request fails on D's side (rejected, too long, KV lost, client gone): record it, drop it
        from both pods; ``notify``: D's engine had it, so its abort tells P to free the KV."""
        rid = req.spec.request_id
        decode = req.pod
        tokens = decode.engine.abort(t, rid) or 0
        decode.inflight.pop(rid, None)
        self.record(req, t, status, http, tokens)
        self.leave_partner(t, req, decode, notify)

    def leave_partner(self, t: float, req: Any, pod: Pod, notify: bool) -> None:
        """``req`` ended on ``pod`` (recorded already): drop it from the other pod of its P/D pair;
        ``notify``: the decode side lives on to tell P to free kept KV (else P keeps it until its
        abort timeout)."""
        prefill = req.prefill_pod
        if prefill is None:
            return
        rid, decode = req.spec.request_id, req.pod
        other = decode if pod is prefill else prefill
        if rid not in other.inflight:
            return
        del other.inflight[rid]
        if other is decode:
            other.engine.abort(t, rid)
        elif rid in other.engine.seqs:
            other.engine.abort(t, rid)  # the sidecar's prefill connection is gone: vLLM aborts it
        elif notify:
            other.engine.release_kv(t, rid)  # D's abort notifies P (nixl_connector request_finished)
        # else: no decode side will read or release it; P keeps the blocks until its abort timeout
        self.drain(other, t)
