"""SIGINT and SIGTERM, the same in every mode: stop soon, keep what was measured.

The one handler turns either signal into ``Interrupted`` (a ``KeyboardInterrupt``,
so every ``except KeyboardInterrupt`` / ``finally`` on the way — a run writer
marking its summary incomplete, the local supervisor stopping its servers,
the kube backend tearing down — runs unchanged). What the signal must reach
besides the main process:

- queued runs: cancelled, never started (``run_plans``);
- parallel workers: they ignore SIGINT (a terminal's Ctrl-C goes to the whole
  foreground process group; only the parent decides), turn SIGTERM into
  ``Interrupted`` once (so their run is marked incomplete) and ignore further
  SIGTERMs while they write it (the executor terminates the other workers
  again when the first one exits); the parent terminates every live child
  with SIGTERM, waits a grace period, then SIGKILLs what is left;
- a parent that is SIGKILLed cannot clean up, so each worker asks the kernel
  (Linux ``prctl(PR_SET_PDEATHSIG)``) for SIGTERM when its parent dies, and each
  server a local run starts (engines, router, Prometheus, Locust: ``die_with_parent``)
  for SIGKILL.

While the report of finished runs is written after an interruption, a
further signal is deferred once (``deferred``), so a second Ctrl-C does not
lose the report; a third one stops it.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

SIGNALS = (signal.SIGINT, signal.SIGTERM)
PR_SET_PDEATHSIG = 1  # linux/prctl.h


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM arrived; ``exit_code`` is the shell's 128 + signal number."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"interrupted by {signal.Signals(signum).name}")
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


def exit_code(exc: BaseException) -> int:
    return exc.exit_code if isinstance(exc, Interrupted) else 128 + signal.SIGINT


def _raise(signum: int, frame: Any) -> None:
    raise Interrupted(signum)


@contextmanager
def interruptible() -> Iterator[None]:
    """Within the block, SIGINT and SIGTERM raise ``Interrupted`` in the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {s: signal.signal(s, _raise) for s in SIGNALS}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


@contextmanager
def deferred(notice: str) -> Iterator[list[int]]:
    """Within the block the first signal is only recorded (and ``notice`` printed); a second raises.

    Yields the list of signals received, so the caller can still exit with the right code.
    """
    got: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield got
        return
    pid = os.getpid()

    def note(signum: int, frame: Any) -> None:
        if os.getpid() != pid:  # a forked helper (report renderer) inherited this handler: carry on
            return
        got.append(signum)
        if len(got) > 1:
            raise Interrupted(signum)
        print(notice, file=sys.stderr, flush=True)

    old = {s: signal.signal(s, note) for s in SIGNALS}
    try:
        yield got
    finally:
        for s, h in old.items():
            signal.signal(s, h)


@contextmanager
def held() -> Iterator[None]:
    """Within the block SIGINT and SIGTERM are only recorded; the first one is delivered again, to the
    handler that was in place, when the block ends. For steps that must not be cut in two: a child
    process started but not yet registered for stopping would outlive an interrupt that lands between
    the two. Main thread only (elsewhere a no-op: signals run there)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    got: list[int] = []
    old = {s: signal.signal(s, lambda signum, frame: got.append(signum)) for s in SIGNALS}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        if got:
            signal.raise_signal(got[0])


def _worker_term(signum: int, frame: Any) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # let the partial results be written; the parent SIGKILLs later
    raise Interrupted(signum)


def init_worker(parent_pid: int) -> None:
    """ProcessPoolExecutor initializer: the worker's half of the contract in the module docstring."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _worker_term)
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os._exit(143)


def die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` that makes the child SIGKILLed when this process dies (Linux ``PR_SET_PDEATHSIG``), so a
    local run SIGKILLed leaves no engine listening; None elsewhere and off the main thread (the signal follows
    the thread that forked, and a helper thread that ends would take its children with it). libc is loaded
    before the fork, so the child runs one C call and a ``getppid`` check (the parent may already be gone)."""
    if not sys.platform.startswith("linux") or threading.current_thread() is not threading.main_thread():
        return None
    prctl = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True).prctl
    parent = os.getpid()

    def child() -> None:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(137)
    return child


def stop_workers(grace_s: float = 10.0) -> int:
    """SIGTERM every live multiprocessing child, wait up to ``grace_s``, SIGKILL the rest; returns how many."""
    children = multiprocessing.active_children()
    for p in children:
        p.terminate()
    deadline = time.monotonic() + grace_s
    for p in children:
        p.join(timeout=max(0.0, deadline - time.monotonic()))
    for p in children:
        if p.is_alive():
            p.kill()
            p.join(timeout=2.0)
    return len(children)


def stdout_gone() -> int:
    """The reader of stdout went away (``scalearena compare ... | head``): point stdout at /dev/null, so
    the interpreter's final flush raises no second BrokenPipeError, and return the exit status a
    shell gives a command killed by SIGPIPE (128 + 13)."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):  # io.UnsupportedOperation is a ValueError: stdout is not a file (tests)
        pass
    return 128 + signal.SIGPIPE
