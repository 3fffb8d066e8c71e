"""prometheus-adapter's rules: which PromQL a custom or external metric name stands for.

An HPA asks the metrics APIs for a metric by name; prometheus-adapter
(kubernetes-sigs/prometheus-adapter) finds the discovery rule whose series,
renamed by ``name.matches`` / ``name.as``, carry that name, and fills the
rule's ``metricsQuery`` Go template (delimiters ``<<`` ``>>``) with
``.Series`` (the series name), ``.LabelMatchers`` and ``.GroupBy``. This
module does the same, offline, following pkg/naming/metrics_query.go
(``Build`` for custom metrics: the metric selector's requirements, then
``<namespace label>="<ns>"``, then the resource label matching the object
names; GroupBy the resource label; ``BuildExternal``: selector and namespace
matchers, GroupBy empty) and pkg/naming/metric_namer.go (``as`` defaults to
``$0`` without a capture group and ``$1`` with one).

Two things are known only at run time on a cluster and are settled here:
which series names exist (a ``seriesQuery`` with a ``__name__`` regex is
matched against the series catalogue, contracts/series.py, and the recorded
names of the objects' rule groups) and, for Pods metrics, the pod names the
HPA asks for (the query carries ``TARGET_PODS``, replaced at each sync by
the variant's pods: controllers/hpa/engine.py). Only the three fields above
are supported in templates; anything else in ``<< >>`` is an error.
"""
from __future__ import annotations

import re
from typing import Any

import promql_parser as pp
from pydantic import BaseModel, ConfigDict, Field

from scalearena.contracts.series import CATALOGUE
from scalearena.controllers.hpa.engine import TARGET_PODS
from scalearena.harness.promql.regex import compiled, label_match, search
from scalearena.harness.promql.shape import check_shape


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class ResourceOverride(_Model):
    group: str = Field(default="", description="API group of the resource ('' for core).")
    resource: str = Field(description="Resource the label names (pod, namespace, deployment, ...).")


class Resources(_Model):
    overrides: dict[str, ResourceOverride] = Field(default_factory=dict, description="label -> resource")
    template: str = Field(default="", description="label template, e.g. kube_<<.Group>>_<<.Resource>>")
    namespaced: bool | None = Field(default=None, description="external rules: whether to add the namespace")


class NameRule(_Model):
    matches: str = Field(default="", description="regex over the series name")
    as_: str = Field(default="", alias="as", description="the metric name ($0, $1, ... of the match)")


class RegexFilter(_Model):
    is_: str = Field(default="", alias="is", description="keep series whose name matches")
    isNot: str = Field(default="", description="drop series whose name matches")


class DiscoveryRule(_Model):
    seriesQuery: str = Field(description="series selector the metrics come from")
    seriesFilters: list[RegexFilter] = Field(default_factory=list, description="extra series-name filters")
    resources: Resources = Field(default_factory=Resources, description="label <-> resource mapping")
    name: NameRule = Field(default_factory=NameRule, description="series name -> metric name")
    metricsQuery: str = Field(description="query template")


class ResourceRule(_Model):
    containerQuery: str = Field(description="per-container usage query template")
    nodeQuery: str = Field(default="", description="per-node usage query template")
    resources: Resources = Field(default_factory=Resources, description="label <-> resource mapping")
    containerLabel: str = Field(default="container", description="label naming the container")


class ResourceRules(_Model):
    cpu: ResourceRule | None = Field(default=None, description="cpu usage rule")
    memory: ResourceRule | None = Field(default=None, description="memory usage rule")
    window: str = Field(default="", description="rate window the queries use")


class AdapterConfig(_Model):
    rules: list[DiscoveryRule] = Field(default_factory=list, description="custom metrics (Pods, Object)")
    externalRules: list[DiscoveryRule] = Field(default_factory=list, description="external metrics")
    resourceRules: ResourceRules | None = Field(default=None, description="Resource metrics (cpu, memory)")


_FIELD = re.compile(r"<<\s*(.*?)\s*>>")
_KNOWN = {".Series", ".LabelMatchers", ".GroupBy"}


def render_template(template: str, series: str, matchers: str, group_by: str) -> str:
    """Fill ``<<.Series>>``, ``<<.LabelMatchers>>``, ``<<.GroupBy>>``; any other action raises ValueError."""
    values = {".Series": series, ".LabelMatchers": matchers, ".GroupBy": group_by}
    for m in _FIELD.finditer(template):
        if m.group(1) not in _KNOWN:
            raise ValueError(f"template action <<{m.group(1)}>> is not supported (only <<.Series>>, "
                             "<<.LabelMatchers>>, <<.GroupBy>>)")
    out = _FIELD.sub(lambda m: values[m.group(1)], template)
    if not out.strip():
        raise ValueError("empty query produced by metrics query template")
    return out


def _singular(resource: str) -> str:
    r = resource.lower()
    return r[:-1] if r.endswith("s") else r


def label_for(resources: Resources, resource: str, group: str = "") -> str | None:
    """The series label standing for a resource (``pod``, ``namespace``, ``deployment``), or None."""
    want = _singular(resource)
    for label, o in resources.overrides.items():
        if _singular(o.resource) == want:
            return label
    if resources.template:
        return resources.template.replace("<<.Group>>", group).replace("<<.Resource>>", want)
    return None


def _name_matchers(series_query: str) -> tuple[str | None, list[tuple[str, str]]]:
    """The exact metric name of a series selector, or its ``__name__`` matchers (op, value)."""
    check_shape(series_query)
    node = pp.parse(series_query)
    if not isinstance(node, pp.VectorSelector):
        raise ValueError(f"seriesQuery {series_query!r} is not a series selector")
    name = node.name or None
    ops = []
    for m in node.matchers.matchers:
        if m.name == "__name__":
            ops.append((str(m.op).split(".")[-1], m.value))
    return name, ops


def _op_ok(op: str, pattern: str, name: str) -> bool:
    full = label_match(pattern, name)
    return {"Equal": name == pattern, "NotEqual": name != pattern, "Re": full, "NotRe": not full}.get(op, False)


def candidate_series(rule: DiscoveryRule, extra_names: list[str]) -> list[str]:
    """Series names the rule's seriesQuery and filters select, among the known ones."""
    name, ops = _name_matchers(rule.seriesQuery)
    pool = [name] if name else [s.name for s in CATALOGUE] + extra_names
    keep = [n for n in pool if all(_op_ok(op, v, n) for op, v in ops)]
    for f in rule.seriesFilters:
        if f.is_:
            keep = [n for n in keep if search(f.is_, n)]
        if f.isNot:
            keep = [n for n in keep if not search(f.isNot, n)]
    return keep


def metric_name(rule: DiscoveryRule, series: str) -> str | None:
    """What the adapter calls ``series`` under this rule (None: ``name.matches`` does not match)."""
    pattern = compiled(rule.name.matches or ".*")
    m = pattern.search(series)
    if m is None:
        return None
    as_ = rule.name.as_ or ("$0" if pattern.groups == 0 else "$1")
    if not rule.name.as_ and pattern.groups > 1:
        raise ValueError(f"name.matches {rule.name.matches!r} has several groups: set name.as")
    # Go's Regexp.Expand: a group the pattern does not have (``as: x_${1}`` over ``matches: .*``) is empty, not
    # an IndexError (issue 31's fuzz)
    return re.sub(r"\$\{?(\d+)\}?", lambda g: (m.group(int(g.group(1))) if int(g.group(1)) <= pattern.groups
                                                 else "") or "", as_)


def find_rule(rules: list[DiscoveryRule], metric: str, extra_names: list[str]) -> tuple[DiscoveryRule, str] | None:
    """The first rule, and the series name, that the adapter would serve ``metric`` from."""
    for rule in rules:
        for series in candidate_series(rule, extra_names):
            if metric_name(rule, series) == metric:
                return rule, series
    return None


def selector_matchers(selector: dict[str, Any] | None) -> list[str]:
    """A metric's label selector as PromQL matchers, in the sorted order of labels.Selector.Requirements."""
    if not selector:
        return []
    parts: list[tuple[str, str]] = [(k, f'{k}="{v}"') for k, v in (selector.get("matchLabels") or {}).items()]
    for e in selector.get("matchExpressions") or []:
        key, op, values = e["key"], e["operator"], list(e.get("values") or [])
        joined = "|".join(sorted(values))
        text = {"In": f'{key}=~"{joined}"', "NotIn": f'{key}!~"{joined}"', "Exists": f'{key}!=""',
                "DoesNotExist": f'{key}=""'}.get(op)
        if text is None:
            raise ValueError(f"selector operator {op!r} is not supported by prometheus-adapter")
        parts.append((key, text))
    return [t for _, t in sorted(parts, key=lambda p: p[0])]


def custom_query(rule: DiscoveryRule, series: str, namespace: str, resource: str, names: str,
                 selector: dict[str, Any] | None, regex: bool, group: str = "", extra_group_by: str = "") -> str:
    """``Build``: a Pods (resource ``pod``, names TARGET_PODS) or Object query."""
    ns_label = label_for(rule.resources, "namespace")
    res_label = label_for(rule.resources, resource, group)
    if res_label is None:
        raise ValueError(f"the rule for {series!r} maps no label to resource {resource!r} (resources.overrides)")
    exprs = selector_matchers(selector)
    if ns_label is not None:
        exprs.append(f'{ns_label}="{namespace}"')
    exprs.append(f'{res_label}=~"{names}"' if regex else f'{res_label}="{names}"')
    group_by = res_label + (f",{extra_group_by}" if extra_group_by else "")
    return render_template(rule.metricsQuery, series, ",".join(exprs), group_by)


def external_query(rule: DiscoveryRule, series: str, namespace: str, selector: dict[str, Any] | None) -> str:
    """``BuildExternal``: selector matchers, then the namespace when the rule is namespaced; no GroupBy."""
    exprs = selector_matchers(selector)
    ns_label = label_for(rule.resources, "namespace")
    if ns_label is not None and rule.resources.namespaced is not False:
        exprs.append(f'{ns_label}="{namespace}"')
    return render_template(rule.metricsQuery, series, ",".join(exprs), "")


def pods_query(rule: DiscoveryRule, series: str, namespace: str, selector: dict[str, Any] | None) -> str:
    return custom_query(rule, series, namespace, "pod", TARGET_PODS, selector, regex=True)


def pod_label(resources: Resources) -> str:
    """The label a Pods query's rows name their pod by (the rule's mapping of the ``pod`` resource)."""
    return label_for(resources, "pod") or "pod"


def resource_query(rule: ResourceRule, namespace: str) -> str:
    """A Resource metric's per-pod usage: the container query summed over each pod's containers."""
    as_rule = DiscoveryRule(seriesQuery="x", resources=rule.resources, metricsQuery=rule.containerQuery)
    inner = custom_query(as_rule, "", namespace, "pod", TARGET_PODS, None, regex=True,
                         extra_group_by=rule.containerLabel)
    return f"sum by ({pod_label(rule.resources)}) ({inner})"
