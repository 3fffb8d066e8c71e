"""Recording rules at virtual time: file formats, errors with field paths, evaluation order and staleness."""
from __future__ import annotations

import pytest

from scalearena.contracts.errors import UserError
from scalearena.harness.promql import TSDB, PromQLEngine
from scalearena.harness.promql.rules import RuleEvaluator, first_slot_ms, group_offset_ms, load_rule_groups

RULES = {
    "groups": [{
        "name": "slo",
        "interval": "15s",
        "rules": [
            {"record": "pool:running:sum", "expr": "sum(running)", "labels": {"team": "serving"}},
            {"record": "pool:running:double", "expr": "pool:running:sum * 2"},
            {"record": "pod:running:busy", "expr": "running > 5"},
            {"alert": "Busy", "expr": "running > 100", "for": "1m"},
        ],
    }]
}


def _engine() -> PromQLEngine:
    db = TSDB()
    for t in range(0, 61, 15):
        db.append("running", {"pod": "a"}, t, 10 - t / 15)  # 10, 9, 8, 7, 6
        db.append("running", {"pod": "b"}, t, 1.0)
    return PromQLEngine(db)


# group "slo" at 15 s sits 14,986 ms into each interval: blake2b-64 of b"slo" is 0x9eee110d605ba1ca, whose
# remainder by 15,000 is 14,986 (a golden value: a different phase means recorded series move in every run)
SLO_OFFSET_MS = 14_986


def test_a_groups_phase_is_a_stable_hash_of_its_name() -> None:
    assert group_offset_ms("slo", 15_000) == SLO_OFFSET_MS
    assert group_offset_ms("g", 15_000) == 100  # another group, another phase: 0x6c767cd8aedb30bc mod 15,000
    # group.go run(): the first evaluation is EvalTimestamp(start) + interval, the first slot after the start:
    # from 0 -> 14.986 s (no evaluation at 0); from 20 s -> 14.986 + 15 = 29.986 s; from a slot -> the next one
    assert first_slot_ms("slo", 15_000, 0) == 14_986
    assert first_slot_ms("slo", 15_000, 20_000) == 29_986
    assert first_slot_ms("slo", 15_000, 14_986) == 29_986


def test_recorded_series_follow_the_groups_slots_and_feed_later_rules() -> None:
    e = _engine()
    ev = RuleEvaluator(e, load_rule_groups(RULES, "rules.yaml"))
    ev.advance(45)  # evaluations at 14.986, 29.986, 44.986 (none at 0)
    # at 44.986 the latest raw samples are those of 30: a = 10 - 2 = 8, b = 1 -> 9 (the sample at 45 is later);
    # the sum carries the rule's label and drops __name__ of `running`
    out = e.query("pool:running:sum", 45)
    assert [(dict(s.labels), s.value) for s in out] == [({"__name__": "pool:running:sum", "team": "serving"}, 9.0)]
    assert e.query("pool:running:double", 45)[0].value == 18.0  # the same evaluation's output, doubled
    assert e.query("pool:running:sum offset 15s", 45)[0].value == 10.0  # recorded at 29.986 from 15: 9 + 1
    assert e.query("count_over_time(pool:running:sum[1m])", 45)[0].value == 3.0  # 14.986, 29.986, 44.986
    assert e.query("timestamp(pool:running:sum)", 45)[0].value == pytest.approx(44.986)


def test_a_series_that_leaves_a_rule_result_is_marked_stale_at_once() -> None:
    e = _engine()
    ev = RuleEvaluator(e, load_rule_groups(RULES, "rules.yaml"))
    ev.advance(60)
    # `running > 5` keeps pod a while it is 10, 9, 8, 7 (read at 14.986 ... 59.986) -> still there at 60
    assert [dict(s.labels)["pod"] for s in e.query("pod:running:busy", 60)] == ["a"]
    e.tsdb.append("running", {"pod": "a"}, 75, 4.0)
    ev.advance(90)  # 74.986 still reads a = 6 (scraped at 60); 89.986 reads 4 -> a leaves the result
    assert e.query("pod:running:busy", 90) == []  # staleness marker, not the 5-minute lookback
    assert e.query("pod:running:busy", 89.9)[0].value == 6.0


def test_groups_run_on_their_own_phases() -> None:
    e = _engine()
    two = {"groups": [RULES["groups"][0], {"name": "g", "interval": "15s",
                                             "rules": [{"record": "pool:running:max", "expr": "max(running)"}]}]}
    RuleEvaluator(e, load_rule_groups(two, "rules.yaml")).advance(31)
    # "slo" at 14.986 and 29.986; "g" (offset 100 ms) at 0.1, 15.1, 30.1
    assert [t for t, _ in e.query("pool:running:sum[31s]", 31)[0].points] == [14_986, 29_986]
    assert [t for t, _ in e.query("pool:running:max[31s]", 31)[0].points] == [100, 15_100, 30_100]


def test_prometheus_rule_object_is_accepted() -> None:
    obj = {"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
           "metadata": {"name": "slo-rules"}, "spec": RULES}
    groups = load_rule_groups(obj, "rules.yaml")
    assert [g.name for g in groups] == ["slo"] and groups[0].interval_s == 15.0


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"groups": [{"name": "g", "rules": [{"record": "x", "expr": "sum(y)", "lables": {}}]}]},
         "groups.0.rules.0.lables: unknown field"),
        ({"groups": [{"name": "g", "interval": "soon", "rules": []}]}, "groups.0.interval"),
        ({"groups": [{"name": "g", "rules": [{"expr": "y"}]}]}, "exactly one of `record` or `alert`"),
        ({"groups": [{"name": "g", "rules": [{"record": "x", "expr": "sum(y) + stddev(y)"}]}]},
         "groups.0.rules.0.expr: aggregation stddev() is outside the supported PromQL subset (query "
         "'sum(y) + stddev(y)' at character 9)"),
        ({"groups": [{"name": "g", "rules": []}, {"name": "g", "rules": []}]}, "groups.1.name: duplicate"),
        ({"apiVersion": "v1", "kind": "PrometheusRule", "spec": {"groups": []}}, "apiVersion"),
    ],
)
def test_bad_rule_files_name_the_field(data: dict, message: str) -> None:
    with pytest.raises(UserError) as info:
        load_rule_groups(data, "rules.yaml")
    assert message in str(info.value) and "rules.yaml" in str(info.value)


def test_a_measured_offset_replaces_the_name_hash() -> None:
    # a real run's Prometheus evaluated group "slo" 5.473 s into each 15 s interval (scenario.phases.rules_s)
    assert first_slot_ms("slo", 15_000, 0, 5.473) == 5_473
    assert first_slot_ms("slo", 15_000, 0, 20.473) == 5_473  # taken modulo the interval
    e = _engine()
    RuleEvaluator(e, load_rule_groups(RULES, "rules.yaml"), offsets={"slo": 5.473}).advance(31)
    assert [t for t, _ in e.query("pool:running:sum[31s]", 31)[0].points] == [5_473, 20_473]


def test_rules_started_before_the_load_have_recorded_before_it() -> None:
    # a real Prometheus runs its rules from its own start, ~24 s before the load (phases.control_lead_s): an
    # avg_over_time over the recorded series then counts those earlier samples, as the llm-d SLO recipe's does
    e = _engine()
    rules = {"groups": [{"name": "slo", "interval": "15s", "rules": [
        {"record": "sat:raw", "expr": "(sum(running) > 0) or vector(0)"},
        {"record": "sat:avg", "expr": "avg_over_time(sat:raw[45s])"}]}]}
    RuleEvaluator(e, load_rule_groups(rules, "rules.yaml"), start=-24.0, offsets={"slo": 0.131}).advance(16)
    # slots -14.869 (no series yet: 0), 0.131 (running 10 + 1 = 11), 15.131 (9 + 1 = 10)
    assert [t for t, _ in e.query("sat:raw[45s]", 16)[0].points] == [-14_869, 131, 15_131]
    # the average at 15.131 over (-29.869, 15.131]: (0 + 11 + 10) / 3 = 7; started at 0 it would be (11 + 10) / 2
    assert e.query("sat:avg", 16)[0].value == pytest.approx(7.0)
