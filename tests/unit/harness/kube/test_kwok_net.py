"""Each kwok cluster's block of loopback pod addresses (kube/kwok_net.py): two clusters up at once never share one."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from scalearena.contracts.errors import UserError
from scalearena.harness.kube import kwok, kwok_net


def test_block_zero_is_the_lone_clusters_cidrs_and_later_blocks_move_by_eight() -> None:
    assert [kwok_net.pod_cidr(0, i) for i in (1, 4)] == ["127.1.0.0/16", "127.4.0.0/16"]
    assert kwok_net.pod_cidr(1, 1) == "127.9.0.0/16"  # 8 * 1 + 1
    assert kwok_net.pod_cidr(30, 8) == "127.248.0.0/16"  # 8 * 30 + 8: the last block stays below 127.255
    with pytest.raises(ValueError):
        kwok_net.pod_cidr(31, 1)
    nodes = kwok.worker_nodes(pod_block=2)
    assert [n["spec"]["podCIDR"] for n in nodes] == ["127.17.0.0/16", "127.18.0.0/16", "127.19.0.0/16",
                                                     "127.20.0.0/16"]  # 8 * 2 + 1 ... 8 * 2 + 4


def test_a_second_cluster_gets_the_next_block_and_a_released_block_is_reused(tmp_path: Path) -> None:
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    running = {a: True, b: True}
    assert kwok_net.claim(a, running.__contains__, root=tmp_path / "claims") == 0
    assert kwok_net.claim(b, running.__contains__, root=tmp_path / "claims") == 1
    assert kwok_net.claim(a, running.__contains__, root=tmp_path / "claims") == 0  # its own block again
    kwok_net.release(a, root=tmp_path / "claims")
    assert kwok_net.claim(c, running.__contains__, root=tmp_path / "claims") == 0


def _dead_claim(root: Path, k: int, folder: Path) -> None:
    p = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    root.mkdir(parents=True, exist_ok=True)  # a claim by a process that has exited (its pid's start ticks: none)
    (root / f"block-{k}").write_text(json.dumps({"folder": str(folder), "pid": int(p.stdout), "started": 1.0}))


def test_a_claim_whose_process_exited_and_cluster_is_down_is_free_again(tmp_path: Path) -> None:
    root = tmp_path / "claims"
    _dead_claim(root, 0, tmp_path / "gone")
    _dead_claim(root, 1, tmp_path / "up")
    up = {tmp_path / "up"}
    # block 0: its claimer exited and its folder holds no running cluster; block 1's cluster still runs
    assert kwok_net.claim(tmp_path / "new", up.__contains__, root=root) == 0
    assert kwok_net.claim(tmp_path / "newer", up.__contains__, root=root) == 2


def test_a_cluster_still_starting_keeps_its_block(tmp_path: Path) -> None:
    """This process claimed block 0 for a cluster whose processes are not up yet (running() is False): another
    folder's claim must not take it while the claiming process lives."""
    root = tmp_path / "claims"
    assert kwok_net.claim(tmp_path / "starting", lambda f: False, root=root) == 0
    assert kwok_net.claim(tmp_path / "other", lambda f: False, root=root) == 1


def test_no_free_block_is_a_user_error(tmp_path: Path) -> None:
    root = tmp_path / "claims"
    for k in range(kwok_net.BLOCKS):
        assert kwok_net.claim(tmp_path / f"c{k}", lambda f: True, root=root) == k
    with pytest.raises(UserError, match="31 kwok clusters are running"):
        kwok_net.claim(tmp_path / "one-more", lambda f: True, root=root)


def test_a_second_run_waits_for_the_first_and_says_so(tmp_path: Path) -> None:
    """Two kwok runs on one host take turns (their services' names in /etc/hosts are the host's): a second lock
    waits while the first is held, names the holder, times out with RunFailed, and gets the lock once it is free."""
    from scalearena.contracts.errors import RunFailed

    first, second = kwok_net.RunLock(tmp_path), kwok_net.RunLock(tmp_path)
    first.acquire()
    said: list[str] = []
    with pytest.raises(RunFailed, match="held the services' names"):
        second.acquire(wait_s=0.6, say=said.append)
    assert len(said) == 1 and f"pid {os.getpid()}" in said[0]
    first.release()
    second.acquire(wait_s=0.1)  # free now: no wait
    second.release()
    second.release()  # idempotent


def test_the_lock_dies_with_its_process(tmp_path: Path) -> None:
    code = ("import sys; from pathlib import Path; from scalearena.harness.kube.kwok_net import RunLock; "
            "RunLock(Path(sys.argv[1])).acquire(); print('held', flush=True)")
    subprocess.run([sys.executable, "-c", code, str(tmp_path)], check=True, capture_output=True, timeout=60)
    lock = kwok_net.RunLock(tmp_path)
    lock.acquire(wait_s=0.1)  # the holder exited without release: the kernel dropped its flock
    lock.release()
