"""From upstream WVA's ConfigMaps to the shared policy's config.

The thresholds live where upstream keeps them — one saturation ConfigMap and
one scale-to-zero ConfigMap per namespace, a ``default`` entry plus per-model
entries carrying ``model_id`` — and are translated here into the ``wva``
autoscaler config, validated by the registry's own model. So a user tunes the
controller with the same keys as upstream, and the policy sees the same
config object it gets from a scenario YAML.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from scalearena.contracts.errors import UserError
from scalearena.controllers.base import AutoscalerConfig
from scalearena.controllers.registry import REGISTRY
from scalearena.harness.config.safe_yaml import parse_yaml
from scalearena.harness.config.schema_help import validated

SATURATION_KEYS = {  # upstream key -> WVAConfig / ModelOverride field
    "kvCacheThreshold": "tau_kv",
    "queueLengthThreshold": "tau_q",
    "kvSpareTrigger": "gamma_kv",
    "queueSpareTrigger": "gamma_q",
    "minNonSaturatedReplicasForScaleDown": "min_non_saturated_for_scale_down",
}
SATURATION_CONFIGMAP = "wva-saturation-scaling-config"
SCALE_TO_ZERO_CONFIGMAP = "wva-scale-to-zero-config"


def parse_duration_s(text: str | int | float) -> float:
    """'10m' -> 600, '90s' -> 90, '1h30m' -> 5400, 45 -> 45."""
    if isinstance(text, int | float):
        return float(text)
    parts = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+(?:\.\d+)?)s)?", text.strip())
    if not parts or not any(parts.groups()):
        raise ValueError(f"not a duration: {text!r} (expected e.g. 10m, 90s, 1h)")
    h, m, s = parts.groups()
    return int(h or 0) * 3600 + int(m or 0) * 60 + float(s or 0)


def _entries(data: Mapping[str, str], where: str) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for key, text in data.items():
        value = parse_yaml(str(text), f"{where} entry {key!r}") or {}
        if not isinstance(value, dict):
            raise UserError(f"entry {key!r} must be a mapping", where=where)
        out[key] = value
    return out


def wva_config_from_configmaps(saturation: Mapping[str, str] | None, scale_to_zero: Mapping[str, str] | None,
                               *, period_s: float = 30.0, fast_period_s: float | None = 0.1) -> AutoscalerConfig:
    cfg: dict[str, Any] = {"kind": "wva", "period_s": period_s, "fast_period_s": fast_period_s}
    overrides: dict[str, dict[str, Any]] = {}
    for key, entry in _entries(saturation or {}, SATURATION_CONFIGMAP).items():
        fields: dict[str, Any] = {SATURATION_KEYS[k]: v for k, v in entry.items() if k in SATURATION_KEYS}
        unknown = set(entry) - set(SATURATION_KEYS) - {"model_id", "namespace", "enableLimiter"}
        if unknown:
            raise UserError(f"entry {key!r}: unknown keys {sorted(unknown)}", where=SATURATION_CONFIGMAP,
                            expected="one of " + ", ".join(SATURATION_KEYS))
        if key == "default":
            cfg.update(fields)
        else:
            if "model_id" not in entry:
                raise UserError(f"override {key!r} needs model_id", where=SATURATION_CONFIGMAP)
            overrides.setdefault(str(entry["model_id"]), {}).update(fields)
    for key, entry in _entries(scale_to_zero or {}, SCALE_TO_ZERO_CONFIGMAP).items():
        fields = {}
        try:
            if "scaleToZeroRetentionPeriod" in entry:
                fields["retention_s"] = parse_duration_s(entry["scaleToZeroRetentionPeriod"])
        except ValueError as e:
            raise UserError(f"entry {key!r}: {e}", where=SCALE_TO_ZERO_CONFIGMAP) from None
        if "enableScaleToZero" in entry:
            fields["enabled"] = bool(entry["enableScaleToZero"])
        if key == "default":
            cfg["scale_to_zero"] = fields
        else:
            if "model_id" not in entry:
                raise UserError(f"override {key!r} needs model_id", where=SCALE_TO_ZERO_CONFIGMAP)
            o = overrides.setdefault(str(entry["model_id"]), {})
            if "enabled" in fields:
                o["scale_to_zero"] = fields["enabled"]
            if "retention_s" in fields:
                o["retention_s"] = fields["retention_s"]
    if overrides:
        cfg["model_overrides"] = overrides
    # one line naming the WVAConfig field (tau_kv is kvCacheThreshold, ... as SATURATION_KEYS) and the value
    return validated(REGISTRY.get("wva").config, cfg, f"{SATURATION_CONFIGMAP} / {SCALE_TO_ZERO_CONFIGMAP}")
