"""The cluster autoscaler's node pool (harness/sim/engine/nodes.py): packing, the node limit, the
scale-down timers and bin-packed placement, worked by hand."""
from __future__ import annotations

from typing import Any

import pytest

from scalearena.harness.config.startup_spec import NodePoolSpec
from scalearena.harness.sim.engine.nodes import NodePool


def pool(**over: Any) -> NodePool:
    spec = NodePoolSpec(**{"name": "p", "gpu": "H100-SXM", "gpus_per_node": 4, "min_nodes": 0, "max_nodes": 3,
                           **over})
    return NodePool(spec, lambda i: 300.0)


def test_scale_up_packs_pending_pods_onto_as_few_new_nodes_as_fit() -> None:
    # pods needing 2, 2, 1, 4 GPUs on 4-GPU nodes: first fit -> node A [2, 2], node B [1], node C [4]
    # (the 4 fits nowhere else); 3 nodes, all pods counted
    p = pool()
    nodes, waits = p.scale_up(10.0, [2, 2, 1, 4])
    assert len(nodes) == 3 and waits == [True, True, True, True]
    assert all(n.ready_s is None and n.requested_s == 10.0 for n in nodes)
    assert p.last_scale_up_s == 10.0


def test_scale_up_never_passes_the_node_limit_and_counts_provisioning_nodes() -> None:
    # max 3 nodes, one Ready (full) and one provisioning: room for 1 new node. Pending 4, 4, 4:
    # the first waits for the provisioning node, the second gets the one new node, the third waits for nothing
    p = pool()
    ready = p.add(0.0, 0.0)
    p.bind(ready, 4)
    p.add(5.0, None)
    nodes, waits = p.scale_up(10.0, [4, 4, 4])
    assert len(nodes) == 1 and waits == [True, True, False]
    assert len(p.live()) == 3
    # next scan: the same three pods are still pending; no new node (limit), the same two are counted
    nodes, waits = p.scale_up(20.0, [4, 4, 4])
    assert nodes == [] and waits == [True, True, False]


def test_fit_bin_packs_onto_the_fullest_ready_node() -> None:
    p = pool()
    a, b = p.add(0.0, 0.0), p.add(0.0, 0.0)
    p.bind(a, 3)  # a: 1 free, b: 4 free
    assert p.fit(1) is a  # fullest that fits
    assert p.fit(2) is b
    assert p.fit(5) is None
    p.add(1.0, None)  # provisioning: never a fit
    p.bind(b, 4)
    assert p.fit(2) is None


def test_empty_node_removed_after_unneeded_time_and_not_within_delay_after_add() -> None:
    # defaults: unneeded 600 s, delay after add 600 s. A scale-up at t=100 blocks removals until 700.
    # Node n0 is empty from the scan at t=0 on: unneeded since 0, eligible at 600, but the delay after
    # the t=100 scale-up holds it until 700; min_nodes 1 keeps the newest removal from going below 1.
    p = pool(min_nodes=1)
    n0 = p.add(0.0, 0.0)
    p.scale_down(0.0)
    assert n0.unneeded_since == 0.0
    new, _ = p.scale_up(100.0, [4])
    p.mark_ready(new[0], 400.0)
    p.bind(new[0], 4)
    assert p.scale_down(600.0) == []  # 600 - 100 < 600: scale-down in cooldown
    assert p.scale_down(700.0) == [n0]
    assert n0.removed_s == 700.0
    p.release(new[0], 4)
    assert p.scale_down(710.0) == []  # new[0] empty since 710 ...
    assert p.scale_down(1310.0) == []  # ... but it is the last node and min_nodes is 1
    # node-seconds: n0 from 0 to 700, new[0] from its request at 100 to the end at 2000
    assert p.node_seconds(2000.0) == pytest.approx(700.0 + 1900.0)


def test_a_node_that_gets_a_pod_restarts_its_unneeded_timer() -> None:
    p = pool()
    n = p.add(0.0, 0.0)
    p.scale_down(0.0)
    p.bind(n, 1)
    p.scale_down(300.0)  # busy: timer cleared
    p.release(n, 1)
    p.scale_down(310.0)  # empty again from here
    assert p.scale_down(900.0) == []  # 590 s unneeded
    assert p.scale_down(910.0) == [n]
