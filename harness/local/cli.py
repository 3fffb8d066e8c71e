"""Click commands `scalearena serve-engine` and `scalearena serve-router`.

serve-engine takes llm-d-inference-sim's flag names for the options the two
share, with the same units (latencies as durations such as ``100ms``; a bare
number is milliseconds, as upstream's deprecated integer form), so a
deployment or script can swap one server for the other. Options only the
scalearena engine has (roofline latency, GPU type, time scale) come from
``--engine-spec`` (an EngineSpec as JSON, what the local backend passes) or
their own flags. Flag defaults follow llm-d-inference-sim (max-num-seqs 5,
kv-cache-size 1024, block-size 16). ``--config FILE`` reads the same flags
from YAML as upstream does (keys are flag names, ``-`` or ``_``; a flag given
on the command line wins); ``--mode echo|random`` picks the response text.

Both servers print ``<name>: listening on http://HOST:PORT`` once they
listen (``--port 0``: a free port, read back from the socket).
"""
from __future__ import annotations

import asyncio
import json
import math
import re
from typing import Any

import click

from scalearena.contracts.errors import UserError
from scalearena.contracts.files import read_regular
from scalearena.harness.local.handoff_auth import read_key

_DUR = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ns|us|µs|ms|s|m|h)?\s*$")
_UNIT_S = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration_s(value: str | float | int, bare_unit: str = "ms") -> float:
    """Go-style duration -> seconds: '100ms' -> 0.1, '2m' -> 120, '1m30s' -> 90; bare number in bare_unit."""
    if isinstance(value, int | float):
        return float(value) * _UNIT_S[bare_unit]
    text = str(value).strip()
    m = _DUR.match(text)
    if m:
        return float(m.group(1)) * _UNIT_S[m.group(2) or bare_unit]
    parts = re.findall(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)", text)
    if parts and "".join(a + b for a, b in parts) == text.replace(" ", ""):
        return sum(float(a) * _UNIT_S[b] for a, b in parts)
    raise click.BadParameter(f"{value!r} is not a duration (e.g. 100ms, 2s, 1m30s)")


class Duration(click.ParamType):
    name = "duration"

    def __init__(self, bare_unit: str = "ms") -> None:
        self.bare_unit = bare_unit

    def convert(self, value, param, ctx):  # type: ignore[no-untyped-def]
        if isinstance(value, float):
            return value
        try:
            return parse_duration_s(value, self.bare_unit)
        except click.BadParameter as e:
            self.fail(str(e.message), param, ctx)


def _load_config(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """--config FILE: flag values from YAML become defaults that the command line overrides."""
    if not value:
        return value
    from scalearena.harness.config.safe_yaml import read_yaml

    try:
        doc = read_yaml(value)  # size, alias and depth limits, like every user YAML
    except UserError as e:
        raise click.BadParameter(str(e), ctx, param) from None
    if doc is None:
        doc = {}
    if not isinstance(doc, dict):
        raise click.BadParameter(f"{value}: expected a mapping of flag names to values", ctx, param)
    names = {p.name for p in ctx.command.params if p.name and p.name != "config"}
    defaults: dict[str, Any] = {}
    for key, v in doc.items():
        name = str(key).replace("-", "_")
        if name not in names:
            raise click.BadParameter(f"{value}: unknown key {key!r} (expected flag names such as "
                                     f"max-num-seqs, time-to-first-token)", ctx, param)
        # strings, so a duration number keeps the flag's bare unit (ms) as on the command line
        defaults[name] = [str(x) for x in v] if isinstance(v, list) else str(v)
    ctx.default_map = {**(ctx.default_map or {}), **defaults}
    return value


def _limits(o: dict[str, Any]) -> Any:
    from scalearena.harness.local.http_guard import ConnectionLimits

    for flag in ("header_timeout", "body_timeout"):  # 0 would close every connection before its request
        _at_least(o[flag], 0.001, flag)
    return ConnectionLimits(header_timeout_s=o["header_timeout"], body_timeout_s=o["body_timeout"],
                            max_connections=o["max_connections"])


def _at_least(value: float, low_s: float, flag: str) -> float:
    if value < low_s:
        raise UserError(f"got {value:g} s", where=f"--{flag.replace('_', '-')}", expected=f"at least {low_s * 1000:g} ms")
    return value


_JSON_TYPES = {list: "an array", str: "a string", int: "a number", float: "a number", bool: "a boolean",
               type(None): "null"}


def _json_object(text: str | None, flag: str, expected: str) -> dict[str, Any] | None:
    """A JSON option's object (None when not given); bad JSON or another JSON type is one UserError."""
    if not text:
        return None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise UserError(f"not valid JSON: {e.msg} at column {e.colno}", where=flag, expected=expected) from None
    if not isinstance(data, dict):
        raise UserError(f"got {_JSON_TYPES.get(type(data), 'a JSON value')}", where=flag, expected=expected)
    return data


def _time_scale(value: float) -> float:
    """--time-scale: finite, > 0 and at most 1000, as the local backend's option (an infinite scale made
    every wait zero: the server spun and never finished a SIGTERM)."""
    if not (math.isfinite(value) and 0 < value <= 1000):
        raise UserError(f"got {value!r}", where="--time-scale", expected="a number > 0 and <= 1000")
    return value


def _server_options(f: Any) -> Any:
    """Options both servers take: where to listen, prompt counting, connection deadlines."""
    for opt in reversed([
        click.option("--host", default="127.0.0.1", show_default=True,
                     help="Address to listen on; loopback by default (0.0.0.0 inside a pod)."),
        click.option("--tokenizer", type=click.Path(exists=True, dir_okay=False), default=None,
                     help="A local tokenizer.json: prompt_tokens counted by the `tokenizers` library "
                     "(default: the documented approximation)."),
        click.option("--header-timeout", type=Duration("s"), default=10.0,
                     help="Wall time a request head may take to arrive; then the connection is closed."),
        click.option("--body-timeout", type=Duration("s"), default=30.0,
                     help="Wall time a request body may take to arrive; then 408."),
        click.option("--max-connections", type=click.IntRange(1, 65536), default=4096, show_default=True,
                     help="Open connections at most; past it a new one gets a 503 and is closed."),
    ]):
        f = opt(f)
    return f


def _gpu(name: str, spec_json: str | None, latency_kind: str) -> Any:
    """--gpu: the --gpu-spec datasheet under that name, else a catalog name, checked where the latency
    model reads it (roofline); the constant model never does (the kube backend passes a scenario's
    own GPU names without a datasheet)."""
    if spec_json:
        from scalearena.harness.config.hardware import GPUTypeSpec
        from scalearena.harness.config.schema_help import validated

        data = _json_object(spec_json, "--gpu-spec", "a scenario's cluster.gpu_types entry as a JSON object")
        return validated(GPUTypeSpec, data or {}, "--gpu-spec").to_gpu(name)
    if latency_kind != "constant":
        from scalearena.harness.sim.engine import gpu_spec

        try:
            gpu_spec(name)
        except UserError as e:
            raise UserError(e.message, where="--gpu", expected=e.expected) from None
    return name


@click.command("serve-engine")
@click.option("--config", callback=_load_config, is_eager=True, expose_value=True, default=None,
              type=click.Path(exists=True, dir_okay=False), help="YAML file of flag values (flags win).")
@click.option("--model", required=True, help="Model name served (the model_name label).")
@click.option("--served-model-name", multiple=True, help="Extra names the API accepts.")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True,
              help="Port to listen on (0: any free port).")
@_server_options
@click.option("--mode", type=click.Choice(["random", "echo"]), default="random", show_default=True,
              help="Response text: filler sentences (random) or the prompt echoed (echo).")
@click.option("--max-num-seqs", type=int, default=None, help="Sequences in a batch (default 5).")
@click.option("--max-waiting-queue-length", type=int, default=None, help="Waiting-queue limit; beyond it 429 (default: unbounded, as vLLM).")
@click.option("--max-model-len", type=int, default=None, help="Longest prompt + output accepted.")
@click.option("--time-to-first-token", type=Duration(), default=None, help="TTFT base (e.g. 100ms).")
@click.option("--inter-token-latency", type=Duration(), default=None, help="ITL (e.g. 20ms).")
@click.option("--prefill-overhead", type=Duration(), default=None, help="Constant prefill overhead.")
@click.option("--prefill-time-per-token", type=Duration(), default=None, help="Prefill time per prompt token.")
@click.option("--time-factor-under-load", type=float, default=None, help="Latency factor at a full batch (>= 1).")
@click.option("--kv-cache-size", type=int, default=None, help="KV-cache blocks (default 1024).")
@click.option("--block-size", type=int, default=None, help="Tokens per KV block (default 16).")
@click.option("--enable-prefix-caching/--no-enable-prefix-caching", default=None,
              help="vLLM's automatic prefix caching over the prompt's token blocks (default off).")
@click.option("--enable-kvcache/--no-enable-kvcache", default=True, show_default=True,
              help="Accepted for compatibility; KV capacity is always modelled.")
@click.option("--startup-duration", type=Duration("s"), default=0.0, help="Cold start: /health/ready is 503 "
              "this long (e.g. 30s; a bare number is seconds).")
@click.option("--failure-injection-rate", type=float, default=0.0, help="Percent of requests failed on purpose.")
@click.option("--failure-types", multiple=True, help="rate_limit, invalid_api_key, context_length, server_error, "
              "invalid_request, model_not_found (default: all).")
@click.option("--seed", type=int, default=None, help="Seed for failure injection.")
@click.option("--engine-spec", default=None, help="EngineSpec as JSON (scenario engine section); flags override it.")
@click.option("--gpu", default="A100-80GB", show_default=True, help="GPU type (roofline latency).")
@click.option("--gpu-spec", default=None, help="The GPU type's datasheet as JSON (a scenario's cluster.gpu_types "
              "entry) when it is not in the catalog.")
@click.option("--time-scale", type=float, default=1.0, show_default=True,
              help="Run s times faster than real time: every duration is divided by s.")
@click.option("--termination-grace-period", type=Duration("s"), default=30.0,
              help="After SIGTERM, in-flight requests get this long (scenario time) before they are killed.")
@click.option("--stream-tick", type=Duration(), default=0.005, help="Wall time between token pushes.")
@click.option("--gpu-util-window", type=Duration("s"), default=15.0, help="Window of the busy-fraction gauge.")
@click.option("--role", type=click.Choice(["both", "prefill", "decode"]), default="both", show_default=True,
              help="llm-d.ai/role: prefill honours kv_transfer_params.do_remote_decode (keeps the KV, serves "
              "/kv/read), decode honours do_remote_prefill (reads it); both ignores them (no KV connector).")
@click.option("--kv-transfer", default=None, help="The KV hand-off as JSON (a scenario's cluster.kv_transfer: "
              "bandwidth_gbps, latency_ms, kv_bytes_per_token, abort_timeout_s).")
@click.option("--handoff-key-file", type=click.Path(dir_okay=False), default=None,
              help="--role decode: the key serve-router signs P/D hand-offs with (the same file as the router's); "
              "without it the engine accepts no hand-off.")
@click.option("--pod", default="", help="Pod name (logs).")
@click.option("--variant", default="", help="Variant name (logs).")
@click.option("--spawned-at", type=float, default=None, hidden=True,
              help="Wall epoch when the harness spawned this process (cold start counts from it).")
def serve_engine(**o) -> None:  # type: ignore[no-untyped-def]
    """OpenAI-compatible server around the scalearena serving model (one pod)."""
    from scalearena.harness.config.engine_spec import EngineSpec
    from scalearena.harness.config.schema_help import validated
    from scalearena.harness.local.engine_server import FAILURES, EngineServerConfig, serve

    base = _json_object(o["engine_spec"], "--engine-spec", "a scenario's engine section as a JSON object") or {
        "max_num_seqs": 5, "kv_cache_blocks": 1024, "block_size": 16, "latency": {"kind": "constant"},
    }
    for flag, key in (("max_num_seqs", "max_num_seqs"), ("max_waiting_queue_length", "max_waiting_queue"),
                      ("max_model_len", "max_model_len"), ("kv_cache_size", "kv_cache_blocks"),
                      ("block_size", "block_size"), ("enable_prefix_caching", "enable_prefix_caching")):
        if o[flag] is not None:
            base[key] = o[flag]
    lat = dict(base.get("latency") or {"kind": "constant"})
    for flag, key, scale in (("time_to_first_token", "ttft_ms", 1000.0), ("inter_token_latency", "itl_ms", 1000.0),
                             ("prefill_overhead", "prefill_overhead_ms", 1000.0),
                             ("prefill_time_per_token", "prefill_time_per_token_ms", 1000.0),
                             ("time_factor_under_load", "time_factor_under_load", 1.0)):
        if o[flag] is not None:
            if lat.get("kind") != "constant":
                raise click.UsageError(f"--{flag.replace('_', '-')} needs the constant latency model")
            lat[key] = o[flag] * scale
    base["latency"] = lat
    spec = validated(EngineSpec, base, "--engine-spec" if o["engine_spec"] else "serve-engine flags")
    gpu = _gpu(o["gpu"], o["gpu_spec"], spec.latency.kind)
    from scalearena.harness.config.disagg_spec import KVTransferSpec

    kv_json = _json_object(o["kv_transfer"], "--kv-transfer", "a scenario's cluster.kv_transfer as a JSON object")
    kv = validated(KVTransferSpec, kv_json or {}, "--kv-transfer")
    bad = set(o["failure_types"]) - set(FAILURES)
    if bad:
        raise click.UsageError(f"--failure-types: unknown {sorted(bad)}; expected {sorted(FAILURES)}")
    if not 0.0 <= o["failure_injection_rate"] <= 100.0:  # NaN fails this too
        raise UserError(f"got {o['failure_injection_rate']!r}", where="--failure-injection-rate",
                        expected="a percentage from 0 to 100")
    cfg = EngineServerConfig(
        model=o["model"], engine_spec=spec, gpu=gpu, port=o["port"], host=o["host"],
        served_model_names=tuple(o["served_model_name"]), startup_s=o["startup_duration"],
        time_scale=_time_scale(o["time_scale"]), termination_grace_s=o["termination_grace_period"],
        failure_injection_rate=o["failure_injection_rate"], failure_types=tuple(o["failure_types"]),
        # a 0 tick woke the engine loop without pause while anything streamed (a core at 100 %)
        stream_tick_s=_at_least(o["stream_tick"], 0.001, "stream_tick"),
        gpu_util_window_s=_at_least(o["gpu_util_window"], 0.001, "gpu_util_window"), pod=o["pod"],
        variant=o["variant"], seed=o["seed"], spawned_at=o["spawned_at"], mode=o["mode"],
        tokenizer=o["tokenizer"], limits=_limits(o), role=o["role"], kv_transfer=kv,
        handoff_key=read_key(o["handoff_key_file"]) if o["handoff_key_file"] else None,
    )
    asyncio.run(serve(cfg))


@click.command("serve-router")
@click.option("--port", type=click.IntRange(0, 65535), default=8080, show_default=True,
              help="Port to listen on (0: any free port).")
@_server_options
@click.option("--model", "models", multiple=True, envvar="SCALEARENA_ROUTER_MODELS",
              help="A model served even before any engine registers (scale from zero); repeat per model, or "
              "$SCALEARENA_ROUTER_MODELS (space-separated). Requests for other models get 404.")
@click.option("--admin-token-file", type=click.Path(exists=True, dir_okay=False), default=None,
              help="File holding the admin API token; without it /admin/* is off (404).")
@click.option("--admin-port", type=click.IntRange(0, 65535), default=None,
              help="Serve /admin/* on this port only (default: on --port); needs --admin-token-file.")
@click.option("--admin-host", default="127.0.0.1", show_default=True, help="Address of the --admin-port listener.")
@click.option("--handoff-key-file", type=click.Path(dir_okay=False), default=None,
              help="P/D: the key the router signs hand-offs with; the decode engines get the same file.")
@click.option("--router-spec", default=None, help="RouterSpec as JSON (scenario router section).")
@click.option("--endpoints-file", default=None, help="JSON file of engines, rewritten by the harness; watched.")
@click.option("--time-scale", type=float, default=1.0, show_default=True, help="Divides refresh and queue waits.")
@click.option("--queue-timeout", type=Duration("s"), default=300.0,
              help="How long a request may wait at the gateway for a ready engine (scenario time).")
@click.option("--trace-file", default=None, type=click.Path(dir_okay=False),
              help="Append a JSON line per routing decision (the pod, and what the picker saw of every ready pod) "
              "and per change of the engines; the kwok harness writes one into each run's folder.")
def serve_router(**o) -> None:  # type: ignore[no-untyped-def]
    """The gateway: EPP-like endpoint picking, admission control, scale-from-zero queue."""
    from scalearena.harness.config.scenario import RouterSpec
    from scalearena.harness.config.schema_help import validated
    from scalearena.harness.local.router_server import RouterServerConfig, serve

    spec = validated(RouterSpec, _json_object(o["router_spec"], "--router-spec", "a scenario's router section "
                                               "as a JSON object") or {}, "--router-spec")
    token = None
    if o["admin_port"] is not None and not o["admin_token_file"]:
        raise click.BadParameter("needs --admin-token-file (the admin API is off without a token)",
                                 param_hint="--admin-port")
    if o["admin_token_file"]:
        raw = read_regular(o["admin_token_file"], 4096, "a file holding the admin token")
        token = raw.decode("utf-8", "replace").strip()
        if len(token) < 16:
            raise click.BadParameter("the token must be at least 16 characters", param_hint="--admin-token-file")
    cfg = RouterServerConfig(spec=spec, port=o["port"], host=o["host"], endpoints_file=o["endpoints_file"],
                             time_scale=_time_scale(o["time_scale"]), queue_timeout_s=o["queue_timeout"],
                             models=tuple(o["models"]), admin_token=token, tokenizer=o["tokenizer"],
                             limits=_limits(o), admin_port=o["admin_port"], admin_host=o["admin_host"],
                             handoff_key=read_key(o["handoff_key_file"]) if o["handoff_key_file"] else None,
                             trace_path=o["trace_file"])
    asyncio.run(serve(cfg))


def main() -> None:
    """`python -m scalearena.harness.local.cli engine|router ...` (how the backend starts children)."""
    group = click.Group(commands={"engine": serve_engine, "router": serve_router})
    try:
        group()
    except UserError as e:  # as `scalearena serve-*` prints it: one line, exit 2
        click.echo(f"error: {e.render()}", err=True)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
