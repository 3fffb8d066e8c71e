"""Which native series a compiled ``kubernetes`` autoscaler (a user's objects, an llm-d recipe) reads.

The kube backend asks before t0: a config whose queries read ``kube_deployment_*`` must not start measuring until
Prometheus holds kube-state-metrics' series for every variant, or llm-d's SLO-aware formula sees n = 0 provisioned
replicas and asks for 0 (then the variant's minimum) on its first poll. The names come from promql-parser's AST of
every query the objects carry (KEDA triggers, HPA metrics, recording rules), minus what the rules record
themselves; a signal-name trigger (``waiting_sum``) reads no series directly.
"""
from __future__ import annotations

from typing import Any

import promql_parser as pp

from scalearena.contracts.series import of_exporter
from scalearena.controllers.hpa.engine import TARGET_PODS

KUBE_STATE = frozenset(s.name for s in of_exporter("kube-state-metrics"))


def _names(query: str) -> set[str]:
    out: set[str] = set()

    def visit(node: Any) -> bool:
        if isinstance(node, pp.VectorSelector) and node.name:
            out.add(node.name)
        return True

    pp.walk(pp.parse(query.replace(TARGET_PODS, "x")), visit)  # queries were checked when the objects loaded
    return out


def _queries(cfg: Any) -> list[str]:
    out = [rule["expr"] for g in getattr(cfg, "rule_groups", None) or [] for rule in g["rules"]]
    for t in getattr(cfg, "targets", None) or []:
        a = t.autoscaler
        if a.kind == "keda":
            out += [tr.query for tr in a.trigger_list if not tr.is_signal]
        elif a.kind == "hpa":
            out += [m.query for m in a.metrics if getattr(m, "query", None)]
    return out


def series_read(cfg: Any) -> set[str]:
    """Series names (histogram families without ``_bucket``) the config's queries read; empty for any config
    that is not a ``kubernetes`` one."""
    recorded = {rule["record"] for g in getattr(cfg, "rule_groups", None) or [] for rule in g["rules"]
                if rule.get("record")}
    names: set[str] = set().union(*(_names(q) for q in _queries(cfg)))
    return {n.removesuffix("_bucket") for n in names} - recorded


def reads_kube_state(cfg: Any) -> bool:
    """Whether the config reads any kube-state-metrics series."""
    return bool(series_read(cfg) & KUBE_STATE)
