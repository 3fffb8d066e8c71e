"""Child-process supervision for the local backend.

A local run starts many processes (engines, the router, Prometheus, Locust).
A benchmark that leaves a stray engine listening, or a Prometheus holding a
TSDB lock, poisons the next run; so every child goes through one
``Supervisor`` that

* starts it in its own process group (``start_new_session``) so a Ctrl-C on
  the terminal reaches the harness only, and the harness decides the order in
  which children stop;
* writes its stdout/stderr to a log file in the run folder (kept for
  post-mortems, never a pipe that could fill up and stall the child);
* stops it with SIGTERM, waits out a grace period, then SIGKILLs the group;
* stops everything still alive on ``close()``, on interpreter exit and on
  SIGTERM/SIGINT delivered to the harness;
* and, since a SIGKILLed harness runs none of that, asks the kernel to SIGKILL
  the child when the harness dies (``die_with_parent``: Linux PR_SET_PDEATHSIG).

Ports: ``free_port()`` asks the kernel for a free port on 127.0.0.1. Nothing
here ever binds another address.
"""
from __future__ import annotations

import atexit
import os
import signal
import socket
import subprocess
import threading
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from scalearena.harness.run.interrupts import die_with_parent, held

LOOPBACK = "127.0.0.1"


def free_port() -> int:
    """A TCP port that is free on 127.0.0.1 right now (the kernel picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])


def start_ticks(pid: int) -> float | None:
    """The start time of process ``pid`` in clock ticks (field 22 of proc(5)), None when it is not running: with the
    pid it tells a process from a later one that reuses its pid."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    if fields[0] in ("Z", "X"):  # exited, not yet reaped: not running
        return None
    return float(fields[19])


def wait_for_port(port: int, timeout_s: float, proc: subprocess.Popen | None = None, host: str = LOOPBACK) -> bool:
    """True once something accepts TCP connections on host:port (a loopback address)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            return False
        try:
            with socket.create_connection((host, port), timeout=0.2):
                return True
        except OSError:
            time.sleep(0.02)
    return False


@dataclass
class Child:
    """One supervised process."""

    name: str
    argv: list[str]
    proc: subprocess.Popen
    log_path: Path
    started_wall: float = field(default_factory=time.time)
    stop_requested: bool = False

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def returncode(self) -> int | None:
        return self.proc.poll()

    def signal(self, sig: int) -> None:
        """Signal the child's whole process group (it is the group leader)."""
        if self.alive():
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                pass

    def log_tail(self, n: int = 20) -> str:
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return "\n".join(lines[-n:])


_LIVE: weakref.WeakSet[Supervisor] = weakref.WeakSet()


def _close_all() -> None:
    for sup in list(_LIVE):
        sup.close(grace_s=1.0)


atexit.register(_close_all)


class Supervisor:
    """Starts, tracks and stops the children of one local run."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = Path(log_dir)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.children: dict[str, Child] = {}
        self._lock = threading.Lock()
        _LIVE.add(self)

    def start(
        self, name: str, argv: Sequence[str], env: dict[str, str] | None = None, cwd: Path | None = None
    ) -> Child:
        if name in self.children and self.children[name].alive():
            raise RuntimeError(f"child {name!r} is already running (pid {self.children[name].pid})")
        log_path = self.log_dir / f"{name}.log"
        full_env = dict(os.environ)
        full_env.update(env or {})
        with held(), open(log_path, "ab") as log:  # an interrupt lands before the spawn or after the registration
            proc = subprocess.Popen(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=full_env,
                cwd=str(cwd) if cwd else None,
                start_new_session=True,
                preexec_fn=die_with_parent(),  # SIGKILLed with the harness, even when it is SIGKILLed
            )
            child = Child(name=name, argv=list(argv), proc=proc, log_path=log_path)
            with self._lock:
                self.children[name] = child
        return child

    def get(self, name: str) -> Child | None:
        return self.children.get(name)

    def terminate(self, name: str) -> None:
        """Send SIGTERM (the start of a graceful stop); does not wait."""
        child = self.children.get(name)
        if child is not None:
            child.stop_requested = True
            child.signal(signal.SIGTERM)

    def kill(self, name: str) -> None:
        """SIGKILL at once (a crash, or the end of a grace period)."""
        child = self.children.get(name)
        if child is not None:
            child.stop_requested = True
            child.signal(signal.SIGKILL)
            try:
                child.proc.wait(timeout=5.0)
            except subprocess.TimeoutExpired:
                pass

    def stop(self, name: str, grace_s: float) -> int | None:
        """SIGTERM, wait up to ``grace_s``, then SIGKILL; returns the exit code."""
        child = self.children.get(name)
        if child is None:
            return None
        if child.alive():
            self.terminate(name)
            try:
                child.proc.wait(timeout=max(grace_s, 0.0))
            except subprocess.TimeoutExpired:
                self.kill(name)
        return child.returncode()

    def forget(self, name: str) -> None:
        with self._lock:
            child = self.children.get(name)
            if child is not None and not child.alive():
                del self.children[name]

    def alive(self) -> list[str]:
        return [n for n, c in self.children.items() if c.alive()]

    def close(self, grace_s: float = 5.0) -> None:
        """Stop every child still alive: SIGTERM all, wait together, SIGKILL the rest."""
        live = [c for c in self.children.values() if c.alive()]
        for c in live:
            c.stop_requested = True
            c.signal(signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        for c in live:
            try:
                c.proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        for c in live:
            if c.alive():
                c.signal(signal.SIGKILL)
                try:
                    c.proc.wait(timeout=5.0)
                except subprocess.TimeoutExpired:
                    pass
        _LIVE.discard(self)

    def __enter__(self) -> Supervisor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
