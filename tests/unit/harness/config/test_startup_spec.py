"""The start-up schema (harness/config/startup_spec.py): durations, derived startup_s, and the field path of
every inconsistency."""
from __future__ import annotations

import copy
import math
from typing import Any

import pytest

from scalearena.contracts.errors import UserError
from scalearena.harness.config.scenario import scenario_from_data
from scalearena.harness.config.startup_spec import (
    EmpiricalSeconds,
    LognormalSeconds,
    UniformSeconds,
    mean_s,
    phase_rng,
    sample_s,
)
from scalearena.harness.sim.startup_phases import total_cold_start_s

BASE: dict[str, Any] = {
    "name": "t", "duration_s": 60,
    "cluster": {"variants": [{"name": "va", "model": "m", "gpu": "H100-SXM",
                              "engine": {"kv_cache_blocks": 1024, "latency": {"kind": "constant"}}}]},
    "workload": {"arrivals": {"kind": "poisson", "rate_rps": 1}, "input_tokens": {"kind": "fixed", "value": 10},
                 "output_tokens": {"kind": "fixed", "value": 10}},
}


def load(variant: dict[str, Any] | None = None, cluster: dict[str, Any] | None = None) -> Any:
    data = copy.deepcopy(BASE)
    data["cluster"]["variants"][0].update(variant or {})
    data["cluster"].update(cluster or {})
    return scenario_from_data(data, "s.yaml")


def error(variant: dict[str, Any] | None = None, cluster: dict[str, Any] | None = None) -> str:
    with pytest.raises(UserError) as e:
        load(variant, cluster)
    return str(e.value)


def test_means_and_draws() -> None:
    assert mean_s(7) == 7.0 and sample_s(7, phase_rng(0, "x")) == 7.0
    assert mean_s(UniformSeconds(kind="uniform", min_s=10, max_s=30)) == 20.0
    assert mean_s(EmpiricalSeconds(kind="empirical", values_s=[10, 20, 60])) == 30.0
    ln = LognormalSeconds(kind="lognormal", median_s=60, p95_s=120)
    sigma = math.log(2) / 1.6448536269514722  # p95 / median = exp(1.645 sigma)
    assert ln.sigma == pytest.approx(sigma)
    assert mean_s(ln) == pytest.approx(60 * math.exp(sigma ** 2 / 2))
    rng = phase_rng(1, "pod", "warmup")
    draws = sorted(sample_s(ln, rng) for _ in range(20_000))
    assert draws[10_000] == pytest.approx(60, rel=0.03) and draws[19_000] == pytest.approx(120, rel=0.03)


def test_phase_generators_depend_on_seed_and_pod_only() -> None:
    a = [phase_rng(5, "va-1", "warmup").random() for _ in range(2)]
    assert a[0] == a[1]  # a fresh generator per (seed, pod, phase): nothing else shifts it
    assert phase_rng(5, "va-2", "warmup").random() != a[0]
    assert phase_rng(6, "va-1", "warmup").random() != a[0]


def test_startup_s_is_derived_from_the_phases() -> None:
    # defaults: scheduling 1 s + 10.8 GB / 96 MB/s = 112.5 s + 16 GB / 0.5 GB/s = 32 s + warm-up 60 s
    sc = load({"cold_start": {"weight_load": {"model_gb": 16}}})
    v = sc.cluster.variants[0]
    assert v.startup_s == pytest.approx(1 + 112.5 + 32 + 60)
    assert total_cold_start_s(v, 0, "va-0") == pytest.approx(205.5)  # the local backend's readiness delay
    # the resolved scenario (startup_s included) validates again unchanged
    again = scenario_from_data(sc.model_dump(mode="json"), "resolved")
    assert again.cluster.variants[0] == v
    assert "contradicts cold_start" in error({"startup_s": 60, "cold_start": {"weight_load": {"model_gb": 16}}})


def test_weights_come_from_the_model_shape() -> None:
    # roofline llama3-8b: the catalog shape's weights in bf16 (~16 GB) at 0.5 GB/s
    sc = load({"cold_start": {}, "engine": {"latency": {"kind": "roofline", "model_shape": "llama3-8b"}}})
    v = sc.cluster.variants[0]
    from scalearena.harness.sim.engine.catalog import model_shape

    load_s = model_shape("llama3-8b").weight_bytes / 0.5e9
    assert 30 < load_s < 34
    assert v.startup_s == pytest.approx(1 + 112.5 + load_s + 60)


@pytest.mark.parametrize(("variant", "cluster", "path", "words"), [
    ({"cold_start": {}}, None, "cluster.variants.0.cold_start.weight_load.model_gb", "needs model_gb"),
    ({"sleep_mode": {}}, None, "cluster.variants.0.sleep_mode.wake_s", "needs wake_s"),
    ({"gpus_per_replica": 4}, {"node_pools": [{"name": "p", "gpu": "H100-SXM", "gpus_per_node": 2}]},
     "cluster.variants.0.gpus_per_replica", "do not fit on one node"),
    (None, {"node_pools": [{"name": "p", "gpu": "H100-SXM"}], "gpu_capacity": {"H100-SXM": 8}},
     "cluster.gpu_capacity.H100-SXM", "has a node pool"),
    (None, {"node_pools": [{"name": "p", "gpu": "A100-80GB"}]}, "cluster.node_pools.0.gpu", "no variant runs on"),
    (None, {"node_pools": [{"name": "p", "gpu": "H100-SXM"}, {"name": "q", "gpu": "H100-SXM"}]},
     "cluster.node_pools.1.gpu", "one pool per GPU type"),
    (None, {"node_pools": [{"name": "p", "gpu": "H100-SXM", "min_nodes": 3, "max_nodes": 2}]},
     "cluster.node_pools.0", "min_nodes 3 exceeds max_nodes 2"),
    ({"cold_start": {"weight_load": {"seconds": 5}, "warmup_s": {"kind": "uniform", "min_s": 9, "max_s": 3}}},
     None, "cluster.variants.0.cold_start.warmup_s", "max_s 3 is below min_s 9"),  # no union tag (uniform)
])
def test_inconsistent_start_up_settings_name_their_field(variant: Any, cluster: Any, path: str, words: str) -> None:
    msg = error(variant, cluster)
    assert msg.startswith(f"s.yaml: {path}: ") and words in msg and "\n" not in msg


def test_local_and_kube_refuse_what_only_the_simulator_models(tmp_path: Any) -> None:
    from scalearena.harness.config.startup_spec import refuse_sim_only
    from scalearena.harness.local.backend import LocalRun

    sc = load({"sleep_mode": {"wake_s": 2}, "warm_buffer": 1})
    with pytest.raises(UserError) as e:
        refuse_sim_only(sc, "kind")
    assert str(e.value).startswith("--cluster kind: cluster.variants[0].sleep_mode, cluster.variants[0].warm_buffer:")
    with pytest.raises(UserError, match="only --cluster sim models"):
        LocalRun(sc, sc.autoscaler_configs()[0], None, None, None)  # type: ignore[arg-type]  # refused first
    refuse_sim_only(load({"cold_start": {"weight_load": {"model_gb": 1}}}), "local")  # phases run everywhere
