"""The unit-tier guard (tests/unit/conftest.py) refuses network sockets and allows Unix ones."""
from __future__ import annotations

import socket

import pytest

from tests.unit.conftest import RealSocketInUnitTest


def test_a_tcp_bind_or_connect_fails_the_test() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        with pytest.raises(RealSocketInUnitTest, match="bind"):
            s.bind(("127.0.0.1", 0))
        with pytest.raises(RealSocketInUnitTest, match="connect"):
            s.connect(("127.0.0.1", 9))


def test_unix_sockets_still_work() -> None:
    a, b = socket.socketpair(socket.AF_UNIX)
    with a, b:
        a.sendall(b"x")
        assert b.recv(1) == b"x"
