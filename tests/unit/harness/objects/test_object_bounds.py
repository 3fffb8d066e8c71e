"""A policy's desired replicas past its variant's bounds (harness/control/plane.py ``bounded``): the decision
written is the one applied, the policy's own count kept in its audit; and the warning ``validate`` and a run's
start give for a user object whose maxReplicas (minReplicas) reaches past the variant's (harness/objects
``bound_warnings``). The case: an HPA object with maxReplicas 7 on a variant with max_replicas 4, which logged
"4 -> 7" while the simulator held 4."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from scalearena.controllers.base import Decision, Reason
from scalearena.controllers.hpa import HPAConfig
from scalearena.controllers.kubernetes import KubernetesConfig
from scalearena.harness.control.plane import ControlPlane, bounded
from scalearena.harness.control.ports import VirtualClock
from scalearena.harness.control.view import VariantInfo
from scalearena.harness.objects import bound_warnings, compile_objects
from tests.unit.harness.control.test_control_plane_fast import Ports

VA = VariantInfo("a", "m", "A100-80GB", 1, 1.0, 1, 4)  # min_replicas 1, max_replicas 4


class Wants:
    """A policy that asks for fixed counts: {variant: desired}."""

    period_s = 15.0
    fast_period_s = None

    def __init__(self, want: dict[str, int]) -> None:
        self.want = want

    def decide(self, now: float, view: Any) -> list[Decision]:
        return [Decision(n, view.variant(n).spec_replicas, d, (Reason("wants", f"wants {d}"),), audit={"stage": 1})
                for n, d in self.want.items()]

    def decide_fast(self, now: float, view: Any) -> list[Decision]:
        return []


class Rows:
    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def add_decision(self, t: float, label: str, dec: Decision, loop: str = "main") -> None:
        self.rows.append(dec.to_dict())

    def add_timeseries(self, row: Any) -> None:
        pass


def test_a_decision_within_the_bounds_is_the_policys_own() -> None:
    d = Decision("a", 2, 3, (Reason("r", "m"),))
    assert bounded(d, VA) is d


def test_seven_asked_on_a_variant_with_room_for_four_is_recorded_as_four() -> None:
    # spec a = 0 -> 4 (the cap), b = 2 with no bounds hit
    ports = Ports()
    ports.spec["a"] = 4
    writer = Rows()
    b = VariantInfo("b", "n", "A100-80GB", 1, 1.0, 0, 4)
    plane = ControlPlane(Wants({"a": 7, "b": 3}), "w", [VA, b], clock=VirtualClock(), metrics=ports,  # type: ignore[arg-type]
                         actuator=ports, probe=ports, writer=writer)
    out = plane.decide(now=15.0)
    a, bb = writer.rows
    # 4 running, 7 asked, max_replicas 4: desired 4, so the action is hold (4 -> 4), not scale_up (4 -> 7)
    assert (a["current_replicas"], a["desired_replicas"], a["action"]) == (4, 4, "hold")
    assert a["audit"] == {"stage": 1, "requested_replicas": 7}
    assert a["reasons"][-1] == {"rule": "variant_bounds", "message": "7 requested; the variant's max_replicas 4 "
                                "caps it: the cluster has room for 4", "values": {"requested": 7, "max_replicas": 4}}
    assert [r["rule"] for r in a["reasons"]] == ["wants", "variant_bounds"]
    assert (bb["desired_replicas"], bb["audit"]) == (3, {"stage": 1})  # within 0..4: untouched
    assert [d.desired_replicas for d in out] == [4, 3]  # what decide returns is what was written
    assert ports.scaled == [("b", 3)]  # a already at 4: no scale call


def test_below_min_replicas_is_recorded_as_the_floor() -> None:
    ports = Ports()
    ports.spec["a"] = 2
    writer = Rows()
    plane = ControlPlane(Wants({"a": 0}), "w", [VA], clock=VirtualClock(), metrics=ports,  # type: ignore[arg-type]
                         actuator=ports, probe=ports, writer=writer)
    plane.decide(now=15.0)
    (a,) = writer.rows
    # 2 running, 0 asked, min_replicas 1: desired 1, a scale-down by one
    assert (a["desired_replicas"], a["action"], a["audit"]["requested_replicas"]) == (1, "scale_down", 0)
    assert a["reasons"][-1]["message"] == "0 requested; the variant's min_replicas 1 holds it at 1"
    assert ports.scaled == [("a", 1)]


HPA = """apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: my-hpa, namespace: scalearena}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: a}
  minReplicas: 1
  maxReplicas: 7
  metrics:
    - type: Pods
      pods:
        metric: {name: vllm_num_requests_waiting}
        target: {type: AverageValue, averageValue: "3"}
"""
ADAPTER = """rules:
  - seriesQuery: 'vllm:num_requests_waiting{namespace!="",pod!=""}'
    resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}}}
    name: {matches: "^vllm:(.*)$", as: "vllm_${1}"}
    metricsQuery: 'max by (<<.GroupBy>>) (<<.Series>>{<<.LabelMatchers>>})'
"""
SO = """apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata: {name: my-so, namespace: scalearena}
spec:
  scaleTargetRef: {name: b}
  triggers:
    - type: prometheus
      metadata: {query: 'sum(vllm:num_requests_waiting)', threshold: "3"}
"""


def test_an_object_bound_past_its_variants_is_named_once(tmp_path: Path) -> None:
    (tmp_path / "hpa.yaml").write_text(HPA)
    (tmp_path / "a.yaml").write_text(ADAPTER)
    (tmp_path / "so.yaml").write_text(SO)
    cfg = compile_objects(KubernetesConfig(name="mine", objects=["hpa.yaml", "a.yaml", "so.yaml"]), tmp_path,
                          {"a": "m", "b": "m"})
    b = VariantInfo("b", "m", "A100-80GB", 1, 1.0, 1, 100)
    # HPA: maxReplicas 7 > a's 4, minReplicas 1 = a's 1. ScaledObject: KEDA's defaults minReplicaCount 0 < b's 1,
    # maxReplicaCount 100 = b's 100
    assert bound_warnings(cfg, [VA, b]) == [
        "autoscaler 'mine': hpa.yaml: HorizontalPodAutoscaler/my-hpa: maxReplicas 7 is above the max_replicas 4 "
        "of variant 'a'; the variant's max_replicas 4 caps it: the cluster has room for 4 (a decision records the "
        "replicas applied, the object's own count in audit.requested_replicas)",
        "autoscaler 'mine': so.yaml: ScaledObject/my-so: minReplicaCount 0 is below the min_replicas 1 "
        "of variant 'b', which holds it at 1 (set the variant's min_replicas to 0 to let the object go lower)"]
    assert bound_warnings(cfg, [VariantInfo("a", "m", "A100-80GB", 1, 1.0, 1, 7),
                                VariantInfo("b", "m", "A100-80GB", 1, 1.0, 0, 100)]) == []
    assert bound_warnings(HPAConfig(), [VA]) == []  # a preset: no objects


def test_validate_warns_and_still_passes(tmp_path: Path) -> None:
    import yaml

    from tests.unit.harness.cli.test_cli import scalearena

    (tmp_path / "hpa.yaml").write_text(HPA)
    (tmp_path / "a.yaml").write_text(ADAPTER)
    engine = {"max_num_seqs": 8, "kv_cache_blocks": 1024, "block_size": 16,
              "latency": {"kind": "constant", "ttft_ms": 100, "itl_ms": 20}}
    scenario = {"name": "capped", "duration_s": 60,
                "cluster": {"variants": [{"name": "a", "model": "m", "gpu": "H100-SXM", "max_replicas": 4,
                                          "engine": engine}]},
                "workload": {"arrivals": {"kind": "stepped", "steps": [{"duration_s": 60, "rate_rps": 1}]},
                             "input_tokens": {"kind": "fixed", "value": 200},
                             "output_tokens": {"kind": "fixed", "value": 100}},
                "autoscalers": [{"kind": "kubernetes", "name": "mine", "objects": ["hpa.yaml", "a.yaml"]}]}
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(scenario))
    r = scalearena("validate", str(tmp_path / "s.yaml"))
    assert r.returncode == 0 and "  mine: HorizontalPodAutoscaler/my-hpa -> variant a (hpa)" in r.stdout
    assert r.stderr.count("warning:") == 1
    assert f"warning: {tmp_path / 's.yaml'}: autoscaler 'mine': {tmp_path / 'hpa.yaml'}: HorizontalPodAutoscaler/" \
        "my-hpa: maxReplicas 7 is above the max_replicas 4 of variant 'a'; the variant's max_replicas 4 caps it: " \
        "the cluster has room for 4" in r.stderr
