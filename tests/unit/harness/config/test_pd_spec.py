"""P/D settings in the scenario schema: roles, the KV transfer, the decider; bad input named by field."""
from __future__ import annotations

import copy
from typing import Any

import pytest

from scalearena.contracts.errors import UserError
from scalearena.harness.config.scenario import scenario_from_data
from tests.unit.harness.sim.test_pd_sim import BASE


def pd(**variant_edits: dict[str, Any]) -> dict[str, Any]:
    d = copy.deepcopy(BASE)
    for i, edits in variant_edits.items():
        d["cluster"]["variants"][int(i[1:])].update(edits)
    return d


def test_defaults_aggregated_role_and_kv_link() -> None:
    d = copy.deepcopy(BASE)
    del d["cluster"]["kv_transfer"]
    for v in d["cluster"]["variants"]:
        del v["role"]
    sc = scenario_from_data(d, "pd.yaml")
    assert [v.role for v in sc.cluster.variants] == ["both", "both"]
    kv = sc.cluster.kv_transfer
    assert (kv.bandwidth_gbps, kv.latency_ms, kv.kv_bytes_per_token, kv.abort_timeout_s) == (400.0, 1.0, None, 480.0)
    assert sc.router.disaggregation.non_cached_tokens == 0


def test_prefill_without_decode_and_decode_without_prefill_are_refused() -> None:
    with pytest.raises(UserError, match=r"cluster.variants.0.role: .*prefill variants but none of role decode"):
        scenario_from_data(pd(v1={"role": "prefill"}), "pd.yaml")
    with pytest.raises(UserError, match=r"cluster.variants.1.role: .*decode variants but none of role prefill"):
        scenario_from_data(pd(v0={"role": "both"}), "pd.yaml")
    scenario_from_data(pd(v1={"role": "both"}), "pd.yaml")  # prefill + both: llm-d's decode-filter takes both


def test_prefill_and_decode_must_share_the_kv_layout() -> None:
    # llama3-8b: 2 x 32 layers x 8 KV heads x 128 x 2 B = 131,072 B per token; qwen3-8b: 2 x 36 x 8 x 128 x 2
    # = 147,456 B: NIXL cannot hand one to the other
    d = pd(v0={"engine": {"latency": {"kind": "roofline", "model_shape": "llama3-8b"}}},
           v1={"engine": {"latency": {"kind": "roofline", "model_shape": "qwen3-8b"}}})
    with pytest.raises(UserError, match=r"cluster.variants.1.engine.latency.model_shape: .*131072, 147456"):
        scenario_from_data(d, "pd.yaml")


def test_constant_latency_needs_the_kv_bytes_per_token() -> None:
    d = copy.deepcopy(BASE)
    del d["cluster"]["kv_transfer"]["kv_bytes_per_token"]
    with pytest.raises(UserError, match=r"cluster.kv_transfer.kv_bytes_per_token: .*'m-prefill' uses the constant"):
        scenario_from_data(d, "pd.yaml")


def test_bad_values_are_named() -> None:
    d = copy.deepcopy(BASE)
    d["cluster"]["kv_transfer"]["bandwidth_gbps"] = 0
    with pytest.raises(UserError, match=r"cluster.kv_transfer.bandwidth_gbps"):
        scenario_from_data(d, "pd.yaml")
    d = pd(v0={"role": "prefil"})
    with pytest.raises(UserError, match=r"cluster.variants.0.role"):
        scenario_from_data(d, "pd.yaml")


def test_kubernetes_backends_refuse_roles_instead_of_serving_aggregated() -> None:
    from pathlib import Path

    from scalearena.harness.config.scenario import load_scenario
    from scalearena.harness.kube.backend import KubeBackend

    sc = load_scenario(Path(__file__).resolve().parents[4] / "workloads/scenarios/pd-disaggregated.yaml")
    with pytest.raises(UserError, match=r"cluster.variants\[0\].role: role 'prefill': prefill/decode disaggregation "
                                        r"is not rendered for Kubernetes"):
        KubeBackend("kind").plan(sc, sc.autoscaler("hpa"))


def test_role_blind_autoscalers_are_named_for_pd_models_only() -> None:
    from scalearena.harness.config.disagg_spec import role_blind

    d = copy.deepcopy(BASE)
    d["autoscalers"] = [{"kind": "wva"}, {"kind": "hpa"}, {"kind": "oracle", "name": "bound"}]
    warnings = role_blind(scenario_from_data(d, "pd.yaml"))
    assert [w.split("'")[1] for w in warnings] == ["wva", "bound"] and "prefill/decode roles" in warnings[0]
    for v in d["cluster"]["variants"]:
        v["role"] = "both"
    assert role_blind(scenario_from_data(d, "pd.yaml")) == []
