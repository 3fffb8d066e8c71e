"""Prometheus recording rules, evaluated on their interval at virtual time.

Real autoscaling recipes (llm-d's SLO-aware KEDA guide, prometheus-adapter
set-ups) put recording rules between the raw series and the trigger query,
so the simulator must run them as a Prometheus server does: every group at
its interval, each rule's result written back under the ``record`` name with
the rule's ``labels`` (Prometheus ``rules/recording.go``), series that drop
out of a result ended with a staleness marker, and later rules of a group
seeing the earlier rules' output of the same evaluation. Each group runs
on its own slots, as Prometheus' ``rules/group.go`` places them: every
``interval`` at a per-group offset (``EvalTimestamp``: the group's hash modulo
the interval), the first evaluation at the first slot after the start
(``run``: ``EvalTimestamp(now) + interval``), so a recorded series lags the
raw series by part of an interval, not 0. Prometheus hashes the group's name
with its rule file's path, which a cluster chooses (prometheus-operator
writes ``<namespace>-<name>-<uid>.yaml``) and the version's label hash
differs (stringlabels); here the name alone is hashed, so a group keeps one
phase on every run and machine. Virtual time 0 is slot-aligned. The file format is
Prometheus' rule file (``groups: [...]``) or a prometheus-operator
``PrometheusRule`` object wrapping it; alerting rules are accepted and not
evaluated (they record nothing a query can read, apart from ``ALERTS``).
"""
from __future__ import annotations

import hashlib
import re
from datetime import timedelta
from typing import Any, Literal

import promql_parser as pp
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from scalearena.contracts.errors import UserError
from scalearena.harness.promql.engine import PromQLEngine
from scalearena.harness.promql.errors import PromQLError, QueryExecutionError, is_parser_panic
from scalearena.harness.promql.tsdb import STALE_NAN, to_ms
from scalearena.harness.promql.values import NAME, Labels, Scalar, Vector

_DURATION_TEXT = re.compile(r"(\d+(ms|s|m|h|d|w|y))+|\d+")


def _duration(value: str) -> float:
    """A Prometheus duration in seconds. Its form is checked before promql-parser reads it: ``-5`` and ``1e999``
    made the parser panic (a Rust backtrace on stderr, then pyo3's PanicException past every guard: issue 31)."""
    try:
        if not _DURATION_TEXT.fullmatch(value):
            raise ValueError
        d: timedelta = pp.parse_duration(value)
    except BaseException as e:
        if not isinstance(e, ValueError) and not is_parser_panic(e):
            raise
        raise ValueError(f"not a Prometheus duration: {value!r} (e.g. 15s, 1m)") from None
    if d.total_seconds() <= 0:
        raise ValueError("must be positive")
    return d.total_seconds()


class Rule(BaseModel):
    """One rule: a recording rule (record + expr) or an alerting rule (alert + expr), as in Prometheus."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    record: str | None = Field(None, description="name of the series the expression's result is stored under")
    alert: str | None = Field(None, description="alert name (alerting rules are accepted, not evaluated)")
    expr: str = Field(description="PromQL expression evaluated at each group evaluation")
    labels: dict[str, str] = Field(default_factory=dict, description="labels added to (or replacing) the result's")
    for_: str | None = Field(None, alias="for", description="alerting rules only: pending duration")
    keep_firing_for: str | None = Field(None, description="alerting rules only")
    annotations: dict[str, str] = Field(default_factory=dict, description="alerting rules only")

    @model_validator(mode="after")
    def _one_kind(self) -> Rule:
        if (self.record is None) == (self.alert is None):
            raise ValueError("a rule needs exactly one of `record` or `alert`")
        return self


class RuleGroup(BaseModel):
    """A group of rules evaluated together, in order, every ``interval``."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(description="group name, unique within the file")
    interval: str = Field("1m", description="evaluation interval (Prometheus duration; default the global 1m)")
    limit: int | None = Field(None, description="maximum series per rule result (0 or absent: no limit)")
    rules: list[Rule] = Field(description="rules, evaluated in order")

    @field_validator("interval")
    @classmethod
    def _interval(cls, v: str) -> str:
        _duration(v)
        return v

    @property
    def interval_s(self) -> float:
        return _duration(self.interval)


class RuleFile(BaseModel):
    """Prometheus' rule file: ``groups: [...]``."""

    model_config = ConfigDict(extra="forbid")
    groups: list[RuleGroup] = Field(description="rule groups")


class PrometheusRule(BaseModel):
    """prometheus-operator's PrometheusRule (monitoring.coreos.com/v1): a rule file under ``spec``."""

    model_config = ConfigDict(extra="forbid")
    apiVersion: Literal["monitoring.coreos.com/v1"] = Field(description="API group/version")
    kind: Literal["PrometheusRule"] = Field(description="object kind")
    metadata: dict[str, Any] = Field(default_factory=dict, description="object metadata (name, namespace, labels)")
    spec: RuleFile = Field(description="the rule groups")


def load_rule_groups(data: Any, where: str) -> list[RuleGroup]:
    """Rule groups from a parsed YAML document; any problem is one UserError with the field path."""
    from scalearena.harness.config.schema_help import validated

    if isinstance(data, dict) and "kind" in data:
        groups, prefix = validated(PrometheusRule, data, where).spec.groups, "spec.groups"
    else:
        groups, prefix = validated(RuleFile, data, where).groups, "groups"
    names = [g.name for g in groups]
    for i, g in enumerate(groups):
        if names.index(g.name) != i:
            raise UserError(f"{prefix}.{i}.name: duplicate group name {g.name!r}", where=where)
        for j, rule in enumerate(g.rules):
            try:
                PromQLEngine.check(rule.expr)
            except PromQLError as e:
                raise UserError(f"{prefix}.{i}.rules.{j}.expr: {e.message} ({e.where})", where=where) from None
    return groups


def group_offset_ms(name: str, interval_ms: int) -> int:
    """The group's phase within its interval (group.go ``hash() % interval``), from a stable hash of its name."""
    digest = hashlib.blake2b(name.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % interval_ms


def first_slot_ms(name: str, interval_ms: int, start_ms: int, offset_s: float | None = None) -> int:
    """The first evaluation: the group's first slot (k x interval + offset) strictly after ``start_ms``; the offset is
    ``offset_s`` (a real run's measured phase, modulo the interval) when given, else the name's hash."""
    offset = group_offset_ms(name, interval_ms) if offset_s is None else to_ms(offset_s) % interval_ms
    return (start_ms - offset) // interval_ms * interval_ms + offset + interval_ms


class RuleEvaluator:
    """Runs rule groups into the engine's TSDB; ``advance(now)`` catches up every evaluation due by ``now``.

    ``start``: when the rule manager starts (virtual seconds); each group's first evaluation is its first slot
    after it. ``offsets``: a group's offset by name, in place of its name's hash."""

    def __init__(self, engine: PromQLEngine, groups: list[RuleGroup], start: float = 0.0,
                 offsets: dict[str, float] | None = None) -> None:
        self.engine = engine
        self.groups = groups
        self.offsets = dict(offsets or {})
        self._next_ms = [first_slot_ms(g.name, to_ms(g.interval_s), to_ms(start), self.offsets.get(g.name))
                         for g in groups]
        self._last: dict[tuple[int, int], set[Labels]] = {}
        self.errors = 0  # failed rule evaluations (Prometheus counts them in rule_evaluation_failures_total)

    def advance(self, now: float) -> None:
        now_ms = to_ms(now)
        while True:
            due = [(t, i) for i, t in enumerate(self._next_ms) if t <= now_ms]
            if not due:
                return
            t, i = min(due)
            self._evaluate(i, t)
            self._next_ms[i] = t + to_ms(self.groups[i].interval_s)

    def _evaluate(self, gi: int, t: int) -> None:
        group = self.groups[gi]
        for ri, rule in enumerate(group.rules):
            if rule.record is None:
                continue
            try:
                value = self.engine.query(rule.expr, t / 1000)
                samples = _recorded(value, rule, group.limit)
            except QueryExecutionError:
                self.errors += 1
                continue
            now_keys = set()
            for key, v in samples:
                self.engine.tsdb.append_ms(key, t, v)
                now_keys.add(key)
            for gone in self._last.get((gi, ri), set()) - now_keys:
                self.engine.tsdb.append_ms(gone, t, STALE_NAN)
            self._last[(gi, ri)] = now_keys


def _recorded(value: Any, rule: Rule, limit: int | None) -> list[tuple[Labels, float]]:
    """rules/recording.go Eval: rename to `record`, apply the rule's labels, refuse duplicates and overflow.

    A scalar result is one sample without labels (rules/manager.go EngineQueryFunc).
    """
    assert rule.record is not None
    if isinstance(value, Scalar):
        rows: list[tuple[dict[str, str], float]] = [({}, value.value)]
    elif isinstance(value, Vector):
        rows = [(dict(s.labels), s.value) for s in value]
    else:
        raise QueryExecutionError("rule result is not a vector or scalar")
    out: list[tuple[Labels, float]] = []
    seen: set[Labels] = set()
    for labels, v in rows:
        labels[NAME] = rule.record
        labels.update(rule.labels)
        key = tuple(sorted((k, val) for k, val in labels.items() if val != ""))
        if key in seen:
            raise QueryExecutionError("vector contains metrics with the same labelset after applying rule labels")
        seen.add(key)
        out.append((key, v))
    if limit and len(out) > limit:
        raise QueryExecutionError(f"exceeded limit of {limit} with {len(out)} series")
    return out
