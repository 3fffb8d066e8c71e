"""The shipped P/D scenario end to end on the simulator (workloads/scenarios/pd-disaggregated.yaml).

Qwen3-32B, prefill pods on H100, decode pods on H200, prefill-heavy (8192 / 256) and decode-heavy
(256 / 2048) traffic with load steps. Checked here: every request accounted once; every served
request went prefill pod -> decode pod; on the same three GPUs P/D serves more than aggregated and
keeps the prefill-heavy requests' inter-token latency tail down (no prompt chunks in the decode
batches); under the HPA preset each pool scales on its own signals when its traffic steps up.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[2]
SCENARIO = REPO / "workloads" / "scenarios" / "pd-disaggregated.yaml"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("pd")
    suite = tmp / "suite.yaml"
    suite.write_text(json.dumps({"name": "pd-test", "runs": [
        {"scenario": str(SCENARIO), "autoscalers": ["static", "hpa"]},
        {"scenario": str(SCENARIO), "autoscalers": ["static"],
         "set": ["name=pd-aggregated", "cluster.variants.0.role=both", "cluster.variants.1.role=both"]},
    ]}))
    r = subprocess.run([sys.executable, "-m", "scalearena", "suite", str(suite), "--out", str(tmp / "out"),
                        "--jobs", "2"], capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    return tmp / "out"


def load(out: Path, run: str) -> tuple[dict, pd.DataFrame, pd.DataFrame]:
    d = out / run
    return (json.loads((d / "summary.json").read_text()), pd.read_parquet(d / "requests.parquet"),
            pd.read_parquet(d / "timeseries.parquet"))


@pytest.mark.parametrize("run", ["pd-disaggregated/static", "pd-disaggregated/hpa", "pd-aggregated/static"])
def test_every_request_accounted_once(out: Path, run: str) -> None:
    s, req, _ = load(out, run)
    assert req.request_id.is_unique and len(req) == s["requests_total"]
    assert s["requests_total"] == s["requests_ok"] + sum(s["failures"].values())


def test_every_served_request_went_from_a_prefill_pod_to_a_decode_pod(out: Path) -> None:
    for run in ("pd-disaggregated/static", "pd-disaggregated/hpa"):
        _, req, _ = load(out, run)
        ok = req[req.status == "ok"]
        assert len(ok) > 1000
        assert ok.prefill_pod.str.startswith("qwen-prefill-").all()  # non_cached_tokens 0: always P/D
        assert (ok.variant == "qwen-decode").all() and ok.pod.str.startswith("qwen-decode-").all()
    _, agg, _ = load(out, "pd-aggregated/static")
    assert agg.prefill_pod.isna().all()


def test_same_gpus_pd_serves_more_and_cuts_the_itl_tail_of_long_prompts(out: Path) -> None:
    pd_s, pd_r, _ = load(out, "pd-disaggregated/static")
    ag_s, ag_r, _ = load(out, "pd-aggregated/static")
    assert pd_s["gpu_hours"] == pytest.approx(ag_s["gpu_hours"], rel=0.05)  # 2 H100 + 1 H200 either way
    assert pd_s["requests_ok"] > ag_s["requests_ok"]
    assert pd_s["goodput_rps"] > ag_s["goodput_rps"]

    def itl_p99(r: pd.DataFrame) -> float:
        return float(r[(r.status == "ok") & (r.input_tokens == 8192)].itl_ms.quantile(0.99))

    # aggregated: decodes share steps with 8192-token prompt chunks; P/D: decode pods never prefill
    assert itl_p99(pd_r) < 0.75 * itl_p99(ag_r)


def test_each_pool_scales_on_its_own_signals(out: Path) -> None:
    _, _, ts = load(out, "pd-disaggregated/hpa")
    spec = ts.pivot_table(index="t_s", columns="variant", values="spec_replicas")
    # prefill-heavy steps 0.4 -> 1.0 req/s at 300 s: the prefill pool grows past its 2 within 120 s;
    # decode-heavy steps 0.8 -> 1.6 req/s at 450 s: the decode pool grows past 1 within 150 s
    assert spec.loc[:299, "qwen-prefill"].max() <= 2 < spec.loc[300:420, "qwen-prefill"].max()
    assert spec.loc[:449, "qwen-decode"].max() == 1 < spec.loc[450:600, "qwen-decode"].max()
