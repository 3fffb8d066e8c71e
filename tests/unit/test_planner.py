"""``planner``: Dynamo-style SLA planner — capacity at the targets, hand-out, budget, load mode, the loop."""
from __future__ import annotations

import pytest

from scalearena.controllers.planner import Planner, PlannerConfig, WarmupPoint
from scalearena.controllers.planner_capacity import hand_out, replica_capacity
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
    # 16,384 KV tokens / (4096 + 1024/2) = 3.55 -> 3 sequences; both targets hold at every batch;
    # rate = 3 / (0.2 + 1023 x 0.002) = 3 / 2.246 = 1.3357 req/s
    cap = replica_capacity(FlatProfile(), 4096, 1024, 0.5, 0.05)
    assert (cap.batch, cap.batch_max, cap.meets_sla) == (3, 3, True)
    assert cap.rate_rps == pytest.approx(3 / 2.246)


def test_capacity_stops_at_the_first_batch_that_misses_the_itl_target():
    # itl = 0.01 + 0.001 b <= 0.05 -> b <= 40; ttft = 0.1 + 0.01 b <= 0.5 -> b <= 40 as well; KV allows 100
    p = FlatProfile(kv_tokens=100 * 150, t0=0.1, a=0.01, i0=0.01, c=0.001)
    cap = replica_capacity(p, 100, 100, 0.5, 0.05)
    assert cap.batch == 40
    # at b = 40: ttft 0.5, itl 0.05 -> 40 / (0.5 + 99 x 0.05) = 40 / 5.45
    assert cap.rate_rps == pytest.approx(40 / 5.45)


def test_capacity_below_one_sequence_uses_batch_one_and_says_so():
    cap = replica_capacity(FlatProfile(t0=0.9), 100, 10, 0.5, 0.05)  # TTFT 0.9 s > 0.5 s even alone
    assert (cap.batch, cap.meets_sla) == (1, False)
    assert cap.rate_rps == pytest.approx(1 / (0.9 + 9 * 0.002))


def test_hand_out_fills_cheapest_per_capacity_then_cuts_to_the_budget():
    from scalearena.controllers.planner_capacity import Capacity

    a = variant("a", spec=1, cost=1.0, max_replicas=3)
    b = variant("b", spec=1, cost=2.5, max_replicas=10)
    caps = {"a": Capacity(3, 1.0, 0.2, 0.002, 3, True), "b": Capacity(6, 2.0, 0.1, 0.002, 6, True)}
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
    # 600 requests in 60 s = 10 req/s; 1.3357 req/s per replica -> ceil(7.487) = 8
    (d,) = p.decide(60.0, view(60.0, v_prof(), metrics=traffic(600)))
    assert d.desired_replicas == 8
    vals = d.reasons[0].values
    assert vals["observed_requests"] == 600 and vals["predicted_requests"] == 600
    assert vals["capacity"]["v"]["batch"] == 3 and vals["replicas"] == {"v": 8}
    # between intervals the target holds
    (d,) = p.decide(70.0, view(70.0, v_prof(spec=8), metrics=traffic(600)))
    assert d.desired_replicas == 8 and d.reasons[0].rule == "throughput_hold"
    # next interval: 300 requests, the forecast error of the last one (600 vs 300) is |600-300|/300 = 1.0
    (d,) = p.decide(120.0, view(120.0, v_prof(spec=8), metrics=traffic(300)))
    assert d.desired_replicas == 4  # 5 req/s / 1.3357 = 3.74 -> 4
    assert d.reasons[0].values["predictor_mape"] == pytest.approx(1.0)


def test_arima_without_history_falls_back_to_constant_with_a_reason():
    p = Planner(PlannerConfig(throughput_adjustment_interval_s=60))  # arima needs 5 points
    p.decide(0.0, view(0.0, v_prof(), metrics=traffic(0)))
    (d,) = p.decide(60.0, view(60.0, v_prof(), metrics=traffic(600)))
    fb = [r for r in d.reasons if r.rule == "predictor_fallback"]
    assert fb and fb[0].values["requests"] == "arima needs 5 points, has 1"
    assert d.desired_replicas == 8


def test_warmup_history_lets_arima_forecast_from_the_first_interval():
    warm = [WarmupPoint(requests=600, isl=4096, osl=1024)] * 5
    p = Planner(PlannerConfig(throughput_adjustment_interval_s=60, warmup=warm))
    p.decide(0.0, view(0.0, v_prof(), metrics=traffic(600)))
    (d,) = p.decide(60.0, view(60.0, v_prof(), metrics=traffic(600)))
    # six points of 600: a flat series forecasts its value -> 8 replicas, and no fallback
    assert d.desired_replicas == 8 and d.reasons[0].values["predictor"] == "arima"
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
