"""Start-up phases read from a real cluster's pods (harness/sim/startup_phases.py kube_pod_record, kube Sampler):
creation, PodScheduled, container start and Ready become the same phase records the simulator writes."""
from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from scalearena.harness.sim.startup_phases import kube_pod_record

T0 = datetime.fromisoformat("2026-03-01T10:00:00+00:00").timestamp()


def to_t(wall: float) -> float:
    return wall - T0  # the run began at 10:00:00


def pod(**over: Any) -> dict[str, Any]:
    obj = {
        "metadata": {"name": "va-1", "creationTimestamp": "2026-03-01T10:00:30Z"},
        "spec": {"nodeName": "gpu-node-7"},
        "status": {"phase": "Running", "conditions": [
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-03-01T10:05:31Z"},
            {"type": "Initialized", "status": "True", "lastTransitionTime": "2026-03-01T10:05:31Z"},
            {"type": "ContainersReady", "status": "True", "lastTransitionTime": "2026-03-01T10:09:00Z"},
            {"type": "Ready", "status": "True", "lastTransitionTime": "2026-03-01T10:09:00Z"}],
            "containerStatuses": [{"name": "vllm", "state": {"running": {"startedAt": "2026-03-01T10:07:23Z"}}}]},
    }
    obj.update(over)
    return obj


def test_conditions_become_pending_container_creating_and_running_phases() -> None:
    # created 30 s into the run; scheduled at 331 s (a new node: a read saw it Unschedulable), the
    # container started at 443 s (image pulled), Ready at 540 s
    rec = kube_pod_record(pod(), "va", to_t, unschedulable=True, last_seen=None)
    assert [(p["phase"], p["stage"], p["start_s"], p["end_s"]) for p in rec["phases"]] == [
        ("unschedulable", "Pending", 30, 331), ("image_pull", "ContainerCreating", 331, 443),
        ("startup", "Running", 443, 540)]
    assert (rec["ready_s"], rec["node"], rec["end"], rec["start"]) == (540, "gpu-node-7", "running", "cold")


def test_a_pod_still_starting_and_one_from_before_the_run() -> None:
    starting = pod(status={"conditions": [{"type": "PodScheduled", "status": "True",
                                           "lastTransitionTime": "2026-03-01T10:00:31Z"}]})
    rec = kube_pod_record(starting, "va", to_t, unschedulable=False, last_seen=50.0)
    assert [(p["phase"], p["start_s"], p["end_s"]) for p in rec["phases"]] == [("scheduling", 30, 31)]
    assert (rec["ready_s"], rec["ended_s"], rec["end"]) == (None, 50, "deleted")
    old = kube_pod_record(pod(metadata={"name": "va-0", "creationTimestamp": "2026-03-01T09:00:00Z"}), "va", to_t,
                          unschedulable=False, last_seen=None)
    assert old["phases"] == [] and old["start"] == "initial"


def test_the_sampler_writes_one_row_per_pod_it_saw(tmp_path: Path) -> None:
    from scalearena.harness.config.scenario import load_scenario
    from scalearena.harness.kube.sampling import Sampler
    from scalearena.harness.kube.wva.fake import FakeKubeAPI
    from scalearena.reports.results import RunWriter

    root = Path(__file__).resolve().parents[4]
    sc = load_scenario(root / "workloads/scenarios/exp2-cost-aware.yaml")
    api = FakeKubeAPI.from_fixtures(root / "tests/fixtures/k8s", "deployment-va-a100.json", "deployment-va-h100.json")
    p = pod()
    p["metadata"]["namespace"] = "scalearena"
    p["metadata"]["labels"] = {"scalearena.io/component": "variant", "scalearena.io/variant": "va-a100"}
    api.store[("Pod", "scalearena", "va-1")] = p
    w = RunWriter(tmp_path, {})
    s = Sampler(sc, sc.autoscaler("hpa"), w, api, None, native=True, clock=lambda: T0 + 600)
    s.t0 = T0
    s.replicas("va-a100")
    s.write_pods()
    w.finish()
    rows = [json.loads(line) for line in (tmp_path / "pods.jsonl").read_text().splitlines()]
    assert [(r["pod"], r["variant"], r["ready_s"]) for r in rows] == [("va-1", "va-a100", 540)]
