"""A kwok run's loop phases read from its Prometheus' series (harness/kube/phases.py)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from scalearena.harness.kube.phases import measure, offset_of, rule_groups_of


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
    }
    asked: list[tuple[str, float]] = []

    def raw(selector: str, at: float) -> list[dict[str, Any]]:
        asked.append((selector, at))
        name = "up" if selector.startswith("up") else selector.split('"')[1]
        return series.get(name, [])

    out = measure(raw, t0, 1.0, 15.0, {"model-queue": (15.0, ["model:requests_queued:sum"]), "empty": (15.0, [])})
    # the first pod's first scrape after t0: 1002.1 -> 2.1; the gateway's 1008.4 -> 8.4; the group's 5.5; each pod
    # in the order its scrapes began: "first" (2.1), then "late" (1076.2 -> 76.2 mod 15 = 1.2)
    assert out == {"engine_scrape_s": 2.1, "gateway_scrape_s": 8.4, "rules_s": {"model-queue": 5.5},
                   "pod_scrape_s": {"va-sim": [2.1, 1.2]}}
    assert all(at == t0 + 3600.0 for _, at in asked)  # one hour after the start holds the whole run


def test_rule_groups_come_from_the_runs_rule_file_in_scenario_seconds(tmp_path: Path) -> None:
    f = tmp_path / "scalearena-rules.yml"
    f.write_text("groups:\n- name: model-queue\n  interval: 7500ms\n  rules:\n  - record: a:b\n    expr: sum(x)\n"
                 "  - alert: Hot\n    expr: x > 1\n")
    # a group evaluated every 7.5 wall s at time scale 2 runs every 15 scenario s; alerts record nothing
    assert rule_groups_of(f, 2.0) == {"model-queue": (15.0, ["a:b"])}
    assert rule_groups_of(tmp_path / "none.yml", 1.0) == {}
