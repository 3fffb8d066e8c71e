"""``planner``: Dynamo-style SLA planner — capacity at the targets, hand-out, budget, load mode, the loop."""
from __future__ import annotations

import pytest

from scalearena.controllers.planner import Planner, PlannerConfig, WarmupPoint
from scalearena.controllers.planner_capacity import batch_capacity, hand_out
from scalearena.controllers.predictors import PredictorConfig
from tests.unit.viewkit import FakeMetrics, pod, variant, view


class FlatProfile:
    """A replica whose TTFT and ITL grow linearly with the batch: ttft = t0 + a x b, itl = i0 + c x b."""

    def __init__(self, kv_tokens=16384, max_num_seqs=256, t0=0.2, a=0.0, i0=0.002, c=0.0):
        self.kv_tokens, self.max_num_seqs = kv_tokens, max_num_seqs
        self.t0, self.a, self.i0, self.c = t0, a, i0, c

    def ttft_s(self, isl, osl, batch):
        return [self.t0 + self.a * b for b in batch]

    def itl_s(self, isl, osl, batch):
        return [self.i0 + self.c * b for b in batch]


def test_capacity_is_kv_bound_in_the_papers_setup():
    # a sequence holds 4096 + 1024/2 = 4608 KV tokens on average; with the whole cache (kv_fill 1) the
    # next prompt must still fit: b x 4608 + 4096 <= 16,384 -> b <= 2.67 -> 2; max_num_seqs 256 - 1 = 255;
    # both targets hold at every batch; rate = 2 / (0.2 + 1023 x 0.002) = 2 / 2.246 req/s
    cap = batch_capacity(FlatProfile(), 4096, 1024, 0.5, 0.05)
    assert (cap.batch, cap.batch_max, cap.meets_sla, cap.bound) == (2, 2, True, "kv_cache")
    assert dict(cap.limits) == {"max_num_seqs": 255, "kv_cache": 2}
    assert cap.rate_rps == pytest.approx(2 / 2.246)


def test_capacity_keeps_the_pod_below_the_routers_kv_admission_threshold():
    from scalearena.controllers.base import Admission

    # a cache of 32,768 tokens: the engine alone allows (32,768 - 4096) / 4608 = 6.2 -> 6 sequences;
    # the router counts a pod saturated at KV >= 0.8: b x 4608 < 0.8 x 32,768 = 26,214.4 -> b < 5.69 -> 5
    adm = Admission("saturation", 0.8, 5)
    cap = batch_capacity(FlatProfile(kv_tokens=32768), 4096, 1024, 0.5, 0.05, 1.0, adm)
    assert dict(cap.limits) == {"max_num_seqs": 255, "kv_cache": 6, "admission_kv": 5}
    assert (cap.batch, cap.bound) == (5, "admission_kv")
    assert cap.rate_rps == pytest.approx(5 / 2.246)
    # at exactly the threshold the pod is saturated (usage >= 0.8): 5 x 4608 = 23,040 = 0.8 x 28,800
    cap = batch_capacity(FlatProfile(kv_tokens=28800), 4096, 1024, 0.5, 0.05, 1.0, adm)
    assert cap.limits["admission_kv"] == 4
    # the paper's 16,384-token cache: 0.8 x 16,384 / 4608 = 2.84 -> 2, the engine's bound is 2 as well
    # (tie: the admission is named)
    cap = batch_capacity(FlatProfile(), 4096, 1024, 0.5, 0.05, 1.0, adm)
    assert (cap.batch, cap.bound, cap.limits["admission_kv"]) == (2, "admission_kv", 2)


def test_capacity_kv_fill_and_max_num_seqs_bound_the_batch():
    # kv_fill 0.5 of 100,000 tokens: (50,000 - 1000) / (1000 + 100) = 44.5 -> 44
    cap = batch_capacity(FlatProfile(kv_tokens=100_000), 1000, 200, 0.5, 0.05, 0.5)
    assert (cap.batch, cap.bound) == (44, "kv_cache")
    # max_num_seqs 8: the planned replica keeps one place for the next arrival -> 7
    cap = batch_capacity(FlatProfile(kv_tokens=100_000, max_num_seqs=8), 1000, 200, 0.5, 0.05, 0.5)
    assert (cap.batch, cap.bound) == (7, "max_num_seqs")
    # a prompt longer than the fill allows still plans one sequence (never 0)
    cap = batch_capacity(FlatProfile(kv_tokens=1000), 4096, 1024, 0.5, 0.05, 0.9)
    assert cap.batch == 1 and cap.limits["kv_cache"] == 1


def test_capacity_stops_at_the_first_batch_that_misses_the_itl_target():
    # itl = 0.01 + 0.001 b <= 0.05 -> b <= 40; ttft = 0.1 + 0.01 b <= 0.5 -> b <= 40 as well;
    # KV allows (15,100 - 100) / 150 = 100
    p = FlatProfile(kv_tokens=100 * 150 + 100, t0=0.1, a=0.01, i0=0.01, c=0.001)
    cap = batch_capacity(p, 100, 100, 0.5, 0.05)
    assert (cap.batch, cap.bound, cap.limits["kv_cache"]) == (40, "latency", 100)
    # at b = 40: ttft 0.5, itl 0.05 -> 40 / (0.5 + 99 x 0.05) = 40 / 5.45
    assert cap.rate_rps == pytest.approx(40 / 5.45)


def test_capacity_below_one_sequence_uses_batch_one_and_says_so():
    cap = batch_capacity(FlatProfile(t0=0.9), 100, 10, 0.5, 0.05)  # TTFT 0.9 s > 0.5 s even alone
    assert (cap.batch, cap.meets_sla) == (1, False)
    assert cap.rate_rps == pytest.approx(1 / (0.9 + 9 * 0.002))


def test_hand_out_fills_cheapest_per_capacity_then_cuts_to_the_budget():
    from scalearena.controllers.planner_capacity import BatchCapacity

    a = variant("a", spec=1, cost=1.0, max_replicas=3)
    b = variant("b", spec=1, cost=2.5, max_replicas=10)
    caps = {"a": BatchCapacity(3, 1.0, 0.2, 0.002, 3, True), "b": BatchCapacity(6, 2.0, 0.1, 0.002, 6, True)}
    # cost per req/s: a 1.0, b 1.25 -> a first: 6.5 req/s -> a 3 (3 req/s), rest 3.5 -> b ceil(1.75) = 2
    want, notes = hand_out(6.5, [a, b], caps, 1, None)
    assert want == {"a": 3, "b": 2} and notes == []
    # a budget of 4 GPUs cuts from the most expensive per req/s (b) first: a 3, b 1
    want, notes = hand_out(6.5, [a, b], caps, 1, 4)
    assert want == {"a": 3, "b": 1} and notes == ["GPU budget 4"]
    # no demand: min_endpoint 1 on the cheapest
    assert hand_out(0.0, [a, b], caps, 1, None)[0] == {"a": 1, "b": 0}


class GatewayMetrics(FakeMetrics):
    """PromQL answers for the EPP counters: a fixed increase per series name."""

    def __init__(self, increases):
        super().__init__()
        self.increases = increases

    def query(self, expr, at=None):
        for name, v in self.increases.items():
            if f"({name}{{" in expr:
                return [{"metric": {}, "value": [0, str(v)]}]
        return []


def v_prof(spec=1, **kw):
    from dataclasses import replace
    return replace(variant(spec=spec, pods=[pod(0)], max_replicas=30, **kw), profile=FlatProfile())


def traffic(req):
    # req requests, mean ISL 4096, OSL 1024 in the interval
    return GatewayMetrics({"inference_objective_request_total": req,
                           "inference_objective_input_tokens_sum": 4096 * req,
                           "inference_objective_input_tokens_count": req,
                           "inference_objective_output_tokens_sum": 1024 * req,
                           "inference_objective_output_tokens_count": req})


def test_throughput_loop_warms_up_then_sizes_from_the_constant_forecast():
    p = Planner(PlannerConfig(throughput_adjustment_interval_s=60, predictor=PredictorConfig(kind="constant")))
    (d,) = p.decide(0.0, view(0.0, v_prof(), metrics=traffic(0)))
    assert (d.desired_replicas, d.reasons[0].rule) == (1, "warming_up")
    # the next prompt must fit: b x 4608 + 4096 <= 16,384 -> b <= 2.67 -> batch 2, 2 / 2.246 = 0.8905
    # req/s per replica; 600 requests in 60 s = 10 req/s -> 10 / 0.8905 = 11.23 -> 12
    (d,) = p.decide(60.0, view(60.0, v_prof(), metrics=traffic(600)))
    assert d.desired_replicas == 12
    vals = d.reasons[0].values
    assert vals["observed_requests"] == 600 and vals["predicted_requests"] == 600
    assert vals["capacity"]["v"]["batch"] == 2 and vals["replicas"] == {"v": 12}
    assert vals["capacity"]["v"]["bound"] == "kv_cache"
    # between intervals the target holds
    (d,) = p.decide(70.0, view(70.0, v_prof(spec=12), metrics=traffic(600)))
    assert d.desired_replicas == 12 and d.reasons[0].rule == "throughput_hold"
    # next interval: 300 requests, the forecast error of the last one (600 vs 300) is |600-300|/300 = 1.0
    (d,) = p.decide(120.0, view(120.0, v_prof(spec=12), metrics=traffic(300)))
    assert d.desired_replicas == 6  # 5 req/s / 0.8905 = 5.61 -> 6
    assert d.reasons[0].values["predictor_mape"] == pytest.approx(1.0)


def test_arima_without_history_falls_back_to_constant_with_a_reason():
    p = Planner(PlannerConfig(throughput_adjustment_interval_s=60))  # arima needs 5 points
    p.decide(0.0, view(0.0, v_prof(), metrics=traffic(0)))
    (d,) = p.decide(60.0, view(60.0, v_prof(), metrics=traffic(600)))
    fb = [r for r in d.reasons if r.rule == "predictor_fallback"]
    assert fb and fb[0].values["requests"] == "arima needs 5 points, has 1"
    assert d.desired_replicas == 12  # as the constant forecast: 10 / 0.8905 = 11.23 -> 12


def test_warmup_history_lets_arima_forecast_from_the_first_interval():
    warm = [WarmupPoint(requests=600, isl=4096, osl=1024)] * 5
    p = Planner(PlannerConfig(throughput_adjustment_interval_s=60, warmup=warm))
    p.decide(0.0, view(0.0, v_prof(), metrics=traffic(600)))
    (d,) = p.decide(60.0, view(60.0, v_prof(), metrics=traffic(600)))
    # six points of 600: a flat series forecasts its value -> 12 replicas, and no fallback
    assert d.desired_replicas == 12 and d.reasons[0].values["predictor"] == "arima"
    assert not [r for r in d.reasons if r.rule == "predictor_fallback"]


def test_gpu_budget_caps_the_model():
    p = Planner(PlannerConfig(throughput_adjustment_interval_s=60, max_gpu_budget=5,
                              predictor=PredictorConfig(kind="constant")))
    p.decide(0.0, view(0.0, v_prof(), metrics=traffic(0)))
    (d,) = p.decide(60.0, view(60.0, v_prof(), metrics=traffic(600)))
    assert d.desired_replicas == 5 and "GPU budget 5" in d.reasons[0].message


def test_load_mode_adds_one_when_every_pod_misses_and_removes_one_when_all_are_idle():
    from dataclasses import replace

    cfg = PlannerConfig(enable_throughput_scaling=False, enable_load_scaling=True, default_isl=4096,
                        default_osl=1024)
    p = Planner(cfg)
    # each pod: 3 running, 2 waiting; TTFT est = 0.2 + 2 x (0.2 + 1023 x 0.002) / 3 = 0.2 + 1.497 = 1.697 s > 0.5
    busy = replace(variant(spec=2, pods=[pod(0, running=3, waiting=2), pod(1, running=3, waiting=2)]),
                   profile=FlatProfile())
    (d,) = p.decide(0.0, view(0.0, busy))
    assert d.desired_replicas == 3
    # one pod over, one idle: not every pod agrees -> hold
    mixed = replace(busy, pods=(pod(0, running=3, waiting=2), pod(1, running=1)))
    assert p.decide(5.0, view(5.0, mixed))[0].desired_replicas == 2
    # both idle: TTFT 0.2 < 0.4 (80 % of 0.5) and ITL 0.002 < 0.04 -> 1
    idle = replace(busy, pods=(pod(0, running=1), pod(1, running=1)))
    assert p.decide(10.0, view(10.0, idle))[0].desired_replicas == 1
    # a change under way (a pod pending): observe only
    assert p.decide(15.0, view(15.0, replace(busy, pending=1)))[0].reasons[0].rule == "load_in_progress"


def test_holds_when_metrics_are_unreadable():
    p = Planner(PlannerConfig())
    v = variant(spec=4, metrics_available=False)
    (d,) = p.decide(0.0, view(0.0, v, metrics=FakeMetrics(unavailable=True)))
    assert (d.desired_replicas, d.reasons[0].rule) == (4, "metrics_unavailable")


def test_config_refuses_no_mode_and_unknown_keys():
    with pytest.raises(ValueError):
        Planner(PlannerConfig(enable_throughput_scaling=False))
    with pytest.raises(ValueError):
        PlannerConfig(adjustment_interval=60)


def test_planner_sizes_below_the_admission_threshold_the_view_carries():
    from dataclasses import replace

    from scalearena.controllers.base import Admission

    # a 32,768-token cache: the engine alone allows (32,768 - 4096) / 4608 = 6.22 -> 6 sequences; the
    # router saturates a pod at KV >= 0.5: b x 4608 < 16,384 -> b < 3.56 -> 3; 3 / 2.246 = 1.3357 req/s;
    # 10 req/s -> 7.49 -> 8 replicas. Queue room: min(queue_threshold 5, max_waiting_queue 1000) = 5
    v = replace(v_prof(), profile=FlatProfile(kv_tokens=32768), admission=Admission("saturation", 0.5, 5),
                engine={"max_waiting_queue": 1000})
    p = Planner(PlannerConfig(throughput_adjustment_interval_s=60, predictor=PredictorConfig(kind="constant")))
    p.decide(0.0, view(0.0, v, metrics=traffic(0)))
    (d,) = p.decide(60.0, view(60.0, v, metrics=traffic(600)))
    cap = d.reasons[0].values["capacity"]["v"]
    assert (cap["batch"], cap["bound"], cap["queue_room"]) == (3, "admission_kv", 5)
    assert cap["limits"] == {"max_num_seqs": 255, "kv_cache": 6, "admission_kv": 3}
    assert d.desired_replicas == 8 and "batch 3 (admission_kv)" in d.reasons[0].message


def test_the_view_carries_the_scenarios_admission():
    from pathlib import Path

    from scalearena.controllers.base import Admission
    from scalearena.harness.config.scenario import load_scenario
    from scalearena.harness.control.view import scenario_variants

    path = Path(__file__).resolve().parents[3] / "workloads" / "scenarios" / "exp1-staircase.yaml"
    (info,) = scenario_variants(load_scenario(path))
    assert info.admission == Admission("saturation", 0.8, 5)
    (info,) = scenario_variants(load_scenario(path, ["router.admission.kind=flow_control",
                                                     "router.admission.kv_threshold=0.7"]))
    assert info.admission == Admission("flow_control", 0.7, 5)
    (info,) = scenario_variants(load_scenario(path, ["router.admission.kind=none"]))
    assert info.admission is None


def test_load_only_mode_estimates_at_the_observed_lengths_not_the_defaults():
    from dataclasses import replace

    # each pod: 3 running, 2 waiting. At the observed ISL 1000 / OSL 100 a request takes
    # 0.2 + 99 x 0.002 = 0.398 s -> TTFT est 0.2 + 2 x 0.398 / 3 = 0.465 s < 0.5: hold at 2.
    # At the defaults 3000 / 150 it would take 0.2 + 149 x 0.002 = 0.498 s -> 0.2 + 2 x 0.498 / 3 = 0.532 s
    # > 0.5 on both pods: +1
    busy = replace(variant(spec=2, pods=[pod(0, running=3, waiting=2), pod(1, running=3, waiting=2)]),
                   profile=FlatProfile())
    seen = GatewayMetrics({"inference_objective_request_total": 60,
                           "inference_objective_input_tokens_sum": 60_000, "inference_objective_input_tokens_count": 60,
                           "inference_objective_output_tokens_sum": 6000, "inference_objective_output_tokens_count": 60})
    p = Planner(PlannerConfig(enable_throughput_scaling=False, enable_load_scaling=True))
    (d,) = p.decide(0.0, view(0.0, busy, metrics=seen))
    vals = d.reasons[0].values
    assert (vals["isl"], vals["osl"], vals["lengths_from"]) == (1000.0, 100.0, "observed")
    assert d.desired_replicas == 2 and max(vals["est_ttft_s"]) == pytest.approx(0.2 + 2 * 0.398 / 3)
    # nothing new in the next minute: the last observed lengths are kept
    (d,) = p.decide(5.0, view(5.0, busy, metrics=GatewayMetrics({})))
    assert d.reasons[0].values["lengths_from"] == "observed" and d.desired_replicas == 2
    # a planner that has never seen a length uses the defaults, and says so
    (d,) = Planner(PlannerConfig(enable_throughput_scaling=False, enable_load_scaling=True)).decide(
        0.0, view(0.0, busy, metrics=GatewayMetrics({})))
    assert d.reasons[0].values["lengths_from"] == "default" and d.desired_replicas == 3


def pd_view(t0_prefill=0.25, max_p=10, max_d=30):
    from dataclasses import replace

    pre = replace(variant("pre", spec=1, pods=[pod(0)], max_replicas=max_p), role="prefill",
                  profile=FlatProfile(t0=t0_prefill))
    dec = replace(variant("dec", spec=1, pods=[pod(1)], max_replicas=max_d), role="decode", profile=FlatProfile())
    return pre, dec


def test_pd_pools_are_sized_each_on_its_own():
    from scalearena.controllers.planner_pd import hand_out_pd, pd_capacities

    pre, dec = pd_view()
    caps = pd_capacities([pre, dec], 4096, 1024, 0.5, 0.05, 1.0)
    # prefill: one 4096-token prompt takes 0.25 s -> 4 req/s per replica
    assert (caps["pre"].rate_rps, caps["pre"].bound, caps["pre"].meets_sla) == (4.0, "prefill", True)
    # decode: the next request's prompt KV must fit: (16,384 - 4096) / 4608 = 2.67 -> 2 sequences, each held
    # 1024 x 0.002 = 2.048 s -> 2 / 2.048 = 0.9766 req/s per replica
    assert (caps["dec"].batch, caps["dec"].bound) == (2, "kv_cache")
    assert caps["dec"].rate_rps == pytest.approx(2 / 2.048)
    # 10 req/s: prefill ceil(10 / 4) = 3, decode ceil(10 / 0.9766) = ceil(10.24) = 11
    want, notes = hand_out_pd(10.0, [pre, dec], caps, 1, None)
    assert want == {"pre": 3, "dec": 11} and notes == []
    # a budget of 8 GPUs (14 asked): prefill floor(3 x 8 / 14) = floor(1.71) = 1, decode the other 7
    want, notes = hand_out_pd(10.0, [pre, dec], caps, 1, 8)
    assert want == {"pre": 1, "dec": 7} and notes == ["GPU budget 8: prefill 1 / decode 7 GPUs (asked 3 / 11)"]


def test_pd_prefill_that_misses_ttft_alone_gets_the_latency_floor():
    from scalearena.controllers.planner_pd import hand_out_pd, pd_capacities

    pre, dec = pd_view(t0_prefill=1.2)
    caps = pd_capacities([pre, dec], 4096, 1024, 0.5, 0.05, 1.0)
    # one prompt takes 1.2 s > 0.5 s: rate 1 / 1.2 = 0.833 req/s, floor ceil(1.2 / 0.5) = 3 replicas;
    # 1 req/s needs ceil(1 / 0.833) = ceil(1.2) = 2 -> the floor 3 wins; decode ceil(1 / 0.9766) = 2
    assert caps["pre"].meets_sla is False and caps["pre"].limits == {"ttft_floor": 3}
    want, _ = hand_out_pd(1.0, [pre, dec], caps, 1, None)
    assert want == {"pre": 3, "dec": 2}


def test_planner_loop_sizes_a_pd_model_and_says_so():
    pre, dec = pd_view()
    p = Planner(PlannerConfig(throughput_adjustment_interval_s=60, predictor=PredictorConfig(kind="constant")))
    p.decide(0.0, view(0.0, pre, dec, metrics=traffic(0)))
    # 600 requests in 60 s = 10 req/s -> prefill 3, decode 11 (test above)
    d_pre, d_dec = p.decide(60.0, view(60.0, pre, dec, metrics=traffic(600)))
    assert (d_pre.desired_replicas, d_dec.desired_replicas) == (3, 11)
    vals = d_pre.reasons[0].values
    assert vals["pools"] == "prefill/decode" and vals["capacity"]["pre"]["bound"] == "prefill"
    assert "pre 4.00 req/s (prefill 0.250 s)" in d_pre.reasons[0].message
