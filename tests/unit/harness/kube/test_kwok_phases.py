"""A kwok run's loop phases read from its Prometheus' series (harness/kube/phases.py)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from scalearena.harness.kube.phases import (
    measure,
    offset_of,
    rescales,
    rule_groups_of,
    start_lag_of,
    sync_lag_of,
    wall_seconds,
    wva_lead_of,
)


def test_an_offset_is_the_first_run_after_the_loads_start_modulo_the_interval() -> None:
    # t0 = 1000 (wall); scrapes at 993.5, 1008.5, 1023.5 at scale 1: the first after t0 is 8.5 s in
    assert offset_of([993.5, 1008.5, 1023.5], 1000.0, 1.0, 15.0) == 8.5
    # at time scale 2 the 15 s scrape runs every 7.5 wall s: 1003.2 is 6.4 scenario s after t0; 1010.7 -> 21.4 = 6.4
    assert offset_of([1003.2, 1010.7], 1000.0, 2.0, 15.0) == pytest.approx(6.4)
    assert offset_of([1033.0], 1000.0, 1.0, 15.0) == 3.0  # 33 mod 15
    assert offset_of([990.0], 1000.0, 1.0, 15.0) is None  # never after the start


def matrix(metric: dict[str, str], times: list[float]) -> dict[str, Any]:
    return {"metric": metric, "values": [[t, "1"] for t in times]}


def test_the_engines_offset_is_the_first_pods_and_each_rule_group_has_its_own() -> None:
    t0 = 1000.0
    series = {
        "up": [matrix({"component": "gateway", "pod": "gw"}, [1008.4, 1023.4]),
               matrix({"component": "variant", "variant": "va-sim", "pod": "late"}, [1076.2, 1091.2]),  # scaled up later: not it
               matrix({"component": "variant", "variant": "va-sim", "pod": "first"}, [987.1, 1002.1, 1017.1])],
        "model:requests_queued:sum": [matrix({"model_name": "m"}, [1005.5, 1020.5])],
        "ksm": [matrix({"job": "kube-state-metrics"}, [996.0, 1011.0, 1026.0])],
        "wva": [matrix({"component": "wva-controller"}, [1013.7, 1028.7])],
    }
    asked: list[tuple[str, float]] = []

    def raw(selector: str, at: float) -> list[dict[str, Any]]:
        asked.append((selector, at))
        name = ("ksm" if "kube-state-metrics" in selector else "wva" if "wva-controller" in selector
                else "up" if selector.startswith("up") else selector.split('"')[1])
        return series.get(name, [])

    out = measure(raw, t0, 1.0, 15.0, {"model-queue": (15.0, ["model:requests_queued:sum"]), "empty": (15.0, [])})
    # the first pod's first scrape after t0: 1002.1 -> 2.1; the gateway's 1008.4 -> 8.4; the group's 5.5; each pod
    # in the order its scrapes began: "first" (2.1), then "late" (1076.2 -> 76.2 mod 15 = 1.2); kube-state-metrics'
    # first after t0: 1011.0 -> 11.0; the WVA controller's exporter's: 1013.7 -> 13.7
    assert out == {"engine_scrape_s": 2.1, "gateway_scrape_s": 8.4, "rules_s": {"model-queue": 5.5},
                   "pod_scrape_s": {"va-sim": [2.1, 1.2]}, "kube_state_scrape_s": 11.0, "published_scrape_s": 13.7}
    assert all(at == t0 + 3600.0 for _, at in asked)  # one hour after the start holds the whole run


def test_rule_groups_come_from_the_runs_rule_file_in_scenario_seconds(tmp_path: Path) -> None:
    f = tmp_path / "scalearena-rules.yml"
    f.write_text("groups:\n- name: model-queue\n  interval: 7500ms\n  rules:\n  - record: a:b\n    expr: sum(x)\n"
                 "  - alert: Hot\n    expr: x > 1\n")
    # a group evaluated every 7.5 wall s at time scale 2 runs every 15 scenario s; alerts record nothing
    assert rule_groups_of(f, 2.0) == {"model-queue": (15.0, ["a:b"])}
    assert rule_groups_of(tmp_path / "none.yml", 1.0) == {}


def test_the_hpa_controllers_rescales_are_read_from_its_log_on_the_loads_axis() -> None:
    from datetime import datetime

    t0 = datetime(2026, 12, 5, 22, 21, 54, 584137).timestamp()  # klog writes local time: so does this
    text = "\n".join([
        'I1205 22:21:40.000000   13953 horizontal.go:510] "Horizontal Pod Autoscaler has been deleted" HPA="a/b"',
        'I1205 22:23:46.018695   13953 horizontal.go:884] "Successfully rescaled" logger="horizontal-pod-autoscaler-'
        'controller" HPA="scalearena/keda-hpa-x" currentReplicas=1 desiredReplicas=2 reason="above target"',
        'E1205 22:24:01.047629   13953 horizontal.go:884] "Successfully rescaled" HPA="scalearena/x" currentReplicas=2',
        'garbage line "Successfully rescaled"',
    ])
    # 22:23:46.018695 - 22:21:54.584137 = 111.434558 s; 22:24:01.047629 -> 126.463492; at time scale 2 twice that
    assert rescales(text, t0, 1.0) == [111.435, 126.463]
    assert rescales(text, t0, 2.0) == [222.869, 252.927]


def test_the_sync_lag_is_the_mean_delay_per_sync_behind_creation_plus_k_periods() -> None:
    # an HPA made 23.746 s before the load syncs at -23.746 + k x 15: the 9th at 111.254, the 10th at 126.254;
    # seen at 111.435 and 126.463: (111.435 - 111.254) / 9 = 0.02011, (126.463 - 126.254) / 10 = 0.0209;
    # mean 0.02051 -> 0.0205
    assert sync_lag_of([111.435, 126.463], 23.746, 15.0) == 0.0205
    assert sync_lag_of([], 23.746, 15.0) is None
    # a sync before the creation's first period (k = 0) says nothing about the lag; one exactly on time: 0
    assert sync_lag_of([-20.0, 36.254], 23.746, 15.0) == 0.0


def test_the_engines_start_lag_is_the_mean_from_each_rescale_to_the_containers_first_log_line(tmp_path: Path) -> None:
    import json
    from datetime import datetime

    t0 = datetime(2026, 12, 5, 22, 21, 54, 584137).timestamp()
    (tmp_path / "locust-start.json").write_text(json.dumps({"t0": t0}))
    (tmp_path / "kwok" / "control-plane").mkdir(parents=True)
    (tmp_path / "kwok" / "pods").mkdir(parents=True)
    (tmp_path / "kwok" / "control-plane" / "kube-controller-manager.log").write_text(
        'I1205 22:23:46.018695 1 horizontal.go:884] "Successfully rescaled" HPA="scalearena/x" currentReplicas=1\n'
        'I1205 22:24:01.047629 1 horizontal.go:884] "Successfully rescaled" HPA="scalearena/x" currentReplicas=2\n')
    pods = tmp_path / "kwok" / "pods"
    (pods / "ns_initial_engine.log").write_text('I1205 22:21:30.844068 1 config.go:808] "Configuration:" =<\n')  # before t0
    (pods / "ns_a_engine.log").write_text('I1205 22:23:46.221577 1 config.go:808] "Configuration:" =<\n{\n')
    (pods / "ns_b_engine.log").write_text('I1205 22:24:01.245058 1 config.go:808] "Configuration:" =<\n')
    (pods / "ns_c_engine.log").write_text('I1205 22:24:01.257277 1 config.go:808] "Configuration:" =<\n')
    (pods / "ns_d_engine.log").write_text("not klog\n")
    # a: 46.221577 - 46.018695 = 0.202882; b: 01.245058 - 01.047629 = 0.197429; c: 0.209648 -> mean 0.203320
    assert start_lag_of(tmp_path, 1.0) == 0.203
    assert start_lag_of(tmp_path, 2.0) == 0.407  # 0.40664 scenario seconds at time scale 2
    assert start_lag_of(tmp_path / "none", 1.0) is None


def test_the_wva_controllers_lead_is_read_from_its_logs_first_line(tmp_path: Path) -> None:
    from datetime import datetime

    (tmp_path / "wva-controller-controller.log").write_text(
        "2026-12-05 22:58:14,680 INFO scalearena.wva WVA controller: namespace=scalearena actuator=hpa\n"
        "2026-12-05 22:59:29,735 INFO scalearena.wva variant va-sim: up 1 -> 2 (wva.analyzer)\n")
    t0 = datetime(2026, 12, 5, 22, 58, 28, 47672).timestamp()
    # 22:58:28.047672 - 22:58:14.680 = 13.367672 wall s, 26.735 scenario s at time scale 2
    assert wva_lead_of(tmp_path, t0, 2.0) == 26.735
    assert wva_lead_of(tmp_path, t0 - 60.0, 2.0) is None  # started after the load: no lead to give
    assert wva_lead_of(tmp_path / "none", t0, 2.0) is None


def test_the_wall_seconds_are_placed_on_the_runs_time_axis() -> None:
    # a load that began at x.159 wall: the next whole second 0.841 s later; at time scale 2 that is 1.682 scenario
    # seconds, and wall seconds come every 2
    assert wall_seconds(1796521963.159, 1.0) == [1.0, 0.841]
    assert wall_seconds(1796521963.159, 2.0) == [2.0, 1.682]
    assert wall_seconds(1796521963.0, 1.0) == [1.0, 0.0]  # on a whole second
