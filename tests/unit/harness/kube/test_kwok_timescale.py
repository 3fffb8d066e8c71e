"""CLUSTER=kwok's time scale (kube/timescale.py): every duration of the applied objects divided, roundings noted,
and what cannot be scaled refused. Expected values are worked out by hand in the comments."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from scalearena.contracts.errors import UserError
from scalearena.harness.config.scenario import load_scenario
from scalearena.harness.kube import launcher as L
from scalearena.harness.kube.backend import KubeBackend
from scalearena.harness.kube.timescale import TimeScale, refuse_scaled_promql, scale_objects
from scalearena.harness.kube.wva.__main__ import parse_args
from scalearena.harness.run.registry import resolve_options

ROOT = Path(__file__).resolve().parents[4]
EXP2 = ROOT / "workloads/scenarios/exp2-cost-aware.yaml"


def test_hpa_behavior_is_divided_and_upstream_defaults_are_written_out_first() -> None:
    ts = TimeScale(4)
    b = {"scaleDown": {"stabilizationWindowSeconds": 300,
                       "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}]}}
    ts.behavior(b, "HPA x")
    # 300/4 = 75, 60/4 = 15: exact
    assert b["scaleDown"]["stabilizationWindowSeconds"] == 75
    assert b["scaleDown"]["policies"] == [{"type": "Pods", "value": 1, "periodSeconds": 15}]
    assert b["scaleDown"]["selectPolicy"] == "Max"  # the API server's default, written out
    # scaleUp was absent: upstream's default rule (0 s window; 4 pods and 100 % per 15 s) with 15/4 = 3.75 -> 4
    assert b["scaleUp"]["stabilizationWindowSeconds"] == 0
    assert [p["periodSeconds"] for p in b["scaleUp"]["policies"]] == [4, 4]
    assert [p["value"] for p in b["scaleUp"]["policies"]] == [4, 100]
    # the two roundings, each with its scenario time: 4 s wall x 4 = 16 s
    assert len(ts.notes) == 2 and all("16 s of scenario time" in n for n in ts.notes)


def test_scaled_object_intervals_with_keda_defaults() -> None:
    ts = TimeScale(4)
    spec = {"pollingInterval": 5, "triggers": []}
    ts.scaled_object(spec, "ScaledObject a")
    # pollingInterval 5/4 = 1.25 -> 1 (4 s of scenario time); cooldownPeriod absent = KEDA's 300 -> 75
    assert spec["pollingInterval"] == 1 and spec["cooldownPeriod"] == 75
    assert ts.notes == ["ScaledObject a spec.pollingInterval: 5 s is 1 s wall, 4 s of scenario time"]
    ts5 = TimeScale(5)
    spec = {"pollingInterval": 5, "cooldownPeriod": 30, "initialCooldownPeriod": 0}
    ts5.scaled_object(spec, "b")
    assert (spec["pollingInterval"], spec["cooldownPeriod"], spec["initialCooldownPeriod"]) == (1, 6, 0)
    assert ts5.notes == []  # 5/5 and 30/5 are whole


def test_a_positive_duration_never_rounds_to_zero() -> None:
    ts = TimeScale(10)
    assert ts.whole(3, "w") == 1  # 0.3 s -> 1 s, not 0 (which means "none" to the controllers)
    assert ts.whole(0, "w") == 0
    assert ts.whole(4, "w") == 1 and len(ts.notes) == 2  # 0.4 -> 1 (and the first one)


def test_plan_scales_every_duration_of_a_kwok_run() -> None:
    sc = load_scenario(EXP2, overrides=["duration_s=60"])
    plain = KubeBackend("kwok").plan(sc, sc.autoscaler("keda"))
    fast = KubeBackend("kwok", time_scale=2)  # exp2's sim latencies (200 ms, 2 ms) stay whole ms only at 1 and 2
    objs = fast.plan(sc, sc.autoscaler("keda"))
    by = {(o["kind"], o["metadata"]["name"]): o for o in objs}
    before = {(o["kind"], o["metadata"]["name"]): o for o in plain}
    for key, o in by.items():
        if key[0] == "ScaledObject":
            b = before[key]["spec"]
            assert o["spec"]["pollingInterval"] == max(1, round(b.get("pollingInterval", 30) / 2))
            assert o["spec"]["cooldownPeriod"] == round(b.get("cooldownPeriod", 300) / 2)
    prom = yaml.safe_load(by[("ConfigMap", "prometheus-config")]["data"]["prometheus.yml"])
    # the scenario's scrape interval over 2, in whole ms (Prometheus' v2 durations take no fractions)
    assert prom["global"]["scrape_interval"] == f"{round(sc.metrics.scrape_interval_s / 2 * 1000)}ms"
    prom_args = by[("Deployment", "prometheus")]["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--query.lookback-delta=150s" in prom_args  # 5 min / 2
    router = by[("Deployment", "gateway")]["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--time-scale=2.0" in router
    sims = [c for o in objs if o["kind"] == "Deployment" for c in o["spec"]["template"]["spec"]["containers"]
            if "llm-d-inference-sim" in c["image"]]
    assert sims and all("--inter-token-latency=2ms" in c["args"] for c in sims)  # the launcher divides these
    assert "--time-scale" not in str(plain) and "lookback-delta" not in str(plain)  # scale 1: untouched


def test_wva_controller_gets_wall_periods_and_its_scale() -> None:
    sc = load_scenario(EXP2, overrides=["duration_s=60"])
    cfg = sc.autoscaler("wva")
    objs = {(o["kind"], o["metadata"]["name"]): o for o in KubeBackend("kwok", time_scale=2).plan(sc, cfg)}
    data = objs[("ConfigMap", "wva-controller-config")]["data"]
    assert float(data["WVA_INTERVAL_S"]) == pytest.approx(cfg.period_s / 2)
    assert data["WVA_TIME_SCALE"] == "2.0"
    zero = yaml.safe_load(objs[("ConfigMap", "wva-scale-to-zero-config")]["data"]["default"])
    retention = (cfg.scale_to_zero.retention_s if cfg.scale_to_zero else 600)
    assert zero["scaleToZeroRetentionPeriod"] == f"{retention / 2:.6g}s"
    args = parse_args(["--time-scale", data["WVA_TIME_SCALE"]])
    assert args.time_scale == 2.0


def test_a_scale_that_would_make_sim_latencies_fractional_is_refused() -> None:
    # llm-d-inference-sim sleeps whole ms: exp2's ITL 2 ms at scale 5 would be 0.4 ms, run as 0 ms. The scales that
    # keep 200 ms and 2 ms whole: 1 and 2
    sc = load_scenario(EXP2, overrides=["duration_s=60"])
    with pytest.raises(UserError) as e:
        KubeBackend("kwok", time_scale=5).plan(sc, sc.autoscaler("hpa"))
    assert "--inter-token-latency=2ms would be 0.4 ms" in e.value.render()
    assert e.value.render().endswith("(expected a time scale keeping every sim latency whole: 1, 2)")


def test_time_scale_is_refused_where_it_cannot_hold() -> None:
    with pytest.raises(UserError, match="run in real time"):
        KubeBackend("kind", time_scale=2)
    with pytest.raises(UserError, match="--backend-option"):
        resolve_options("kwok", {"time_scale": "0"})
    assert resolve_options("kwok", {}, env={"SCALEARENA_TIME_SCALE": "5"}).time_scale == 5.0
    sc = load_scenario(EXP2, overrides=["duration_s=60"])
    user = sc.autoscaler("llmd-queue-guard")  # an llm-d recipe: ScaledObjects with their own PromQL
    with pytest.raises(UserError, match="rate\\(\\) per wall second"):
        refuse_scaled_promql(user, 2)
    with pytest.raises(UserError, match="cannot be sped up"):
        KubeBackend("kwok", time_scale=2).plan(sc, user)
    refuse_scaled_promql(user, 1)  # real time: nothing to scale


def test_objects_sharing_a_behavior_are_each_scaled_once() -> None:
    # hpa_objects gives every variant's HPA the same behavior dict: scaled twice it would read 300 -> 60 -> 12
    shared = {"scaleDown": {"stabilizationWindowSeconds": 300}}
    objs = [{"kind": "HorizontalPodAutoscaler", "metadata": {"name": n}, "spec": {"behavior": shared}}
            for n in ("a", "b")]
    scaled, notes = scale_objects(objs, 5)
    # 300/5 = 60; the filled-in 15 s periods: 15/5 = 3, whole
    assert [o["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"] for o in scaled] == [60, 60]
    assert [p["periodSeconds"] for o in scaled for p in o["spec"]["behavior"]["scaleUp"]["policies"]] == [3] * 4
    assert notes == []


def test_scale_one_returns_the_same_objects() -> None:
    objs = [{"kind": "ScaledObject", "metadata": {"name": "a"}, "spec": {"pollingInterval": 5}}]
    same, notes = scale_objects(objs, 1)
    assert same is objs and notes == []
    scaled, _ = scale_objects(objs, 5)
    assert scaled[0]["spec"]["pollingInterval"] == 1 and objs[0]["spec"]["pollingInterval"] == 5  # a copy


def test_sim_latency_flags_are_divided_by_the_time_scale() -> None:
    program = L.sim_program(binary=lambda: "/bin/sim")
    pod = {"metadata": {"name": "p", "namespace": "scalearena"}, "spec": {}, "status": {"podIP": "127.1.0.5"}}
    c = {"image": "ghcr.io/llm-d/llm-d-inference-sim:v0.10.2",
         "args": ["--port=8000", "--time-to-first-token=100ms", "--inter-token-latency=30ms",
                  "--prefill-time-per-token=0.045ms", "--time-factor-under-load=2"]}
    argv = L.plan_container(pod, c, program, {}, network="netns", time_scale=4).argv
    # 100/4 = 25, 30/4 = 7.5, 0.045/4 = 0.01125; the load factor is no duration
    assert argv == ["/bin/sim", "--port=8000", "--time-to-first-token=25ms", "--inter-token-latency=7.5ms",
                    "--prefill-time-per-token=0.01125ms", "--time-factor-under-load=2"]
    assert L.plan_container(pod, c, program, {}, network="netns").argv == ["/bin/sim", *c["args"]]
