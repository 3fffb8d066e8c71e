"""Hypothesis strategies for hostile input: scenario files, trace files and ``--set`` overrides.

Each starts from something valid (the shared small scenario, the shipped trace
samples) and breaks it the way issue 17's probe did: values that are not
finite, absurdly large or small, of the wrong type or full of markup; trees
replaced, keys added or removed; raw YAML that bombs, nests, or is not UTF-8;
trace bytes inserted, lines duplicated, reordered or replaced with hostile
rows. The outcomes are judged by ``sandbox.classify``.
"""
from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import yaml
from hypothesis import strategies as st

from tests.conftest import SMALL_SCENARIO

DATA = Path(__file__).resolve().parents[2] / "workloads" / "data"
TRACE_SAMPLES = {"azure": "azure_code_2023_sample.csv", "mooncake": "mooncake_synthetic_sample.jsonl",
                 "burstgpt": "burstgpt_synthetic_sample.csv"}

BASE: dict[str, Any] = copy.deepcopy(SMALL_SCENARIO)
BASE.update(
    router={"admission": {"kind": "saturation", "queue_limit": 100}, "refresh_s": 0.05},
    metrics={"scrape_interval_s": 5, "sample_interval_s": 5, "staleness_s": 60},
    slo={"ttft_ms": 1000, "itl_ms": 50},
    client={"timeout_s": 30},
    faults=[{"kind": "metrics_outage", "start_s": 10, "end_s": 20}],
    autoscalers=[{"kind": "static", "replicas": 2}, {"kind": "hpa", "period_s": 15}],
)

HOSTILE_VALUES = st.sampled_from([
    float("nan"), float("inf"), float("-inf"), -1, 0, 1e-9, 1e12, 1e308, 10**30, 2**63, -(2**63),
    "x", "[/x]", ":x:", "[bold]b", "^[a-z0-9]*$", "", "0" * 5000, True, None, [], {}, [1, 2], {"kind": "x"},
])
VALUES = st.one_of(HOSTILE_VALUES, st.floats(), st.integers(), st.text(max_size=20))


def leaf_paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into ``node`` (mappings by key, lists by index), leaves and subtrees alike."""
    out = [prefix] if prefix else []
    if isinstance(node, dict):
        for k, v in node.items():
            out += leaf_paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += leaf_paths(v, prefix + (i,))
    return out


PATHS = leaf_paths(BASE)


def _set(data: Any, path: tuple[Any, ...], value: Any) -> None:
    node = data
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value


@st.composite
def mutated_scenarios(draw: st.DrawFn) -> bytes:
    """A scenario file: the base with 1-3 mutations, or raw hostile YAML text."""
    if draw(st.integers(0, 9)) == 0:
        return draw(RAW_YAML)
    data = copy.deepcopy(BASE)
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(PATHS))
        action = draw(st.sampled_from(["value", "value", "value", "delete", "extra"]))
        try:
            if action == "value":
                _set(data, path, draw(VALUES))
            elif action == "delete":
                node = data
                for k in path[:-1]:
                    node = node[k]
                del node[path[-1]]
            else:
                _set(data, path[:-1] + ("unexpected_key",), draw(VALUES)) if isinstance(path[-1], str) else None
        except (KeyError, IndexError, TypeError):
            pass  # an earlier mutation replaced part of this path: fine, the file is still hostile
    return yaml.safe_dump(data, allow_unicode=True).encode()


def _bomb(levels: int) -> bytes:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, levels)]
    return ("\n".join(lines) + "\n").encode()


RAW_YAML = st.one_of(
    st.integers(3, 12).map(_bomb),
    st.integers(50, 20000).map(lambda n: b"[" * n + b"]" * n),
    st.integers(50, 20000).map(lambda n: b"a: " * n + b"1"),
    st.just(b"&a [*a]"),
    st.just(b"name: caf\xe9\n"),
    st.integers(4000, 6000).map(lambda n: b"seed: " + b"7" * n),
    st.binary(max_size=200),
    st.text(max_size=200).map(lambda t: t.encode()),
    st.just(b"!!python/object/apply:os.system ['true']"),
)


def _trace_lines(fmt: str) -> list[bytes]:
    return (DATA / TRACE_SAMPLES[fmt]).read_bytes().splitlines(keepends=True)[:30]


HOSTILE_ROWS = st.sampled_from([
    b"Infinity,1,1\n", b"nan,nan,nan\n", b"-1,-1,-1\n", b"1e999,5,5\n", b"9" * 5000 + b",1,1\n",
    b"2023-11-16 18:17:03.9799600,99999999999999999999,1\n", b"\xff\xfe\x00\n", b"\n\n\n", b",,,,,,\n",
    b'{"timestamp": Infinity, "input_length": 1, "output_length": 1}\n', b'{"timestamp": 1}\n', b"[" * 3000 + b"\n",
    b'{"timestamp": 1e400, "input_length": -5, "output_length": 1}\n', b"x" * 70000 + b"\n", b'"unterminated\n',
])


@st.composite
def mutated_traces(draw: st.DrawFn) -> tuple[str, bytes]:
    """(format, file bytes): a slice of a shipped sample with bytes and rows broken."""
    fmt = draw(st.sampled_from(sorted(TRACE_SAMPLES)))
    lines = _trace_lines(fmt)
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(lines)))
        action = draw(st.sampled_from(["row", "bytes", "dup", "swap", "drop", "truncate"]))
        if action == "row":
            lines.insert(i, draw(HOSTILE_ROWS))
        elif action == "bytes" and lines:
            j = min(i, len(lines) - 1)
            pos = draw(st.integers(0, len(lines[j])))
            lines[j] = lines[j][:pos] + draw(st.binary(min_size=1, max_size=8)) + lines[j][pos:]
        elif action == "dup" and lines:
            lines.insert(i, lines[min(i, len(lines) - 1)] * draw(st.integers(1, 50)))
        elif action == "swap" and len(lines) > 2:
            j = draw(st.integers(1, len(lines) - 1))
            lines[1], lines[j] = lines[j], lines[1]
        elif action == "drop" and lines:
            del lines[min(i, len(lines) - 1)]
        elif action == "truncate":
            lines = lines[:i]
    return fmt, b"".join(lines)


def trace_scenario(fmt: str, trace_file: str) -> bytes:
    data = copy.deepcopy(SMALL_SCENARIO)
    data["workload"] = {"arrivals": {"kind": "trace", "format": fmt, "path": trace_file}}
    return yaml.safe_dump(data).encode()


OVERRIDE_TEXT = st.one_of(
    st.sampled_from(["[1", ".inf", ".nan", "-.inf", "1e12", "1e-9", "-1", "0", "{a: 1}", "[]", "null", "*x",
                     "&a [*a]", "'", '"\\x00"', "!!python/object/apply:os.system ['true']", "[/x]", ":x:",
                     "9" * 5000, "true", "1e308", "100000"]),
    VALUES.map(lambda v: json.dumps(v) if not isinstance(v, float) or v == v else ".nan"),
)


@st.composite
def overrides(draw: st.DrawFn) -> list[str]:
    """``--set`` items: known or broken dotted keys with hostile YAML values."""
    items = []
    for _ in range(draw(st.integers(1, 3))):
        path = ".".join(str(p) for p in draw(st.sampled_from(PATHS)))
        key = draw(st.sampled_from([path, path, path, path + ".deeper", path.replace("0", "99"), "", ".", "a..b"]))
        items.append(f"{key}={draw(OVERRIDE_TEXT)}" if draw(st.integers(0, 9)) else key)
    return items


def _all_autoscalers(pd: bool) -> list[dict[str, Any]]:
    """Every registered autoscaler's default config: the aggregated ones, or (pd) those that scale a
    prefill/decode pool (llm-d's P/D recipe), which refuse a scenario without prefill and decode roles."""
    from scalearena.controllers.llmd import RECIPES
    from scalearena.controllers.registry import REGISTRY

    return [REGISTRY.default_config(n).model_dump(mode="json", exclude_none=True) for n in REGISTRY.names()
            if (n in RECIPES and RECIPES[n].roles) == pd]


def _pd_cluster() -> dict[str, Any]:
    (variant,) = BASE["cluster"]["variants"]
    return {"kv_transfer": {"kv_bytes_per_token": 131072},  # constant latency: no model shape to size it
            "variants": [{**copy.deepcopy(variant), "name": "va-prefill", "role": "prefill"},
                         {**copy.deepcopy(variant), "name": "va-decode", "role": "decode"}]}


# one scenario per family, each valid as it stands, so a fuzzed run fails only on what was mutated
ALL_AUTOSCALERS: dict[str, Any] = {**copy.deepcopy(BASE), "autoscalers": _all_autoscalers(pd=False)}
PD_AUTOSCALERS: dict[str, Any] = {**copy.deepcopy(BASE), "cluster": _pd_cluster(), "autoscalers": _all_autoscalers(pd=True)}


@st.composite
def autoscaler_overrides(draw: st.DrawFn) -> tuple[dict[str, Any], str, list[str]]:
    """(scenario, autoscaler kind, ``--set`` items) mutating 1-3 parameters of one autoscaler of
    ALL_AUTOSCALERS or PD_AUTOSCALERS."""
    scenario, i = draw(st.sampled_from([(s, i) for s in (ALL_AUTOSCALERS, PD_AUTOSCALERS)
                                        for i in range(len(s["autoscalers"]))]))
    config = scenario["autoscalers"][i]
    paths = [p for p in leaf_paths(config) if p != ("kind",)] or [("period_s",)]
    items = []
    for _ in range(draw(st.integers(1, 3))):
        path = ".".join(str(p) for p in ("autoscalers", i) + draw(st.sampled_from(paths)))
        items.append(f"{path}={draw(OVERRIDE_TEXT)}")
    return scenario, config["kind"], items
