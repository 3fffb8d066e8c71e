"""static-peak / static-mean (harness/sizing/static.py): the fewest replicas meeting the SLO at the
workload's peak or mean rate, found by simulation before the run."""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import yaml

from scalearena.harness.config.scenario import scenario_from_data
from scalearena.harness.sizing.static import (
    PEAK_WINDOW_S,
    fewest,
    probe_length,
    probe_requests,
    read_load,
    simulate,
    size_model,
    size_static,
)
from scalearena.workloads.base import RequestSpec

ROOT = Path(__file__).resolve().parents[4]


def req(i: int, t: float, model: str = "m") -> RequestSpec:
    return RequestSpec(i, model, t, 100, 10)


def test_peak_is_the_busiest_minute_and_mean_is_arrivals_over_the_duration() -> None:
    # 1 req/s for 120 s, then 5 req/s for 30 s (t = 120.0, 120.2, ..., 149.8: 150 requests)
    times = [float(t) for t in range(120)] + [120 + 0.2 * k for k in range(150)]
    load = read_load([req(i, t) for i, t in enumerate(times)], seed=1)["m"]
    assert PEAK_WINDOW_S == 60.0 and load.count == 270
    # busiest 60 s: (89.8, 149.8] holds 30 one-per-second arrivals (90..119) and the 150 of the burst = 180
    assert load.peak == 180 and load.rate("peak", 150.0) == 3.0  # 180 / 60
    assert load.rate("mean", 150.0) == 1.8  # 270 / 150
    assert load.sample is not None and len(load.sample) == 270  # under the reservoir's 4000: all of them


def test_the_probe_is_poisson_at_the_rate_from_the_sample() -> None:
    sample = [RequestSpec(0, "m", 5.0, 700, 30, prefix_group=3, prefix_tokens=200)]
    reqs = probe_requests(sample, rate=4.0, probe_s=300.0, seed=1)
    # 4 req/s x 300 s = 1200 expected; Poisson sd sqrt(1200) = 35: within 4 sd
    assert abs(len(reqs) - 1200) < 140
    assert [r.request_id for r in reqs] == list(range(len(reqs)))
    assert all(0 < a.arrival_s < b.arrival_s < 300 for a, b in zip(reqs, reqs[1:], strict=False))
    assert {(r.input_tokens, r.output_tokens, r.prefix_group) for r in reqs} == {(700, 30, 3)}
    assert probe_length(0.5) == 2000.0 and probe_length(10.0) == 300.0  # 1000 requests, at least 300 s


def test_fewest_bisects_a_monotone_test() -> None:
    calls: list[int] = []

    def meets(n: int) -> bool:
        calls.append(n)
        return n >= 7

    assert fewest(meets, 20) == 7
    assert len(calls) <= 1 + 5  # the maximum, then ceil(log2 20) = 5 halvings
    assert fewest(lambda n: False, 20) is None


def variant(name: str, cost: float, max_replicas: int, role: str = "both", gpus: int = 1) -> SimpleNamespace:
    return SimpleNamespace(name=name, cost=cost, max_replicas=max_replicas, role=role, gpus_per_replica=gpus)


def test_the_cheapest_variant_wins_and_fewer_gpus_break_a_tie() -> None:
    # demand 6 units; a serves 1 per replica (needs 6, cost 6 x 10 = 60), b 3 (needs 2, cost 2 x 30 = 60):
    # equal cost, b takes 2 GPUs against a's 6
    cap = {"a": 1, "b": 3}
    vs = [variant("a", 10.0, 8), variant("b", 30.0, 4)]
    s = size_model(vs, lambda c: sum(n * cap[k] for k, n in c.items()) >= 6)
    assert s.counts == {"b": 2} and s.cost == 60.0 and s.met
    # b dearer (35): a's 60 < b's 70
    vs[1] = variant("b", 35.0, 4)
    assert size_model(vs, lambda c: sum(n * cap[k] for k, n in c.items()) >= 6).counts == {"a": 6}


def test_pd_takes_the_cheapest_pair_and_nothing_met_is_the_maximum() -> None:
    # met with p >= 2 and d >= 3 (or p >= 1 and d >= 6): pairs (1, 6) cost 10 + 60 = 70, (2, 3) 20 + 30 = 50
    vs = [variant("p", 10.0, 4, "prefill"), variant("d", 10.0, 8, "decode")]
    s = size_model(vs, lambda c: (c["p"] >= 2 and c["d"] >= 3) or (c["p"] >= 1 and c["d"] >= 6))
    assert s.counts == {"p": 2, "d": 3} and s.cost == 50.0
    none = size_model(vs, lambda c: False)
    assert none.counts == {"p": 4, "d": 8} and not none.met


def _staircase(**update: object):
    data = yaml.safe_load((ROOT / "workloads/scenarios/exp1-staircase.yaml").read_text())
    data.update(update)
    return scenario_from_data(data, "exp1")


def test_static_peak_is_the_fewest_that_meets_the_target_at_the_peak(tmp_path: Path) -> None:
    sc = _staircase(duration_s=240, drain_s=60, autoscalers=[{"kind": "static-peak"}])
    cfg, derived = size_static(sc, sc.autoscaler("static-peak"))
    (name,) = [v.name for v in sc.cluster.variants]
    n = cfg.per_variant[name]
    assert n >= 2 and f"replicas[{name}]" in derived and derived[f"replicas[{name}]"].startswith(f"{n}: fewest")
    # the definition, checked on the same probe: N meets 95 %, N - 1 does not
    from scalearena.workloads.generate import iter_requests

    m = read_load(iter_requests(sc), sc.seed)[sc.cluster.variants[0].model]
    rate = m.rate("peak", sc.duration_s)
    assert m.sample is not None
    reqs = probe_requests(m.sample, rate, probe_length(rate), sc.seed)
    assert simulate(sc, {name: n}, reqs, probe_length(rate)) >= 0.95 > simulate(sc, {name: n - 1}, reqs,
                                                                                probe_length(rate))


def test_a_static_peak_run_records_how_its_count_was_found(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from scalearena.harness.cli.main import main

    path = tmp_path / "sc.yaml"
    data = yaml.safe_load((ROOT / "workloads/scenarios/exp1-staircase.yaml").read_text())
    data.update(duration_s=240, drain_s=60)
    path.write_text(yaml.safe_dump(data))
    res = CliRunner().invoke(main, ["run", str(path), "--autoscaler", "static-peak", "--out", str(tmp_path / "o")])
    assert res.exit_code == 0, res.output
    (summary,) = (tmp_path / "o").glob("*/static-peak/summary.json")
    s = json.loads(summary.read_text())
    (ev,) = [e for e in s["events"] if e["kind"] == "derived_setting"]
    n = int(ev["value"].split(":")[0])
    assert ev["setting"] == "replicas[va-qwen]" and s["replicas"]["max"] == n
    decisions = [json.loads(x) for x in (summary.parent / "decisions.jsonl").read_text().splitlines()]
    assert {d["desired_replicas"] for d in decisions} == {n}
