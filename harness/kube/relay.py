"""CLUSTER=kwok: TCP relays from a pod's loopback IP into the network namespace its process runs in.

A pod has a network namespace of its own; on KWOK nodes every pod shares the host's and gets an IP of its own in
127.0.0.0/8 (kube/kwok.py). llm-d-inference-sim v0.10.2 can only listen on every address (``net.Listen("tcp4",
":<port>")``, pkg/communication/http.go), so two sim pods on port 8000 cannot share the host's namespace: each
runs in a namespace of its own (``NETNS_EXEC``: unshare(CLONE_NEWNET), loopback up, exec), and ``Relay``
forwards podIP:<containerPort> into it, its upstream sockets made inside the pod's namespace with setns(2) (root
only; ``netns_supported``). Written by hand: what it does is a few dozen lines of asyncio over setns, which no
maintained library offers. Used by the pod launcher (kube/launcher.py).
"""
from __future__ import annotations

import asyncio
import ctypes
import functools
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Mapping
from typing import Any

CLONE_NEWNET = 0x40000000


# -- the relay: podIP:port -> the process -----------------------------------------------------------------------------
_libc: Any = None


def _setns(fd: int) -> None:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"setns(CLONE_NEWNET): {os.strerror(err)}")


# Run as `python -I -c NETNS_EXEC argv...`: a network namespace of its own with its loopback up, then exec argv.
NETNS_EXEC = """\
import ctypes, fcntl, os, socket, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
if libc.unshare(0x40000000) != 0:
    sys.exit("unshare(CLONE_NEWNET): " + os.strerror(ctypes.get_errno()))
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
flags = struct.unpack("16sh22x", fcntl.ioctl(s, 0x8913, struct.pack("16sh22x", b"lo", 0)))[1]
fcntl.ioctl(s, 0x8914, struct.pack("16sh22x", b"lo", flags | 1))
s.close()
os.execvp(sys.argv[1], sys.argv[1:])
"""


def netns_supported() -> bool:
    """Whether a child can get a network namespace of its own and this process can reach into it (root)."""
    if not sys.platform.startswith("linux") or os.geteuid() != 0:
        return False
    try:
        rc = subprocess.run([sys.executable, "-I", "-c", NETNS_EXEC, sys.executable, "-I", "-c", "pass"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            timeout=30).returncode
    except (OSError, subprocess.TimeoutExpired):
        return False
    return rc == 0


class _Pipe(asyncio.Protocol):
    """One side of a relayed connection; writes what it reads to its peer, with back-pressure both ways."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.peer: _Pipe | None = None
        self.eof = False
        self.pending: list[bytes] = []

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.write(data)
        else:
            self.pending.append(data)

    def eof_received(self) -> bool:
        self.eof = True
        if self.peer is not None and self.peer.transport is not None and self.peer.transport.can_write_eof():
            self.peer.transport.write_eof()
        if self.peer is not None and self.peer.eof:
            self.close()
        return True

    def connection_lost(self, exc: Exception | None) -> None:
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.close()

    def pause_writing(self) -> None:
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.pause_reading()

    def resume_writing(self) -> None:
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.resume_reading()

    def close(self) -> None:
        for side in (self, self.peer):
            if side is not None and side.transport is not None:
                side.transport.close()


class Relay:
    """TCP relays podIP:port -> the process, on one asyncio loop in a thread of its own."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._servers: dict[str, list[asyncio.AbstractServer]] = {}
        self._netns: dict[str, int] = {}  # key -> fd of the namespace, once the process is in its own
        self._home: int | None = None
        self._thread = threading.Thread(target=self._run, name="pod-relay", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def add(self, key: str, host: str, forwards: Mapping[int, int], pid: int | None = None) -> None:
        """Listen on host:port for each port; connect to 127.0.0.1:target, inside the network namespace of
        ``pid`` when given. Raises OSError when a listen address is taken."""
        asyncio.run_coroutine_threadsafe(self._add(key, host, dict(forwards), pid), self.loop).result(timeout=30)

    def remove(self, key: str) -> None:
        if not self.loop.is_closed():
            asyncio.run_coroutine_threadsafe(self._remove(key), self.loop).result(timeout=30)

    def close(self) -> None:
        if self.loop.is_closed():
            return
        for key in list(self._servers):
            self.remove(key)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)
        if self._home is not None:
            os.close(self._home)
            self._home = None
        self.loop.close()

    async def _add(self, key: str, host: str, forwards: dict[int, int], pid: int | None) -> None:
        servers = self._servers.setdefault(key, [])
        for port, target in forwards.items():
            factory = functools.partial(self._accepted, key, target, pid)
            servers.append(await self.loop.create_server(factory, host, port, reuse_address=True))

    async def _remove(self, key: str) -> None:
        for srv in self._servers.pop(key, []):
            srv.close()
        fd = self._netns.pop(key, None)
        if fd is not None:
            os.close(fd)

    def _accepted(self, key: str, target: int, pid: int | None) -> _Pipe:
        client = _Pipe()
        self.loop.create_task(self._connect(client, key, target, pid))
        return client

    def _socket(self, key: str, pid: int | None) -> socket.socket:
        if pid is None:
            return socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        fd = self._netns.get(key)
        if fd is None:
            path = f"/proc/{pid}/ns/net"
            if os.stat(path).st_ino == os.stat("/proc/self/ns/net").st_ino:
                raise ConnectionRefusedError(f"pid {pid} is not in a network namespace of its own yet")
            fd = self._netns[key] = os.open(path, os.O_RDONLY)
        if self._home is None:
            self._home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
        _setns(fd)  # this thread only, and only while the socket is made: a socket keeps its namespace
        try:
            return socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        finally:
            _setns(self._home)

    async def _connect(self, client: _Pipe, key: str, target: int, pid: int | None) -> None:
        if client.transport is not None:
            client.transport.pause_reading()
        try:
            sock = self._socket(key, pid)
            sock.setblocking(False)
            try:
                await self.loop.sock_connect(sock, ("127.0.0.1", target))
                _, upstream = await self.loop.create_connection(_Pipe, sock=sock)
            except BaseException:
                sock.close()
                raise
        except OSError:  # nothing listens (yet): the caller sees its connection closed
            if client.transport is not None:
                client.transport.close()
            return
        upstream.peer, client.peer = client, upstream
        for data in client.pending:
            upstream.transport.write(data)  # type: ignore[union-attr]
        client.pending.clear()
        if client.transport is None or client.transport.is_closing():
            upstream.close()
            return
        if client.eof and upstream.transport is not None and upstream.transport.can_write_eof():
            upstream.transport.write_eof()
        client.transport.resume_reading()
