"""The hand-off between the harness and the Locust process: schedule in, records out.

Locust runs in its own process because importing it monkey-patches the
standard library for gevent, which the harness (threads, subprocesses,
asyncio servers) must not have. This module is the only thing both sides
share, and it imports neither locust nor gevent.

* The **schedule** is the run's request stream (``workloads.generate``), one
  JSON line per ``RequestSpec``, written by the harness before the load
  starts. The Locust user sends exactly these requests at exactly these
  scheduled times (open loop).
* The **records** are one JSON line per request, appended by the Locust user
  as each request ends, so a run cut short keeps every finished request.
  Times in records are scenario seconds since the run start (wall seconds x
  time scale); ``lag_ms`` (actual minus scheduled send) is in wall ms — the
  load generator's own precision, which the time scale does not change.
* **Several load processes** (Locust's master/worker mode) split the
  schedule deterministically: worker ``i`` of ``N`` sends exactly the
  requests with ``request_id % N == i`` and writes ``records-<i>.jsonl``;
  ``merge_records`` joins the files and reports any request id found twice.
  They share one start: each worker writes its ready marker
  (``ready_marker``) once its user runs, and waits for the start file, which
  the harness writes with scenario time 0 (``t0``) when every marker is
  there, so a slow worker import cannot shift one worker's schedule.
"""
from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scalearena.contracts.records import RequestRecord
from scalearena.workloads.base import RequestSpec

# Environment variables the Locust user reads (library mode and `locust -f` alike).
ENV_SCHEDULE = "SCALEARENA_SCHEDULE"  # schedule JSONL path
ENV_RECORDS = "SCALEARENA_RECORDS"  # records JSONL path ({worker} is replaced by the worker index)
ENV_T0 = "SCALEARENA_T0"  # wall-clock epoch seconds of scenario time 0
ENV_TIME_SCALE = "SCALEARENA_TIME_SCALE"  # scenario seconds per wall second
ENV_TIMEOUT_S = "SCALEARENA_TIMEOUT_S"  # client timeout per request, scenario seconds
ENV_WORKER_INDEX = "SCALEARENA_WORKER_INDEX"  # this process's share: request_id % count == index
ENV_WORKER_COUNT = "SCALEARENA_WORKER_COUNT"
ENV_END_S = "SCALEARENA_END_S"  # run end (duration + drain), scenario seconds: in flight then = timeout
ENV_START_FILE = "SCALEARENA_START_FILE"  # several workers: t0 comes from this JSON file, not ENV_T0
ENV_API = "SCALEARENA_API"  # completions | chat
ENV_PROMPT = "SCALEARENA_PROMPT"  # words (prompt of N words) | field (extension field only)

PROMPT_TOKENS_FIELD = "scalearena_prompt_tokens"  # explicit prompt length, wins over counting words
REQUEST_ID_HEADER = "x-request-id"
# the harness's own readiness request (kube/honesty.py): served like any other, but left out of the gateway's
# request metrics (EPP latency histograms, objective counters), which the workload's autoscalers read: a 1-token
# probe's NTPOT (its whole e2e) put llm-d-slo's P90 at 19x its SLO for the first minute of every kwok run
PROBE_HEADER = "x-scalearena-probe"
FAIRNESS_HEADER = "x-gateway-inference-fairness-id"  # llm-d flow control's fairness id (the tenant)
PRIORITY_HEADER = "x-scalearena-priority"  # flow control's priority (llm-d: the InferenceObjective's)
POD_HEADER = "x-scalearena-pod"
VARIANT_HEADER = "x-scalearena-variant"
PREFILL_POD_HEADER = "x-scalearena-prefill-pod"  # P/D: the pod that prefilled the request (serve-router)


def request_headers(spec: RequestSpec) -> dict[str, str]:
    """What the load generator sends besides the body: the request id, and the flow-control tags
    (tenant as llm-d's fairness id, priority) when the workload sets them."""
    headers = {REQUEST_ID_HEADER: str(spec.request_id)}
    if spec.tenant:
        headers[FAIRNESS_HEADER] = spec.tenant
    if spec.priority:
        headers[PRIORITY_HEADER] = str(spec.priority)
    return headers


def spec_to_json(spec: RequestSpec) -> str:
    d = spec._asdict()
    d["hash_ids"] = list(spec.hash_ids)
    return json.dumps(d, separators=(",", ":"))


def spec_from_json(line: str) -> RequestSpec:
    d = json.loads(line)
    d["hash_ids"] = tuple(d.get("hash_ids", ()))
    return RequestSpec(**d)


def write_schedule(path: Path, specs: Iterable[RequestSpec]) -> int:
    n = 0
    with open(path, "w", encoding="utf-8") as f:
        for spec in specs:
            f.write(spec_to_json(spec) + "\n")
            n += 1
    return n


def read_schedule(path: Path, worker_index: int = 0, worker_count: int = 1) -> Iterator[RequestSpec]:
    """This worker's share of the schedule, in send order (request_id % count == index)."""
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                spec = spec_from_json(line)
                if worker_of(spec.request_id, worker_count) == worker_index:
                    yield spec


def worker_of(request_id: int, worker_count: int) -> int:
    """The worker that sends this request: the schedule's deterministic split."""
    return request_id % worker_count


def ready_marker(start_file: Path, worker_index: int) -> Path:
    """The file worker ``worker_index`` creates once its user runs and waits for the start."""
    return start_file.with_name(f"{start_file.name}.ready-{worker_index}")


def write_start(start_file: Path, t0: float) -> None:
    """Hand every waiting worker scenario time 0 (epoch seconds), atomically (temp + rename)."""
    tmp = start_file.with_name(start_file.name + ".tmp")
    tmp.write_text(json.dumps({"t0": t0}), encoding="utf-8")
    tmp.replace(start_file)


def read_start(start_file: Path) -> float | None:
    """The start file's t0, or None while it is not written."""
    try:
        return float(json.loads(start_file.read_text(encoding="utf-8"))["t0"])
    except (FileNotFoundError, ValueError, KeyError, TypeError):
        return None


def record_index(path: Path) -> int:
    """The worker index in ``records-<index>.jsonl`` (-1 for another name): files sort numerically."""
    tail = Path(path).stem.rpartition("-")[2]
    return int(tail) if tail.isdigit() else -1


def merge_records(paths: Iterable[Path]) -> tuple[dict[int, dict[str, Any]], list[int]]:
    """Every finished request from the records files, by request_id, and the ids reported more than once.

    Files are read in worker order (a torn last line is skipped); a duplicate keeps the first worker's
    row. With the deterministic split no id can come from two workers, so a duplicate is a defect of
    the load generator, which the caller reports rather than hides.
    """
    out: dict[int, dict[str, Any]] = {}
    dup: list[int] = []
    for p in sorted((Path(x) for x in paths), key=lambda x: (record_index(x), str(x))):
        if not p.is_file():
            continue
        with open(p, encoding="utf-8") as f:
            for line in f:
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:
                    continue
                rid = int(row["request_id"])
                if rid in out:
                    dup.append(rid)
                else:
                    out[rid] = row
    return out, sorted(dup)


def read_records(paths: Iterable[Path]) -> dict[int, dict[str, Any]]:
    """Every finished request from the records files, by request_id (see ``merge_records``)."""
    return merge_records(paths)[0]


RECORD_FIELDS = {
    "request_id",
    "model",
    "arrival_s",
    "first_token_s",
    "end_s",
    "input_tokens",
    "output_tokens",
    "status",
    "http_status",
    "variant",
    "pod",
    "ttft_ms",
    "itl_ms",
    "e2e_ms",
    "scheduled_s",
    "requested_output_tokens",
    "prefill_pod",
}


def to_request_record(row: dict[str, Any]) -> RequestRecord:
    return RequestRecord(**{k: v for k, v in row.items() if k in RECORD_FIELDS})


def unsent_record(spec: RequestSpec, end_s: float, status: str = "error") -> RequestRecord:
    """A scheduled request the load generator never reported (it died, or the run was cut short).

    It is still accounted for: ``error`` when the load generator failed, with no send time.
    """
    return RequestRecord(
        request_id=spec.request_id,
        model=spec.model,
        arrival_s=spec.arrival_s,
        first_token_s=None,
        end_s=max(end_s, spec.arrival_s),
        input_tokens=spec.input_tokens,
        output_tokens=0,
        status=status,
        http_status=0,
        variant=None,
        pod=None,
        ttft_ms=None,
        itl_ms=None,
        e2e_ms=max(end_s - spec.arrival_s, 0.0) * 1000.0,
        scheduled_s=spec.arrival_s,
        requested_output_tokens=spec.output_tokens,
    )


# ---- how one streamed response becomes a record (the Locust user reads it; tested without Locust) ----
@dataclass
class Stream:
    """One response as it streams: status (error until [DONE]), first and last content chunk wall times,
    content chunks, the server's completion_tokens (None until its usage chunk)."""

    status: str = "error"
    first: float | None = None
    last: float | None = None
    chunks: int = 0
    usage_tokens: Any = None


def read_stream(raw: Any, rec: dict[str, Any], st: Stream) -> None:
    """Read an OpenAI SSE body to its end into ``st``; the server's prompt_tokens go into ``rec``."""
    st.status = "error"  # until [DONE] arrives
    while True:
        line = raw.readline(b"\n")
        if not line:
            break  # stream ended without [DONE]: cut off
        if not line.startswith(b"data:"):
            continue
        data = line[5:].strip()
        if data == b"[DONE]":
            st.status = "ok"
            break
        msg = json.loads(data)
        if "error" in msg:
            st.status = "killed" if msg["error"].get("type") == "killed" else "error"
            break
        if msg.get("usage"):
            st.usage_tokens = msg["usage"].get("completion_tokens")
            rec["server_prompt_tokens"] = msg["usage"].get("prompt_tokens")
        if any(carries_tokens(c) for c in msg.get("choices") or ()):
            now = time.time()
            st.first = st.first if st.first is not None else now
            st.last = now
            st.chunks += 1


def carries_tokens(choice: dict[str, Any]) -> bool:
    """A streamed choice with generated output: text (completions), or content, reasoning or a tool call
    (chat). llm-d-inference-sim v0.10.2 ends every stream with a chunk of its own holding only the
    ``finish_reason`` (text ""); counted, it made n + 1 chunks of n tokens and every ITL (last - first) / n,
    about one part in n too short (0.8 % at 128 tokens: docs/fidelity.md)."""
    if choice.get("text"):
        return True
    delta = choice.get("delta") or {}
    return bool(delta.get("content") or delta.get("reasoning_content") or delta.get("tool_calls"))


def finish_record(rec: dict[str, Any], cfg: Any, st: Stream, end: float) -> None:
    """Times in scenario seconds, latencies in scenario ms, tokens as the server counted them (else chunks)."""
    rec["status"] = st.status
    rec["end_s"] = cfg.scen(end)
    rec["e2e_ms"] = (rec["end_s"] - rec["arrival_s"]) * 1000.0
    if st.first is not None:
        rec["first_token_s"] = cfg.scen(st.first)
        rec["ttft_ms"] = (rec["first_token_s"] - rec["arrival_s"]) * 1000.0
        if st.chunks > 1 and st.last is not None:
            rec["itl_ms"] = (st.last - st.first) * cfg.time_scale * 1000.0 / (st.chunks - 1)
    ok = st.usage_tokens is not None and st.status == "ok"
    rec["output_tokens"] = int(st.usage_tokens) if ok else st.chunks


def locustfile() -> str:
    """The open-loop user's file (workloads/locust_user.py), for ``locust -f``: master and workers import it,
    on the host (harness/local/locust_process.py) and in the cluster's load pod (workloads/locust_incluster.py)."""
    import importlib.util

    spec = importlib.util.find_spec("scalearena.workloads.locust_user")
    if spec is None or spec.origin is None:
        raise RuntimeError("scalearena.workloads.locust_user is not importable: is scalearena installed here?")
    return spec.origin

