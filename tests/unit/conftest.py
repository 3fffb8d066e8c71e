"""Unit tests are pure: any attempt to open a network socket fails the test.

tests/unit holds what runs without processes or a network; a test that needs a server
belongs in tests/integration (marked ``local``). The guard patches ``socket.socket``'s
``connect``/``connect_ex``/``bind`` for internet families only, so Unix-domain sockets
(multiprocessing, asyncio's self-pipe) keep working.
"""
from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest

INET = (socket.AF_INET, socket.AF_INET6)


class RealSocketInUnitTest(AssertionError):
    """A unit test opened a network socket (move it to tests/integration)."""


def _guard(name: str, real: Any) -> Any:
    def guarded(self: socket.socket, *args: Any, **kwargs: Any) -> Any:
        if self.family in INET:
            raise RealSocketInUnitTest(f"unit tests open no network sockets: socket.{name}{args!r}")
        return real(self, *args, **kwargs)
    return guarded


@pytest.fixture(autouse=True)
def no_network_sockets(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("connect", "connect_ex", "bind"):
        monkeypatch.setattr(socket.socket, name, _guard(name, getattr(socket.socket, name)))
    yield
