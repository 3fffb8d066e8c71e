"""serve-router's decision trace (--trace-file): only changes of the engines, and a bounded size."""
from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from scalearena.harness.config.scenario import RouterSpec
from scalearena.harness.local import router_server
from scalearena.harness.local.router_server import RouterServer, RouterServerConfig


def _server(path: Path) -> RouterServer:
    return RouterServer(RouterServerConfig(spec=RouterSpec(), trace_path=str(path)))


def test_the_same_engines_sent_again_add_no_line(tmp_path: Path) -> None:
    one = [{"pod": "p0", "variant": "v", "model": "m", "url": "http://127.0.0.1:1"}]

    async def main() -> None:
        server = _server(tmp_path / "t.jsonl")
        await server.set_endpoints(one)
        await server.set_endpoints(one)  # the harness re-sends the same list: nothing changed
        await server.set_endpoints([{**one[0], "state": "draining"}])
        server.close_trace()

    asyncio.run(main())
    lines = [json.loads(x) for x in (tmp_path / "t.jsonl").read_text().splitlines()]
    assert [x["pods"] for x in lines] == [{"p0": "ready"}, {"p0": "draining"}]


def test_a_trace_past_its_size_ends_with_one_truncated_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(router_server, "TRACE_MAX_BYTES", 250)
    server = _server(tmp_path / "t.jsonl")
    # each line 77 to 79 bytes ({"t": 0.0, "ev": "endpoints", "pods": {"p0": "ready"}, "wall": 1796529757.456}
    # and a newline; the wall time's trailing zeros drop): three are at most 237 <= 250, a fourth at least 308
    for i in range(10):
        server._write_trace({"t": float(i), "ev": "endpoints", "pods": {"p0": "ready"}})
    lines = [json.loads(x) for x in (tmp_path / "t.jsonl").read_text().splitlines()]
    assert [x["ev"] for x in lines] == ["endpoints"] * 3 + ["truncated"]
    assert lines[-1] == {"t": 3.0, "ev": "truncated", "max_bytes": 250}
    assert server._trace is None  # closed: nothing more is written
