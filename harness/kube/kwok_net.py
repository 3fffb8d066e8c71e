"""CLUSTER=kwok: what every kwok cluster on one host shares: loopback pod addresses and the services' names.

Every pod of a kwok cluster gets its IP from its node's pod CIDR, and its process binds podIP:containerPort on
this host (kube/launcher.py). Two clusters up at once (two ``SCALEARENA_KWOK_DIR`` folders: a user's second
cluster, or the test suite's workers) with the same CIDRs would hand out the same addresses, and the second
cluster's engines and gateway could not bind them, or would answer the first cluster's requests. So each cluster
claims a block of its own: block ``k`` gives node ``i`` (1-based) the CIDR ``127.(8k + i).0.0/16``. Block 0 is
what a lone cluster always had (127.1.0.0/16 ... 127.4.0.0/16); 31 blocks fit below 127.255.

A claim is a file ``block-<k>`` naming the cluster's folder and the process that claimed it, in one folder every
cluster on this host shares (``<temp>/scalearena-kwok-pods``), written under an exclusive ``flock`` so two
``up``s never take the same block. The processes of a cluster outlive the ``scalearena kwok up`` that started
them, so no lock can be held for a cluster's lifetime: a block is taken while its claiming process still runs
(the cluster is starting) or its folder holds a running cluster; otherwise it is free again (its ``down``
failed or never ran). ``down`` gives its block back.

The stack's Services are found by name (``prometheus.scalearena.svc``: KEDA's triggers, prometheus-adapter, the
WVA controller), and on kwok the names are lines in /etc/hosts (kube/kwok_infra.py), one block for the whole
host: two runs at once, on one cluster or two, would point each other's names at their own pods. So a run holds
``RunLock`` (an exclusive ``flock``, released when its process ends, whatever the end) from the start of its
stack to its stop; a second run waits for the first, saying so, up to ``wait_s``.
"""
from __future__ import annotations

import fcntl
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

from scalearena.contracts.errors import RunFailed, UserError
from scalearena.contracts.files import folder_lock
from scalearena.harness.local.supervisor import start_ticks

WIDTH = 8  # second octets per block: room for twice kind's four workers
BLOCKS = 31  # 127.1 ... 127.248


def claims_dir() -> Path:
    return Path(tempfile.gettempdir()) / "scalearena-kwok-pods"


def pod_cidr(block: int, node: int) -> str:
    """Node ``node``'s (1-based) pod CIDR in ``block``."""
    if not 0 <= block < BLOCKS or not 1 <= node <= WIDTH:
        raise ValueError(f"pod block {block}, node {node}: blocks are 0..{BLOCKS - 1}, nodes 1..{WIDTH}")
    return f"127.{WIDTH * block + node}.0.0/16"


def _claim_of(path: Path) -> tuple[Path, int, float | None] | None:
    """(folder, claiming pid, its start ticks) of a claim file; None when there is none (or it is unreadable)."""
    try:
        raw = json.loads(path.read_text())
        return Path(raw["folder"]), int(raw["pid"]), raw.get("started")
    except (OSError, ValueError, KeyError, TypeError):
        return None


def claim(folder: Path, running: Callable[[Path], bool], root: Path | None = None) -> int:
    """The first block that is free (no claim, or its cluster is not running) or already ``folder``'s; claimed."""
    root = root or claims_dir()
    with folder_lock(root):
        for k in range(BLOCKS):
            path = root / f"block-{k}"
            held = _claim_of(path)
            if held is not None and held[0] != folder and (start_ticks(held[1]) == held[2] or running(held[0])):
                continue
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps({"folder": str(folder), "pid": os.getpid(), "started": start_ticks(os.getpid())}))
            os.replace(tmp, path)
            return k
    raise UserError(f"{BLOCKS} kwok clusters are running on this host: no block of loopback pod addresses is free",
                    where=str(root), expected="`scalearena kwok down` of one of them (SCALEARENA_KWOK_DIR names it)")


def release(folder: Path, root: Path | None = None) -> None:
    """Give back every block ``folder`` holds."""
    root = root or claims_dir()
    if not root.is_dir():
        return
    with folder_lock(root):
        for path in root.glob("block-*"):
            if path.suffix == ".tmp":  # a claim being written
                continue
            held = _claim_of(path)
            if held is not None and held[0] == folder:
                path.unlink(missing_ok=True)


class RunLock:
    """The host's one kwok run at a time (see the module docstring); ``acquire`` waits, ``release`` is idempotent."""

    def __init__(self, root: Path | None = None) -> None:
        self.path = (root or claims_dir()) / ".run.lock"
        self._file: IO[str] | None = None

    def acquire(self, wait_s: float = 3600.0, say: Callable[[str], None] | None = None) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        f = open(self.path, "a+")  # noqa: SIM115 - held open for the run: the flock lives with it
        deadline, said = time.monotonic() + wait_s, False
        while True:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                f.seek(0)
                holder = f.read().strip() or "another process"
                if time.monotonic() > deadline:
                    f.close()
                    raise RunFailed(f"kwok: another kwok run on this host ({holder}) held the services' names "
                                    f"(/etc/hosts) for {wait_s:g} s; runs on kwok clusters of one host take turns") from None
                if not said:
                    (say or (lambda m: print(m, file=sys.stderr)))(
                        f"kwok: waiting for the other kwok run on this host ({holder}) to end: the stack's service "
                        "names (/etc/hosts) are the host's, so runs take turns")
                    said = True
                time.sleep(0.5)
        f.seek(0)
        f.truncate()
        f.write(f"pid {os.getpid()}")
        f.flush()
        self._file = f

    def release(self) -> None:
        f, self._file = self._file, None
        if f is not None:
            f.close()  # closing the file drops the flock
