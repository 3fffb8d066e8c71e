"""Open-loop Locust user: sends the run's requests at their scheduled times.

Locust's users are closed loops (send, wait, send). Autoscaler benchmarks need
an open loop: arrivals must not slow down when the server does, or a slow
autoscaler is rewarded with less traffic. So one ``OpenLoopUser`` walks the
schedule (the same ``RequestSpec`` stream the simulator consumes), sleeps
until each request's scheduled wall time and fires it in its own greenlet;
nothing waits for a response before the next send.

Each request is an OpenAI streaming completion (``stream: true``,
``stream_options.include_usage``) with ``max_tokens`` = output tokens,
``ignore_eos`` and a prompt of N whitespace-separated words (workloads/prompts.py: the
group's shared prefix, one word unique to the request, filler; the scalearena
engine counts one token per word, so llm-d-inference-sim or vLLM can be
swapped in), or the ``scalearena_prompt_tokens`` extension field.
Per request it records: scheduled and actual send time (the lag), TTFT (first
content chunk), ITL (mean gap between content chunks after the first: load_handoff.read_stream), tokens, final
status, and the pod / variant that served it (router response headers).

Run it two ways (both read the SCALEARENA_* variables, see
workloads/load_handoff.py):
* library mode, what the local backend does with one process:
  ``python -m scalearena.workloads.locust_user --host URL --csv PREFIX``
* Locust's own master/worker mode, beyond one process's capacity (what the
  local backend starts with ``--backend-option locust_workers=N``, see
  harness/local/locust_process.py; by hand: docs/local.md):
  ``locust -f workloads/locust_user.py --headless --master ...`` plus workers
  with distinct SCALEARENA_WORKER_INDEX. The master hands each worker one
  user; the user sends that worker's share of the schedule. When a worker
  quits, Locust's master re-dispatches its user to a worker still running;
  that second user in a process sends nothing (``OpenLoopUser.dispatched``),
  so no request goes out twice.

Start: with SCALEARENA_START_FILE (what harness/local/locust_process.py
sets) a user touches its ready marker and waits for the harness to write
scenario time 0 into that file; without it, SCALEARENA_T0 fixes time 0 (by
hand).

Importing this module imports locust, which monkey-patches the standard
library for gevent: never import it from the harness process.
"""
from __future__ import annotations

import json
import os
import resource
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import gevent
from gevent.pool import Group
from locust import FastHttpUser, events, task
from locust.exception import StopUser

from scalearena.workloads import load_handoff as load
from scalearena.workloads.prompts import prompt_text


class RunEnded(Exception):
    """Raised in a request's greenlet when the run ends with it still in flight (status timeout)."""


class Settings:
    """What the SCALEARENA_* environment says (read once per process)."""

    def __init__(self, env: dict[str, str] | None = None) -> None:
        e = os.environ if env is None else env
        self.schedule = Path(e[load.ENV_SCHEDULE])
        self.worker_index = int(e.get(load.ENV_WORKER_INDEX, "0"))
        self.worker_count = int(e.get(load.ENV_WORKER_COUNT, "1"))
        self.records = Path(e.get(load.ENV_RECORDS, "records-{worker}.jsonl").replace("{worker}", str(self.worker_index)))
        start = e.get(load.ENV_START_FILE)
        self.start_file = Path(start) if start else None  # t0 from this file, once every worker is ready
        self.t0 = float(e.get(load.ENV_T0, "0")) or time.time() + 0.5
        self.time_scale = float(e.get(load.ENV_TIME_SCALE, "1"))
        self.timeout_s = float(e.get(load.ENV_TIMEOUT_S, "120"))
        self.api = e.get(load.ENV_API, "completions")
        self.prompt = e.get(load.ENV_PROMPT, "words")
        self.end_s = float(e.get(load.ENV_END_S, "inf"))  # run end (duration + drain), scenario seconds

    def wait_for_start(self, limit_s: float = 600.0) -> bool:
        """With a start file: say this worker is ready, then wait (gevent) until the harness writes t0.
        False when it never comes (the harness gave up on another worker)."""
        if self.start_file is None:
            return True
        load.ready_marker(self.start_file, self.worker_index).touch()
        deadline = time.time() + limit_s
        while (t0 := load.read_start(self.start_file)) is None:
            if time.time() > deadline:
                return False
            gevent.sleep(0.01)
        self.t0 = t0
        return True

    def scen(self, wall: float) -> float:
        """Wall epoch seconds -> scenario seconds since the run start."""
        return (wall - self.t0) * self.time_scale


class OpenLoopUser(FastHttpUser):
    """One per process: dispatches the whole schedule, then stops the runner."""

    concurrency = 8192  # connections in the pool: an open loop may hold thousands of streams
    network_timeout = 600.0
    connection_timeout = 10.0
    settings: Settings | None = None
    dispatched = False  # this process's share went out (a re-dispatched second user sends nothing)

    def on_start(self) -> None:
        if OpenLoopUser.settings is None:
            OpenLoopUser.settings = Settings()
        self.cfg = OpenLoopUser.settings
        self.cfg.records.parent.mkdir(parents=True, exist_ok=True)
        self.out = open(self.cfg.records, "a", encoding="utf-8", buffering=1)  # noqa: SIM115  line-buffered
        self.inflight = Group()

    def on_stop(self) -> None:
        self.out.close()

    @task
    def run_schedule(self) -> None:
        cfg = self.cfg
        if OpenLoopUser.dispatched:
            raise StopUser()
        OpenLoopUser.dispatched = True
        if not cfg.wait_for_start():
            self._quit()
            raise StopUser()
        for spec in load.read_schedule(cfg.schedule, cfg.worker_index, cfg.worker_count):
            due = cfg.t0 + spec.arrival_s / cfg.time_scale
            delay = due - time.time()
            if delay > 0:
                gevent.sleep(delay)
            self.inflight.spawn(self.send, spec, due)
        # wait for the last responses, at most until the run ends (scenario end) or the client timeout
        last_due = time.time()
        end_wall = min(cfg.t0 + cfg.end_s / cfg.time_scale, last_due + cfg.timeout_s / cfg.time_scale + 1.0)
        self.inflight.join(timeout=max(0.0, end_wall - time.time()))
        self.inflight.kill(exception=RunEnded, block=True, timeout=10.0)  # still in flight at the end: timeout
        self._quit()
        raise StopUser()

    def _quit(self) -> None:
        """This process is done: library mode stops; a worker tells the master (the last one ends the run)."""
        self.out.flush()
        runner = self.environment.runner
        if runner is None:
            return
        # a worker's quit does not send the stats of its last report interval (3 s): send them first, so the
        # master's CSV counts every request (WorkerRunner._send_stats, what the worker does on the master's quit)
        final_report = getattr(runner, "_send_stats", None)
        if callable(final_report) and getattr(runner, "client", None) is not None:
            final_report()
        gevent.spawn_later(0.1, runner.quit)

    # -- one request ---------------------------------------------------------------------------------
    def body(self, spec: Any) -> tuple[str, dict[str, Any]]:
        common: dict[str, Any] = {
            "model": spec.model,
            "max_tokens": spec.output_tokens,
            "ignore_eos": True,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if self.cfg.prompt == "field":
            common[load.PROMPT_TOKENS_FIELD] = spec.input_tokens
            text = "w"
        else:
            text = prompt_text(spec)
        if self.cfg.api == "chat":
            return "/v1/chat/completions", {**common, "messages": [{"role": "user", "content": text}]}
        return "/v1/completions", {**common, "prompt": text}

    def send(self, spec: Any, due_wall: float) -> None:
        cfg = self.cfg
        path, body = self.body(spec)
        rec: dict[str, Any] = {
            "request_id": spec.request_id, "model": spec.model, "scheduled_s": spec.arrival_s,
            "input_tokens": spec.input_tokens, "requested_output_tokens": spec.output_tokens, "output_tokens": 0,
            "first_token_s": None, "variant": None, "pod": None, "ttft_ms": None, "itl_ms": None, "http_status": 0,
        }
        sent = time.time()
        rec["arrival_s"] = cfg.scen(sent)
        rec["lag_ms"] = (sent - due_wall) * 1000.0
        st = load.Stream()  # updated as chunks arrive, so a timeout mid-stream keeps what came
        timeout = gevent.Timeout(cfg.timeout_s / cfg.time_scale)
        timeout.start()
        resp = None
        try:
            resp = self.client.request("POST", path, json=body, stream=True, name=path, headers=load.request_headers(spec))
            code = int(getattr(resp, "status_code", 0) or 0)
            rec["http_status"] = code
            headers: Mapping[str, Any] = resp.headers or {}
            rec["pod"] = headers.get(load.POD_HEADER)
            rec["variant"] = headers.get(load.VARIANT_HEADER)
            rec["prefill_pod"] = headers.get(load.PREFILL_POD_HEADER)
            raw = resp._response  # the body stream; None on an ErrorResponse
            if code == 200 and raw is not None:
                load.read_stream(raw, rec, st)
                if st.status != "ok":
                    rec["http_status"] = 0  # failed mid-stream
            elif code in (429, 503):
                st.status = "rejected"
            elif code == 400:
                st.status = "too_long"  # vLLM's context-length check; the client never sends a malformed body
            else:
                st.status = "error"
        except gevent.Timeout as t:
            if t is not timeout:
                raise
            st.status = "timeout"
            rec["http_status"] = 0
        except RunEnded:
            st.status = "timeout"
            rec["http_status"] = 0
        except Exception:  # connection refused / reset: the request failed
            st.status = "error"
        finally:
            timeout.cancel()
            if resp is not None and resp._response is not None:
                try:
                    resp._response.release()
                except Exception:
                    pass
        load.finish_record(rec, cfg, st, time.time())
        status, chunks = st.status, st.chunks
        self.out.write(json.dumps(rec, separators=(",", ":")) + "\n")
        self.environment.events.request.fire(
            request_type="SSE", name="stream " + status, response_time=rec["e2e_ms"] / cfg.time_scale,
            response_length=chunks, exception=None if status == "ok" else RuntimeError(status), context={})


def _raise_fd_limit() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = hard if hard != resource.RLIM_INFINITY else 65536
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))


def _final_csv(writer: Any) -> None:
    """One last pass of Locust's CSV writer so the files hold the final numbers."""
    for fh in (writer.requests_csv_filehandle, writer.failures_csv_filehandle):
        fh.seek(0)
        fh.truncate()
    writer.requests_csv_writer.writerow(writer.requests_csv_columns)
    writer._requests_data_rows(writer.requests_csv_writer)
    writer.failures_csv_writer.writerow(writer.failures_columns)
    writer._failures_data_rows(writer.failures_csv_writer)
    writer.close_files()


def main(argv: list[str] | None = None) -> int:
    """Library mode: one local runner, one OpenLoopUser, Locust CSV stats at --csv."""
    import argparse

    from locust.env import Environment
    from locust.stats import PERCENTILES_TO_REPORT, StatsCSVFileWriter, stats_history

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--host", required=True, help="gateway base URL, e.g. http://127.0.0.1:8000")
    ap.add_argument("--csv", required=True, help="prefix of Locust's CSV stats files")
    args = ap.parse_args(argv)
    _raise_fd_limit()
    OpenLoopUser.settings = Settings()
    env = Environment(user_classes=[OpenLoopUser], host=args.host, events=events)
    runner = env.create_local_runner()
    writer = StatsCSVFileWriter(env, PERCENTILES_TO_REPORT, args.csv, full_history=False)
    writer_g = gevent.spawn(writer.stats_writer)
    history_g = gevent.spawn(stats_history, runner)
    runner.start(1, spawn_rate=1)
    try:
        runner.greenlet.join()
    except KeyboardInterrupt:
        runner.quit()
    writer_g.kill(block=True)
    history_g.kill(block=True)
    _final_csv(writer)
    return 0


if __name__ == "__main__":
    sys.exit(main())
