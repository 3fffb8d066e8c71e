"""Recording rules at virtual time: file formats, errors with field paths, evaluation order and staleness."""
from __future__ import annotations

import pytest

from scalearena.contracts.errors import UserError
from scalearena.harness.promql import TSDB, PromQLEngine
from scalearena.harness.promql.rules import RuleEvaluator, load_rule_groups

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


def test_recorded_series_follow_the_interval_and_feed_later_rules() -> None:
    e = _engine()
    ev = RuleEvaluator(e, load_rule_groups(RULES, "rules.yaml"))
    ev.advance(45)  # evaluations at 0, 15, 30, 45
    # at 45: a = 10 - 3 = 7, b = 1 -> 8; the sum carries the rule's label and drops __name__ of `running`
    out = e.query("pool:running:sum", 45)
    assert [(dict(s.labels), s.value) for s in out] == [({"__name__": "pool:running:sum", "team": "serving"}, 8.0)]
    assert e.query("pool:running:double", 45)[0].value == 16.0  # the same evaluation's output, doubled
    assert e.query("pool:running:sum offset 15s", 45)[0].value == 9.0  # recorded at 30: 8 + 1
    assert e.query("count_over_time(pool:running:sum[1m])", 45)[0].value == 4.0


def test_a_series_that_leaves_a_rule_result_is_marked_stale_at_once() -> None:
    e = _engine()
    ev = RuleEvaluator(e, load_rule_groups(RULES, "rules.yaml"))
    ev.advance(60)
    # `running > 5` keeps pod a while it is 10, 9, 8, 7, 6 -> still there at 60
    assert [dict(s.labels)["pod"] for s in e.query("pod:running:busy", 60)] == ["a"]
    e.tsdb.append("running", {"pod": "a"}, 75, 4.0)
    ev.advance(75)
    assert e.query("pod:running:busy", 75) == []  # staleness marker, not the 5-minute lookback
    assert e.query("pod:running:busy", 74.9)[0].value == 6.0


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
