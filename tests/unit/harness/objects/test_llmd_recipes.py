"""llm-d recipes (controllers/llmd.py, manifests/autoscalers/llm-d/, harness/objects/recipes.py): the control laws
worked by hand, the recording rules on the in-memory engine, the placeholders filled from a scenario, the peak
prefill throughput, and the series check."""
from __future__ import annotations

import math
from typing import Any

import pytest
from pydantic import ValidationError

from scalearena.contracts.errors import UserError
from scalearena.controllers.keda import KEDA
from scalearena.harness.config.scenario import scenario_from_data
from scalearena.harness.metrics.memory import MemoryMetrics, Sample
from scalearena.harness.objects.recipes import check_series, exposed_series
from tests.unit.viewkit import FakeMetrics, variant, view

ENGINE = {"max_num_seqs": 8, "kv_cache_blocks": 1024, "block_size": 16,
          "latency": {"kind": "constant", "ttft_ms": 100, "itl_ms": 20}}


def scenario(*variants: dict[str, Any], slo: dict[str, float] | None = None, extra: dict[str, Any] | None = None):
    vs = [{"model": "m", "gpu": "H100-SXM", "min_replicas": 1, "max_replicas": 8, "engine": ENGINE, **v}
          for v in variants]
    data = {"name": "r", "duration_s": 60, "cluster": {"variants": vs, **(extra or {})},
            "workload": {"arrivals": {"kind": "constant", "rate_rps": 1}, "input_tokens": {"kind": "fixed", "value": 200},
                         "output_tokens": {"kind": "fixed", "value": 10}},
            "slo": slo or {"ttft_ms": 3000, "itl_ms": 100}}
    return scenario_from_data(data, "<test>")


def keda_of(recipe: str, sc: Any, variant_name: str = "va") -> Any:
    cfg = sc.autoscaler(recipe)
    (t,) = [t for t in cfg.targets if t.variant == variant_name]
    return t.autoscaler


# -- llmd-slo: the formula (slo.yaml), hand-worked ----------------------------------------------------------

@pytest.mark.parametrize(("s", "n", "r", "expected"), [
    # s < theta_dn 0.40: n - floor(n (1 - s / 0.40)) = 4 - floor(4 x 0.25) = 3, with or without the credit
    (0.3, 4, 4, 3), (0.3, 4, 2, 3),
    # 0.40 <= s <= 0.55: the hysteresis band holds n
    (0.5, 4, 4, 4), (0.5, 4, 2, 4),
    # s > theta_up 0.55, r = n (c = 1): 4 + ceil(4 (0.7 / 0.55 - 1)) = 4 + ceil(1.0909) = 6
    (0.7, 4, 4, 6),
    # r / n = 0.5: 4 + ceil(4 (0.7 x 0.5 / 0.55 - 1)) = 4 + ceil(-1.4545) = 4 - 1 = 3: the two pods warming
    # already cover the ask (ceil(r s / theta_up) = ceil(2.545) = 3)
    (0.7, 4, 2, 3),
    # r = 0 is not 0 < r < n: c = 1; 1 + ceil(1 x (0.7 / 0.55 - 1)) = 1 + ceil(0.2727) = 2
    (0.7, 1, 0, 2),
    # the clamp's ceiling 2.0 on 4 ready: 4 + ceil(4 (2 / 0.55 - 1)) = 4 + ceil(10.545) = 15
    (2.0, 4, 4, 15),
])
def test_the_slo_aware_formula(s, n, r, expected):
    formula = keda_of("llmd-slo", scenario({"name": "va"})).formula()
    assert formula.evaluate({"saturation": s, "replicas": float(n), "readyReplicas": float(r)}) == expected


def test_the_slo_aware_thresholds_are_tunable_placeholders():
    sc = scenario({"name": "va"})
    cfg = sc.for_scenario(type(sc.autoscaler("llmd-slo"))(env={"THETA_UP": "0.7", "THETA_DN": "0.5"}))
    formula = cfg.targets[0].autoscaler.formula()
    # theta_up 0.7: s = 0.7 is no longer above it -> band (0.5 <= 0.7) -> n
    assert formula.evaluate({"saturation": 0.7, "replicas": 4.0, "readyReplicas": 4.0}) == 4
    # theta_dn 0.5: s = 0.45 -> 4 - floor(4 (1 - 0.9)) = 4 - 0 = 4; s = 0.25 -> 4 - floor(2) = 2
    assert formula.evaluate({"saturation": 0.25, "replicas": 4.0, "readyReplicas": 4.0}) == 2
    assert {t.path for t in cfg.tunables()} >= {"env.THETA_UP", "env.THETA_DN"}


def test_the_slo_aware_behavior_is_the_guides():
    b = keda_of("llmd-slo", scenario({"name": "va"})).behavior
    assert b.scale_up.stabilization_window_seconds == 30
    assert {(p.type, p.value, p.period_seconds) for p in b.scale_up.policies} == {("Percent", 100, 60), ("Pods", 4, 60)}
    assert b.scale_down.stabilization_window_seconds == 180
    assert [(p.type, p.value, p.period_seconds) for p in b.scale_down.policies] == [("Pods", 1, 120)]


# -- llmd-slo: the recording rules (slo-rules.yaml) on the in-memory engine ---------------------------------

def test_the_slo_aware_rules_give_the_smoothed_clamped_saturation():
    from scalearena.harness.objects import rule_groups

    sc = scenario({"name": "va"}, slo={"ttft_ms": 3000, "itl_ms": 100})
    m = MemoryMetrics()
    m.add_rules(rule_groups(sc.autoscaler("llmd-slo")))

    def scrape(t: float, n: int, ttft: float, e2e: float, tokens: int) -> None:
        for _ in range(n):
            m.epp_latency("m").observe(ttft, e2e, tokens)
        m.record_pool("m", t, 0, 0.0, 0)  # the EPP's series, its request histograms among them
        m.evaluate_at(t)

    # 10 requests every 15 s, TTFT 0.9 s (the router's bucket (0.8, 1.0]) and NTPOT 4 s / 100 tokens = 0.04 s
    # (bucket (0.02, 0.05]): P90 TTFT = 0.8 + 0.2 x 0.9 = 0.98 s -> / 3 s = 0.3267; P90 NTPOT = 0.02 + 0.03 x 0.9
    # = 0.047 s -> / 0.1 s = 0.47; s_raw = max = 0.47, under the clamp; steady, so the 45 s average is 0.47
    for k in range(9):
        scrape(15.0 * k, 10, 0.9, 4.0, 100)
    (row,) = m.query('llmd_slo:saturation{model_name="m"}')
    assert float(row["value"][1]) == pytest.approx(0.47, rel=1e-9)
    # a spike: TTFT 9 s (bucket (8, 10]) for 135 s: once the 1-minute rates hold only the spike, P90 TTFT = 9.8 s,
    # / 3 = 3.27 > the clamp 2.0, and when the 45 s window's three samples are all clamped, s = 2.0
    for k in range(9, 18):
        scrape(15.0 * k, 40, 9.0, 12.0, 100)
    (row,) = m.query('llmd_slo:saturation{model_name="m"}')
    assert float(row["value"][1]) == pytest.approx(2.0)
    # no traffic for 2 minutes: no bucket rate, the quantile is NaN -> s_raw 0 -> s 0
    for k in range(18, 27):
        scrape(15.0 * k, 0, 0.0, 0.0, 0)
    (row,) = m.query('llmd_slo:saturation{model_name="m"}')
    assert float(row["value"][1]) == 0.0


# -- llmd-queue-guard: the formula (queue-guard.yaml) ----------------------------------------------------------

@pytest.mark.parametrize(("queue", "running", "replicas", "pending", "expected"), [
    # demand = max(3 / 1, 16 / 16) = 3 <= replicas 4 -> 3
    (3, 16, 4, 0, 3),
    # demand = max(10, 32 / 16) = 10 > 4 -> max(10 - 3, 4) = 7: the three pods coming count
    (10, 32, 4, 3, 7),
    # pending failing (nil): pending ?? 0 -> max(10 - 0, 4) = 10
    (10, 32, 4, None, 10),
    # the discount never goes below the current replicas: max(6 - 5, 4) = 4
    (6, 0, 4, 5, 4),
])
def test_the_queue_guard_formula(queue, running, replicas, pending, expected):
    formula = keda_of("llmd-queue-guard", scenario({"name": "va"})).formula()
    assert formula.evaluate({"queue": queue, "running": running, "replicas": replicas, "pending": pending}) == expected


def test_the_queue_guard_falls_back_to_one_replica():
    fb = keda_of("llmd-queue-guard", scenario({"name": "va"})).fallback
    assert (fb.failure_threshold, fb.replicas, fb.behavior) == (3, 1, "static")


# -- llmd-queue / llmd-saturation: two triggers raced by the HPA ------------------------------------------------

class Answers(FakeMetrics):
    def __init__(self, values: dict[str, float]) -> None:
        super().__init__()
        self.values = values

    def query(self, expr: str, at: float | None = None) -> list[dict[str, Any]]:
        name = next(k for k in self.values if k in expr)
        return [{"metric": {}, "value": [0.0, repr(self.values[name])]}]


@pytest.mark.parametrize(("recipe", "values", "expected"), [
    # queue 6 / 1 -> 6 replicas; running 40 / 16 -> ceil(2.5) = 3; the HPA takes the larger: 6
    ("llmd-queue", {"flow_control_queue_size": 6.0, "request_running": 40.0}, 6),
    # saturation 1.4 / 0.7 -> 2; running 100 / 16 -> ceil(6.25) = 7 -> 7 (up 100 %/15 s from 4 allows 8)
    ("llmd-saturation", {"pool_saturation": 1.4, "request_running": 100.0}, 7),
])
def test_the_epp_recipes_race_two_triggers_behind_a_300_s_scale_up_window(recipe, values, expected):
    k = KEDA(keda_of(recipe, scenario({"name": "va"})))
    got = {}
    for t in range(0, 315, 15):
        (d,) = k.decide(float(t), view(float(t), variant("va", spec=4, ready=4, max_replicas=8), metrics=Answers(values)))
        got[t] = d.desired_replicas
    # the window is seeded with the current 4 at t = 0 and takes the lowest recommendation in (t - 300, t]:
    # 4 until t = 285; at t = 300 only the raced proposals are left
    assert {got[t] for t in range(0, 300, 15)} == {4}
    assert got[300] == expected


# -- llmd-token: prefill backlog seconds from the EPP's in-flight tokens ------------------------------------------

def test_the_token_recipe_reads_backlog_seconds_and_kv():
    sc = scenario({"name": "va"})
    cfg = sc.autoscaler("llmd-token")
    keda = keda_of("llmd-token", sc)
    peak = float(next(t.query for t in keda.triggers if t.name == "prefill-backlog-seconds")
                 .split("/")[1].split(")")[0])
    # constant model: 8 slots x 200 tokens / TTFT 0.1 s = 16,000 tokens/s
    assert peak == 16000
    assert "16000 tokens/s: computed from the engine model of m on H100-SXM" in cfg.derived["PEAK_PREFILL_TPS[va]"]
    m = MemoryMetrics()
    m.models["va"] = "m"
    # two pods holding 24,000 + 12,000 uncached prompt tokens -> 36,000 / 16,000 = 2.25 s of backlog
    for i, (tokens, kv) in enumerate([(24000, 0.5), (12000, 0.3)]):
        m.record("va", f"va-{i}", Sample(0.0, kv, 0, 1, None, 0.0, (), (), (), inflight_tokens=tokens))
    m.evaluate_at(0.0)
    values = {t.name: float(m.query(t.query)[0]["value"][1]) for t in keda.triggers}
    assert values == {"prefill-backlog-seconds": pytest.approx(2.25), "decode-kv-utilization": pytest.approx(0.8)}
    # ceil(2.25 / 1.5) = 2 and ceil(0.8 / 0.8) = 1 -> 2


def test_peak_prefill_of_the_constant_model():
    from scalearena.harness.config.engine_spec import ConstantLatency
    from scalearena.harness.sim.engine.latency import ConstantModel
    from scalearena.harness.sim.engine.prefill import peak_prefill

    # ttft 50 ms at full load with time_factor_under_load 2: 0.05 x 2 = 0.1 s; 4 slots x 500 tokens / 0.1 s = 20,000
    model = ConstantModel(ConstantLatency(kind="constant", ttft_ms=50, time_factor_under_load=2.0), 4)
    assert peak_prefill(model, 500, 8192, 4).tokens_per_s == pytest.approx(20000)


def test_peak_prefill_of_the_roofline_chunks_long_prompts():
    from scalearena.harness.config.engine_spec import EngineSpec
    from scalearena.harness.sim.engine.catalog import gpu_spec
    from scalearena.harness.sim.engine.latency import build_latency
    from scalearena.harness.sim.engine.prefill import peak_prefill

    lat, _ = build_latency(EngineSpec.model_validate({"latency": {"kind": "roofline", "model_shape": "qwen3-0.6b"}}),
                           gpu_spec("H100-SXM", {}))
    short = peak_prefill(lat, 1000, 8192, 256)
    long = peak_prefill(lat, 16384, 8192, 256)
    # eight 1,000-token prompts fill one 8,192-token step; a 16,384-token prompt needs two 8,192 steps whose
    # attention grows with the context: the long prompt prefills more slowly per token
    assert "8 x 1000-token prompts" in short.how and "2 chunks of 8192" in long.how
    assert short.tokens_per_s > long.tokens_per_s > 0
    assert math.isfinite(short.tokens_per_s)


# -- placeholders from the scenario ------------------------------------------------------------------------

def test_one_object_per_variant_and_one_rule_group_per_model():
    sc = scenario({"name": "va", "min_replicas": 2, "max_replicas": 6}, {"name": "vb"})
    cfg = sc.autoscaler("llmd-slo")
    assert [(t.variant, t.min_replicas, t.max_replicas) for t in cfg.targets] == [("va", 2, 6), ("vb", 1, 8)]
    assert [g["name"] for g in cfg.rule_groups] == ["llmd-slo-aware-m"]  # both variants serve model m
    q = next(t.query for t in cfg.targets[0].autoscaler.triggers if t.name == "readyReplicas")
    assert q == 'max(kube_deployment_status_replicas_ready{namespace="scalearena",deployment="va"})'
    rule = cfg.rule_groups[0]["rules"][0]["expr"]
    assert "/ 3.0" in rule  # TTFT_SLO_S from slo.ttft_ms 3000


def test_a_users_env_overrides_a_placeholder_the_scenario_would_fill():
    sc = scenario({"name": "va"})
    cfg = sc.for_scenario(type(sc.autoscaler("llmd-queue"))(env={"MAX_REPLICAS": "3"}))
    assert cfg.targets[0].max_replicas == 3 and cfg.env["QUEUE_PER_REPLICA"] == "1"


def test_an_env_key_the_recipe_does_not_use_is_refused():
    # THETA_UPP: no placeholder of slo-rules.yaml / slo.yaml; the recipe's own defaults (THETA_UP, ...) and the
    # scenario's (NAMESPACE, ...) are placeholders, so a user's override of those passes
    sc = scenario({"name": "va"})
    with pytest.raises(UserError, match=r"env\.THETA_UPP: no \$\{THETA_UPP\} in .*; did you mean 'THETA_UP'\?"):
        sc.for_scenario(type(sc.autoscaler("llmd-slo"))(env={"THETA_UPP": "0.6"}))
    assert sc.for_scenario(type(sc.autoscaler("llmd-slo"))(env={"THETA_UP": "0.6", "NAMESPACE": "ns"})).targets


@pytest.mark.parametrize("field,value", [("env", 3), ("env", float("inf")), ("tune", "x"), ("env", ["A"])])
def test_an_env_or_tune_that_is_no_mapping_is_named_not_a_crash(field, value):
    # found by the adversarial suite: `--set autoscalers.N.env=.inf` on a recipe raised a TypeError (exit 3)
    cls = type(scenario({"name": "va"}).autoscaler("llmd-queue"))
    with pytest.raises(ValidationError) as e:
        cls.model_validate({"kind": "llmd-queue", field: value})
    assert [err["loc"][0] for err in e.value.errors()] == [field]


def test_the_pd_recipe_scales_both_roles_and_needs_them():
    sc = scenario({"name": "m-prefill", "role": "prefill"}, {"name": "m-decode", "role": "decode"},
                  extra={"kv_transfer": {"kv_bytes_per_token": 131072}})
    cfg = sc.autoscaler("llmd-token-pd")
    assert sorted(t.variant for t in cfg.targets) == ["m-decode", "m-prefill"]
    pre = next(t for t in cfg.targets if t.variant == "m-prefill").autoscaler
    assert [t.name for t in pre.triggers] == ["prefill-backlog-seconds"]
    assert 'endpoint_name=~".*prefill.*"' in pre.triggers[0].query
    with pytest.raises(UserError, match="needs a model with variants of role prefill and decode"):
        scenario({"name": "va"}).autoscaler("llmd-token-pd")


# -- the series each recipe reads, per backend ---------------------------------------------------------------

def test_a_recipe_whose_series_the_backend_lacks_is_refused_naming_them():
    cfg = scenario({"name": "va"}).autoscaler("llmd-queue-guard")
    check_series(cfg, "sim")  # the simulator writes every one
    check_series(cfg, "local")  # so do the local processes (serve-router, and their kube-state-metrics endpoint)
    check_series(cfg, "kind")  # serve-router and manifests/base/kube-state-metrics.yaml
    with pytest.raises(UserError) as e:
        check_series(cfg, "kind", "epp")  # llm-d-inference-scheduler v0.3.2 has no llm_d_epp_* series
    assert "--cluster kind (gateway epp) exposes no llm_d_epp_flow_control_queue_size, llm_d_epp_request_running" \
        in str(e.value)
    assert "llm-d-inference-scheduler v0.3.2" in str(e.value)
    assert not exposed_series("kind", "epp") & {"llm_d_epp_request_running", "llm_d_epp_inflight_tokens",
                                                "scalearena_router_queue_size"}
    assert "llm_d_epp_request_predicted_ttft_seconds" not in exposed_series("sim")  # no latency predictor


def test_every_recipe_query_reads_only_the_series_it_declares():
    """The declaration check_series relies on: each query's metric names (harness/objects/reads, the AST of
    every trigger and recording rule, histogram families without _bucket) are the recipe's needs or optional
    series, once its own recorded rules are taken out."""
    from scalearena.controllers.llmd import RECIPES
    from scalearena.harness.objects.reads import series_read

    sc = scenario({"name": "m-prefill", "role": "prefill"}, {"name": "m-decode", "role": "decode"},
                  extra={"kv_transfer": {"kv_bytes_per_token": 131072}})
    for name, r in RECIPES.items():
        cfg = sc.autoscaler(name)
        assert series_read(cfg) == set(r.needs) | set(r.optional), name
        assert set(r.needs) <= exposed_series("sim"), name


def test_on_kind_a_recipe_is_its_objects_one_per_variant_with_its_rules():
    import yaml

    from scalearena.harness.kube.backend import KubeBackend

    sc = scenario({"name": "va"}, {"name": "vb"})
    objs = KubeBackend("kind").plan(sc, sc.autoscaler("llmd-slo"))
    sos = {o["metadata"]["name"]: o for o in objs if o["kind"] == "ScaledObject"}
    assert sorted(sos) == ["llmd-slo-va", "llmd-slo-vb"]
    assert sos["llmd-slo-vb"]["spec"]["scaleTargetRef"]["name"] == "vb"
    assert sos["llmd-slo-va"]["spec"]["advanced"]["scalingModifiers"]["formula"].startswith("let s = saturation;")
    (prom,) = [o for o in objs if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "prometheus-config"]
    groups = yaml.safe_load(prom["data"]["scalearena-rules.yml"])["groups"]
    assert [g["name"] for g in groups] == ["llmd-slo-aware-m"]  # one per model, not per variant


def test_validate_refuses_a_recipe_the_cluster_cannot_feed_with_exit_2(tmp_path):
    import yaml

    from tests.unit.harness.cli.test_cli import scalearena

    data = {"name": "r", "duration_s": 60,
            "cluster": {"variants": [{"name": "va", "model": "m", "gpu": "H100-SXM", "engine": ENGINE}]},
            "workload": {"arrivals": {"kind": "constant", "rate_rps": 1}, "input_tokens": {"kind": "fixed", "value": 9},
                         "output_tokens": {"kind": "fixed", "value": 9}},
            "autoscalers": [{"kind": "llmd-slo"}]}
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(data))
    assert scalearena("validate", str(tmp_path / "s.yaml")).returncode == 0  # the simulator has them all
    assert scalearena("validate", str(tmp_path / "s.yaml"), "--cluster", "kind").returncode == 0  # serve-router + KSM
    done = scalearena("validate", str(tmp_path / "s.yaml"), "--cluster", "kind", "--gateway", "epp")
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"error: {tmp_path / 's.yaml'}: autoscalers[llmd-slo]: --cluster kind (gateway epp) "
                           "exposes no llm_d_epp_request_ttft_seconds, llm_d_epp_request_ntpot_seconds, which the "
                           "recipe's queries read"), line


def test_the_modern_suite_runs_every_recipe_and_its_comparison_set():
    from pathlib import Path

    from scalearena.harness.config.suite import load_suite

    root = Path(__file__).resolve().parents[4]
    _, plans = load_suite(root / "workloads" / "suites" / "modern.yaml")
    by_scenario: dict[str, set[str]] = {}
    for p in plans:
        by_scenario.setdefault(p.scenario.name, set()).add(p.label)
    others = {"planner-constant", "planner-kalman", "apa", "hpa", "keda", "kpa", "wva", "oracle", "static",
              "static-peak", "static-mean"}
    aggregated = {"llmd-queue", "llmd-saturation", "llmd-queue-guard", "llmd-token", "llmd-slo"} | others
    assert by_scenario == {"exp1-staircase": aggregated, "diurnal-hour": aggregated, "flash-crowd": aggregated,
                           "azure-code-trace": aggregated, "pd-prefill-heavy": aggregated | {"llmd-token-pd"},
                           "pd-decode-heavy": aggregated | {"llmd-token-pd"}}
    assert len(plans) == 4 * 16 + 2 * 17  # 14 autoscalers + static-peak and static-mean; P/D adds llmd-token-pd
    day = next(p.scenario for p in plans if p.scenario.name == "diurnal-hour")
    assert (day.duration_s, day.router.admission.kind) == (3600, "flow_control")
    planners = {p.autoscaler.predictor.kind for p in plans if p.label.startswith("planner")}
    assert planners == {"constant", "kalman"}


def test_queue_recipes_warn_when_the_router_has_no_flow_control():
    from scalearena.harness.objects.recipes import queue_warnings

    sc = scenario({"name": "va"})
    lists = ["llmd-queue", "llmd-queue-guard", "llmd-slo"]
    # llmd-queue and llmd-queue-guard read llm_d_epp_flow_control_queue_size; llmd-slo reads latency histograms
    reject = sc.model_copy(update={"autoscalers": [sc.autoscaler(n) for n in lists],
                                   "router": sc.router.model_copy(update={"admission": sc.router.admission.model_copy(
                                       update={"kind": "saturation"})})})
    msgs = queue_warnings(reject)
    assert [m.split("'")[1] for m in msgs] == ["llmd-queue", "llmd-queue-guard"]
    assert "here saturation, which rejects instead" in msgs[0]
    flow = reject.model_copy(update={"router": sc.router})  # the default admission: flow_control
    assert sc.router.admission.kind == "flow_control" and queue_warnings(flow) == []
