"""CLUSTER=kwok at a time scale: every duration a run's objects carry divided by it, in one place.

With time scale ``s`` one wall second is ``s`` scenario seconds, as on ``--cluster local``
(harness/local/backend.py): a 180 s scenario runs in 180/s wall seconds, and every time recorded is
in scenario seconds. The real controllers run in real time, so each duration they are given is divided by
``s``. Where each one is divided:

* here (``scale_objects``), the objects a run applies:

  - HorizontalPodAutoscaler ``spec.behavior`` (and a ScaledObject's
    ``advanced.horizontalPodAutoscalerConfig.behavior``): ``stabilizationWindowSeconds`` and each policy's
    ``periodSeconds``. A rule the API server would fill in is written out first with upstream's defaults
    (pkg/apis/autoscaling/v2/defaults.go: scale-up 0 s window, max of 4 pods and 100 % per 15 s; scale-down
    100 % per 15 s, its window left to the controller-manager's flag), so its 15 s periods scale too;
  - ScaledObject ``pollingInterval``, ``cooldownPeriod`` and ``initialCooldownPeriod`` (KEDA's defaults,
    30 s and 300 s, written out when absent);
  - Prometheus' ``scrape_interval``, ``evaluation_interval`` and ``scrape_timeout`` (global and per job) and
    its ``--query.lookback-delta`` (default 5m); prometheus-adapter's ``--metrics-relist-interval``;
  - the WVA controller's loop periods (WVA_INTERVAL_S, WVA_FAST_INTERVAL_S), its scale-to-zero retention,
    and WVA_TIME_SCALE, by which it divides its metric window and its staleness bound (harness/kube/wva);
  - the gateway (serve-router) gets ``--time-scale`` (its refresh and queue waits);

* kube/kwok.py, the controller-manager's flags: the HPA sync period, downscale stabilisation, initial
  readiness delay and CPU initialisation period;
* kube/launcher.py, the kubelet's part: readiness probe delays and periods, grace periods,
  serve-engine's ``--time-scale`` and llm-d-inference-sim's latency flags;
* kube/sampling.py and the Locust user: the load schedule, the sampler and the in-harness policies run on the
  scenario clock; latencies are measured in wall time and recorded times ``s``.

Whole-second fields (HPA and KEDA take int32 seconds) are rounded to the nearest wall second, at least 1 s
where the scenario's value is above 0; each rounding is returned as a note (the run's metadata keeps it), with
the scenario seconds it amounts to. What no flag reaches stays in real time and is distorted by ``s``: process
start-up and API/watch latency (tens of milliseconds wall, so ``s`` times that in scenario time), KWOK's own
Stage delays and the controllers' fixed internal constants. User PromQL (``kind: kubernetes`` objects, llm-d
recipes) is refused at ``s`` != 1, as on local: ``rate()`` is per wall second and a window or ``offset``
written by a user would have to be rewritten.
"""
from __future__ import annotations

import copy

import yaml

from scalearena.contracts.errors import UserError
from scalearena.controllers.base import AutoscalerConfig
from scalearena.controllers.kubernetes import KubernetesConfig
from scalearena.harness.kube.launcher import (
    SIM_REPOSITORY,
    SIM_WHOLE_MS_FLAGS,
    duration_ms,
    flag_value,
    repository,
    set_flag,
)
from scalearena.harness.kube.render import Obj
from scalearena.harness.metrics.prometheus import promql_duration

HPA_SCALE_UP_DEFAULT: Obj = {"stabilizationWindowSeconds": 0, "selectPolicy": "Max", "policies": [
    {"type": "Pods", "value": 4, "periodSeconds": 15}, {"type": "Percent", "value": 100, "periodSeconds": 15}]}
HPA_SCALE_DOWN_DEFAULT: Obj = {"selectPolicy": "Max", "policies": [{"type": "Percent", "value": 100,
                                                                   "periodSeconds": 15}]}
KEDA_DEFAULTS = {"pollingInterval": 30, "cooldownPeriod": 300}  # keda.sh/v1alpha1 ScaledObject
PROMETHEUS_LOOKBACK_S = 300.0  # --query.lookback-delta's default
WVA_CONFIG, WVA_SCALE_TO_ZERO = "wva-controller-config", "wva-scale-to-zero-config"


def parse_seconds(text: str | int | float) -> float:
    """A Go duration ('15s', '1m30s', '250ms') or a bare number of seconds, in seconds."""
    from scalearena.harness.local.cli import parse_duration_s

    return parse_duration_s(text, bare_unit="s")


class TimeScale:
    """Divides the durations of one run's objects by ``scale``; ``notes`` lists every rounding it made."""

    def __init__(self, scale: float) -> None:
        if not scale > 0:
            raise ValueError(f"time scale must be > 0, got {scale!r}")
        self.scale = float(scale)
        self.notes: list[str] = []

    # ---- primitives -----------------------------------------------------------------------------------
    def whole(self, seconds: float, where: str, minimum: int = 0) -> int:
        """Scenario seconds -> whole wall seconds (int32 fields), at least ``minimum`` and at least 1 when > 0."""
        wall = seconds / self.scale
        out = max(minimum, round(wall), 1 if seconds > 0 else 0)
        if abs(out - wall) > 1e-9:
            self.notes.append(f"{where}: {seconds:g} s is {out} s wall, {out * self.scale:g} s of scenario time")
        return out

    def duration(self, text: str | int | float) -> str:
        """A duration divided, as Prometheus and Go both read it (whole ms, at least 1 ms: 7.5 s -> '7500ms')."""
        return promql_duration(parse_seconds(text) / self.scale)

    # ---- objects --------------------------------------------------------------------------------------
    def objects(self, objs: list[Obj]) -> list[Obj]:
        """Copies of ``objs`` with their durations divided (module docstring)."""
        out = [copy.deepcopy(o) for o in objs]  # one by one: objects may share a dict (hpa_objects' behavior)
        for o in out:
            kind, name = o.get("kind"), o.get("metadata", {}).get("name", "")
            where = f"{kind} {name}"
            if kind == "HorizontalPodAutoscaler" and o["spec"].get("behavior") is not None:
                self.behavior(o["spec"]["behavior"], f"{where} spec.behavior")
            elif kind == "ScaledObject":
                self.scaled_object(o["spec"], where)
            elif kind == "ConfigMap":
                self.config_map(o, name)
            elif kind == "Deployment":
                self.deployment(o, name)
        return out

    def behavior(self, b: Obj, where: str) -> None:
        for rule, default in (("scaleUp", HPA_SCALE_UP_DEFAULT), ("scaleDown", HPA_SCALE_DOWN_DEFAULT)):
            r = b.get(rule)
            filled = copy.deepcopy(default) if r is None else {**copy.deepcopy(default), **r}
            if r is not None and r.get("policies") is None:
                filled["policies"] = copy.deepcopy(default["policies"])
            if filled.get("stabilizationWindowSeconds") is not None:
                filled["stabilizationWindowSeconds"] = self.whole(filled["stabilizationWindowSeconds"],
                                                                  f"{where}.{rule}.stabilizationWindowSeconds")
            for i, p in enumerate(filled["policies"]):
                p["periodSeconds"] = self.whole(p["periodSeconds"], f"{where}.{rule}.policies[{i}].periodSeconds", 1)
            b[rule] = filled

    def scaled_object(self, spec: Obj, where: str) -> None:
        for field, default in KEDA_DEFAULTS.items():
            spec[field] = self.whole(spec.get(field, default), f"{where} spec.{field}",
                                     1 if field == "pollingInterval" else 0)
        if spec.get("initialCooldownPeriod"):
            spec["initialCooldownPeriod"] = self.whole(spec["initialCooldownPeriod"], f"{where} spec.initialCooldownPeriod")
        hpa = (spec.get("advanced") or {}).get("horizontalPodAutoscalerConfig") or {}
        if hpa.get("behavior") is not None:
            self.behavior(hpa["behavior"], f"{where} spec.advanced.horizontalPodAutoscalerConfig.behavior")

    def config_map(self, o: Obj, name: str) -> None:
        data = o.get("data") or {}
        if "prometheus.yml" in data:
            doc = yaml.safe_load(data["prometheus.yml"]) or {}
            for section in [doc.setdefault("global", {}), *(doc.get("scrape_configs") or [])]:
                for key in ("scrape_interval", "evaluation_interval", "scrape_timeout"):
                    if key in section or (section is doc["global"] and key != "scrape_timeout"):
                        section[key] = self.duration(section.get(key, "1m"))
            data["prometheus.yml"] = yaml.safe_dump(doc, sort_keys=False)
        if name == WVA_CONFIG:
            for key in ("WVA_INTERVAL_S", "WVA_FAST_INTERVAL_S"):
                if key in data:
                    data[key] = repr(float(data[key]) / self.scale)
            data["WVA_TIME_SCALE"] = repr(self.scale)
        if name == WVA_SCALE_TO_ZERO:
            for key, text in list(data.items()):
                entry = yaml.safe_load(text) or {}
                if isinstance(entry, dict) and "scaleToZeroRetentionPeriod" in entry:
                    # seconds: the controller's parser (harness/kube/wva/config.py) takes h/m/s, not ms
                    wall = parse_seconds(entry["scaleToZeroRetentionPeriod"]) / self.scale
                    entry["scaleToZeroRetentionPeriod"] = f"{wall:.6g}s"
                    data[key] = yaml.safe_dump(entry, sort_keys=False)

    def sim_latencies(self, c: Obj, where: str) -> None:
        """llm-d-inference-sim sleeps whole milliseconds (launcher.SIM_WHOLE_MS_FLAGS): refuse a scale that would
        make one of its latencies fractional, naming the scales that keep them all whole."""
        args = [str(a) for a in c.get("args") or []]
        values = {f: duration_ms(found[1]) for f in SIM_WHOLE_MS_FLAGS if (found := flag_value(args, f)) is not None}
        bad = {f: ms / self.scale for f, ms in values.items() if abs(ms / self.scale - round(ms / self.scale)) > 1e-9}
        if bad:
            fits = [k for k in range(1, 101) if all(abs(ms / k - round(ms / k)) < 1e-9 for ms in values.values())]
            shown = ", ".join(f"{f}={values[f]:g}ms would be {v:g} ms" for f, v in bad.items())
            raise UserError(f"at time scale {self.scale:g} {shown}; llm-d-inference-sim sleeps whole milliseconds "
                            "(v0.10.2 RandomNormDuration), so it would run them shorter", where=where,
                            expected="a time scale keeping every sim latency whole: "
                                     + (", ".join(map(str, fits[:12])) if fits else "1"))

    def deployment(self, o: Obj, name: str) -> None:
        for c in o["spec"]["template"]["spec"].get("containers", []):
            if repository(str(c.get("image", ""))) == SIM_REPOSITORY:
                self.sim_latencies(c, f"Deployment {name} (llm-d-inference-sim)")
            args = [str(a) for a in c.get("args") or []]
            argv = [str(a) for a in c.get("command") or []] + args
            if "--config.file=/etc/prometheus/prometheus.yml" in args:  # Prometheus itself
                found = flag_value(args, "--query.lookback-delta")
                c["args"] = set_flag(args, "--query.lookback-delta",
                                     self.duration(found[1] if found else PROMETHEUS_LOOKBACK_S))
            elif (found := flag_value(args, "--metrics-relist-interval")) is not None:  # prometheus-adapter
                c["args"] = set_flag(args, "--metrics-relist-interval", self.duration(found[1]))
            elif "router" in argv and any("scalearena" in a for a in argv):  # serve-router, the gateway
                c["args"] = set_flag(args, "--time-scale", repr(self.scale))


def refuse_scaled_promql(autoscaler: AutoscalerConfig, scale: float) -> None:
    """User PromQL cannot be time-scaled (module docstring): refused at a scale other than 1, as on local."""
    if scale != 1 and isinstance(autoscaler, KubernetesConfig):
        raise UserError(f"a kubernetes autoscaler's PromQL (rate() per wall second, range windows, rule intervals) "
                        f"is written in real seconds and cannot be sped up by time_scale {scale:g}",
                        where=f"autoscaler {autoscaler.label}", expected="time_scale=1 on --cluster kwok")


def scale_objects(objs: list[Obj], scale: float) -> tuple[list[Obj], list[str]]:
    """(the objects with every duration divided by ``scale``, the roundings made); unchanged at scale 1."""
    if scale == 1:
        return objs, []
    ts = TimeScale(scale)
    return ts.objects(objs), ts.notes
