"""The control loops' phase against the load (Scenario.phases): the simulator ticks where a real controller
started that long before the load would; a kube run measures the lead of its own controllers and refuses the field."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from scalearena.contracts.errors import UserError
from scalearena.harness.config.scenario import load_scenario
from scalearena.harness.kube.backend import KubeBackend
from scalearena.harness.kube.sampling import Sampler
from scalearena.harness.kube.wva.fake import FakeKubeAPI
from scalearena.harness.sim.backend import Simulation
from scalearena.reports.results import RunWriter
from scalearena.workloads.generate import build_requests

ROOT = Path(__file__).resolve().parents[4]
SVR = ROOT / "workloads" / "scenarios" / "sim-vs-real.yaml"


def simulate(tmp_path: Path, autoscaler: str, lead: float, lag: float = 0.0) -> tuple[list[dict], pd.Series]:
    sc = load_scenario(SVR, [f"phases.control_lead_s={lead}", f"phases.sync_lag_s={lag}"], seed=1)
    w = RunWriter(tmp_path / f"{autoscaler}-{lead}-{lag}", {})
    Simulation(sc, sc.autoscaler(autoscaler), w, build_requests(sc)).run()
    w.finish()
    rows = [json.loads(x) for x in (w.dir / "decisions.jsonl").read_text().splitlines()]
    ts = pd.read_parquet(w.dir / "timeseries.parquet").set_index("t_s")["spec_replicas"]
    return rows, ts


def test_the_hpa_decides_in_the_phase_of_one_created_that_long_before_the_load(tmp_path: Path) -> None:
    rows, _ = simulate(tmp_path, "hpa", 39.5)
    # created at -39.5, it syncs every 15 s: -24.5, -9.5, then 5.5, 20.5, ..., 215.5 inside the 220 s window
    assert [r["t_s"] for r in rows] == pytest.approx([5.5 + 15 * k for k in range(15)])
    rows, _ = simulate(tmp_path, "hpa", 0.0)
    assert [r["t_s"] for r in rows] == pytest.approx([15.0 * k for k in range(15)])  # 0, 15, ..., 210: as before


def test_wva_and_its_actuation_hpa_both_take_the_lead(tmp_path: Path) -> None:
    rows, ts = simulate(tmp_path, "wva", 8.0)
    # WVA's 30 s loop from -8: 22, 52, ..., 202 (7 decisions in the window)
    assert [r["t_s"] for r in rows] == pytest.approx([22.0 + 30 * k for k in range(7)])
    # its HPA syncs from -8 every 15 s: 7, 22, 37, ...; the Deployment only ever changes at one of them, so a
    # change of spec_replicas is seen at the first 5 s sample after a sync time: 7 -> 10, 22 -> 25, 37 -> 40, ...
    changes = [t for t, prev, now in zip(ts.index[1:], ts.values[:-1], ts.values[1:], strict=True) if now != prev]
    assert changes, "the staircase moves WVA"
    assert all(round(t) % 15 == 10 for t in changes), changes


def test_each_hpa_sync_comes_one_reconcile_later_with_a_sync_lag(tmp_path: Path) -> None:
    rows, _ = simulate(tmp_path, "hpa", 39.5, lag=0.05)
    # created at -39.5, synced every 15.05 s: the first after 0 is 3 x 15.05 - 39.5 = 5.65, then 20.7, ...,
    # 5.65 + 14 x 15.05 = 216.35 inside the 220 s window
    assert [r["t_s"] for r in rows] == pytest.approx([5.65 + 15.05 * k for k in range(15)])
    rows, _ = simulate(tmp_path, "keda", 0.0, lag=0.05)  # KEDA's generated HPA: the same controller
    assert [r["t_s"] for r in rows][:3] == pytest.approx([0.0, 15.05, 30.1])


def test_a_sync_lag_moves_wvas_actuation_hpa_and_not_wvas_own_ticker(tmp_path: Path) -> None:
    rows, ts = simulate(tmp_path, "wva", 8.0, lag=0.5)
    assert [r["t_s"] for r in rows] == pytest.approx([22.0 + 30 * k for k in range(7)])  # WVA's loop as without
    # its HPA from -8 every 15.5 s: 7.5, 23, 38.5, 54, 69.5, 85, 100.5, 116, 131.5, 147, 162.5, 178, 193.5, 209;
    # a change is seen at the first 5 s sample at or after its sync
    syncs = [-8.0 + 15.5 * k for k in range(1, 15)]
    seen = {5.0 * -(-s // 5.0) for s in syncs}
    changes = [t for t, prev, now in zip(ts.index[1:], ts.values[:-1], ts.values[1:], strict=True) if now != prev]
    assert changes, "the staircase moves WVA"
    assert set(changes) <= seen, (changes, sorted(seen))


def test_wvas_own_loop_takes_its_own_lead_and_its_hpa_the_published_targets_scrapes(tmp_path: Path) -> None:
    sc = load_scenario(SVR, ["phases.control_lead_s=27.2", "phases.decide_lead_s=26.7",
                             "phases.published_scrape_s=13.8", "phases.engine_scrape_s=1"], seed=1)
    w = RunWriter(tmp_path / "run", {})
    sim = Simulation(sc, sc.autoscaler("wva"), w, build_requests(sc))
    sim.run()
    w.finish()
    rows = [json.loads(x) for x in (w.dir / "decisions.jsonl").read_text().splitlines()]
    # WVA's ticker from -26.7: 3.3, 33.3, ..., 213.3; not the HPA's -27.2 (that would be 2.8, 32.8, ...)
    assert [r["t_s"] for r in rows] == pytest.approx([3.3 + 30 * k for k in range(8)])
    # its HPA reads the exporter as scraped at 0 and 13.8 + 15k: at 17.5 the last scrape is 13.8, at 29 it is 28.8;
    # before 13.8 it is the one at 0
    assert sim.scraped_by(17.5) == pytest.approx(13.8)
    assert sim.scraped_by(29.0) == pytest.approx(28.8)
    assert sim.scraped_by(5.0) == 0.0
    assert sim.scraped_by(13.8) == pytest.approx(13.8)


def test_a_kube_run_refuses_the_field_for_the_clusters_own_controllers() -> None:
    sc = load_scenario(SVR, ["phases.control_lead_s=8"])
    with pytest.raises(UserError, match="control_lead_s = 8") as e:
        KubeBackend("kind").plan(sc, sc.autoscaler("hpa"))
    assert "control_lead" in str(e.value)
    KubeBackend("kind").plan(sc, sc.autoscaler("static"))  # static runs out of cluster here: its loop takes it


def test_a_kube_run_records_its_controllers_lead_in_scenario_seconds(tmp_path: Path) -> None:
    from scalearena.harness.kube.births import HpaBirths

    sc = load_scenario(SVR)
    api = FakeKubeAPI([{"kind": "HorizontalPodAutoscaler", "metadata": {"name": "va-sim", "namespace": "scalearena"}}])
    w = RunWriter(tmp_path / "run", {})
    births = HpaBirths(api, "scalearena", applied_wall=1000.0)
    births.poll(first=True)  # the apply made the HPA
    s = Sampler(sc, sc.autoscaler("hpa"), w, api, None, native=True, time_scale=2.0, births=births)
    s.t0 = 1019.75  # the load began 19.75 wall seconds after the apply: 39.5 s of scenario time at scale 2
    s.record_lead()
    assert w.meta["events"] == [{"t_s": -39.5, "kind": "control_lead", "control_lead_s": 39.5, "origin": "apply"}]
    # a policy the harness runs out of cluster starts its own loop with the load: nothing to record
    w2 = RunWriter(tmp_path / "run2", {})
    s2 = Sampler(sc, sc.autoscaler("static"), w2, api, None, native=False, births=births)
    s2.t0 = 1019.75
    s2.record_lead()
    assert "events" not in w2.meta


def test_the_engines_and_the_gateway_scrape_at_their_measured_offsets(tmp_path: Path) -> None:
    sc = load_scenario(SVR, ["phases.engine_scrape_s=2.5", "phases.gateway_scrape_s=23", "duration_s=40", "drain_s=0"],
                       seed=1)
    sim = Simulation(sc, sc.autoscaler("hpa"), RunWriter(tmp_path / "run", {}), build_requests(sc))
    sim.run()

    def last_scrape(series: str, at: float) -> float:
        return float(sim.metrics.query(f"max(timestamp({series}))", at)[0]["value"][1])

    # engines: 0, then 2.5, 17.5, 32.5; the gateway on its own chain: 0, then 23 mod 15 = 8, 23, 38
    assert [last_scrape("vllm:num_requests_waiting", t) for t in (1.0, 10.0, 20.0, 35.0)] == [0.0, 2.5, 17.5, 32.5]
    assert [last_scrape("llm_d_epp_flow_control_queue_size", t) for t in (1.0, 10.0, 30.0, 39.0)] == [0.0, 8.0, 23.0,
                                                                                                        38.0]


def test_kedas_queries_fall_on_the_measured_wall_seconds(tmp_path: Path) -> None:
    sc = load_scenario(SVR, ["phases.keda_query_grid_s=[2, 1.5]", "phases.control_lead_s=26.9", "duration_s=40",
                             "drain_s=0"], seed=1)
    w = RunWriter(tmp_path / "run", {})
    sim = Simulation(sc, sc.autoscaler("keda"), w, build_requests(sc))
    sim.run()
    assert sim.metrics.query_grid == (2.0, 1.5)
    # KEDA's syncs from -26.9 every 15 s: 3.1, 18.1, 33.1; each asks at the last of 1.5 + 2k before it
    assert [sim.metrics.keda_query_time(t) for t in (3.1, 18.1, 33.1)] == pytest.approx([1.5, 17.5, 31.5])


def test_kube_state_metrics_scrape_on_their_own_chain(tmp_path: Path) -> None:
    sc = load_scenario(SVR, ["phases.engine_scrape_s=2.5", "phases.kube_state_scrape_s=26", "duration_s=40",
                             "drain_s=0"], seed=1)
    sim = Simulation(sc, sc.autoscaler("hpa"), RunWriter(tmp_path / "run", {}), build_requests(sc))
    sim.run()

    def last_scrape(series: str, at: float) -> float:
        return float(sim.metrics.query(f"max(timestamp({series}))", at)[0]["value"][1])

    # kube-state-metrics: 0, then 26 mod 15 = 11, 26; the engines keep theirs: 0, 2.5, 17.5, 32.5
    assert [last_scrape("kube_deployment_status_replicas", t) for t in (1.0, 12.0, 25.0, 39.0)] == [0.0, 11.0, 11.0,
                                                                                                      26.0]
    assert [last_scrape("vllm:num_requests_waiting", t) for t in (1.0, 10.0, 20.0, 35.0)] == [0.0, 2.5, 17.5, 32.5]


def test_the_scrape_and_rule_offsets_are_the_simulators_only() -> None:
    from scalearena.harness.config.startup_spec import refuse_sim_only

    sc = load_scenario(SVR, ["phases.gateway_scrape_s=3", 'phases.rules_s={"model-queue": 5}',
                             "phases.kube_state_scrape_s=4", "phases.sync_lag_s=0.03", "phases.keda_query_grid_s=[1, 0.2]"])
    with pytest.raises(UserError, match="phases.gateway_scrape_s, phases.keda_query_grid_s, phases.kube_state_scrape_s, "
                                        "phases.sync_lag_s, phases.rules_s: only --cluster sim") as e:
        refuse_sim_only(sc, "local")
    assert "a real Prometheus keeps its own" in str(e.value)


def test_each_pod_listed_scrapes_at_its_own_offset_in_the_order_pods_become_ready(tmp_path: Path) -> None:
    # the staircase scales va-sim up; its first pod (ready at 0) scrapes at 7.5 + 15k, the second pod to become
    # ready at 4.3 + 15k from its readiness on; pods past the list with the engines' chain (2.0 + 15k)
    sc = load_scenario(SVR, ["phases.engine_scrape_s=2", 'phases.pod_scrape_s={"va-sim": [7.5, 4.3]}'], seed=1)
    sim = Simulation(sc, sc.autoscaler("hpa"), RunWriter(tmp_path / "run", {}), build_requests(sc))
    sim.run()
    pods = sorted((p for d in sim.deps for p in d.pods), key=lambda p: 1e9 if p.ready_s is None else p.ready_s)
    assert len([p for p in pods if p.ready_s is not None]) >= 3, "the staircase needs three pods or more"

    def scrapes(pod: str) -> list[float]:
        res = sim.metrics.query(f'timestamp(vllm:num_requests_waiting{{pod="{pod}"}})[5m:1s]', 220.0)
        return sorted({float(v) for r in res for _, v in r["values"]})

    first, second, third = pods[0], pods[1], pods[2]
    assert all(round(t - 7.5) % 15 == 0 for t in scrapes(first.name) if t > 0), scrapes(first.name)
    assert scrapes(second.name) and all(round(t - 4.3, 6) % 15 == 0 for t in scrapes(second.name))
    assert scrapes(second.name)[0] - (second.ready_s or 0) < 15.0  # its first at or after its readiness
    assert all(round(t - 2.0, 6) % 15 == 0 for t in scrapes(third.name)), scrapes(third.name)
