"""The series catalogue: docs/metrics.md shows it verbatim, and every name is listed once."""
from __future__ import annotations

import re
from pathlib import Path

from scalearena.contracts import series

DOC = Path(__file__).resolve().parents[3] / "docs" / "metrics.md"


def test_docs_table_is_the_catalogue() -> None:
    text = DOC.read_text(encoding="utf-8")
    block = re.search(r"<!-- series-catalogue:begin -->\n(.*)<!-- series-catalogue:end -->", text, re.S)
    assert block is not None, "docs/metrics.md lost its series-catalogue markers"
    assert block.group(1) == series.catalogue_markdown(), "regenerate with series.catalogue_markdown()"


def test_every_name_constant_is_catalogued_once_with_upstream_label_names() -> None:
    names = [s.name for s in series.CATALOGUE]
    assert len(names) == len(set(names))
    constants = {v for k, v in vars(series).items() if k.isupper() and isinstance(v, str) and not k.startswith("_")}
    assert constants - {series.NAMESPACE, series.EPP_PRODUCER} == set(names)  # two label values, not series
    # the llm-d recipes select on these labels (SPEC section 4)
    assert set(series.BY_NAME[series.EPP_INFLIGHT_TOKENS].labels) >= {"endpoint_name", "producer_name", "namespace"}
    assert set(series.BY_NAME[series.KSM_REPLICAS_UNAVAILABLE].labels) == {"namespace", "deployment"}
    assert series.BY_NAME[series.REQUEST_SUCCESS].type == "counter"


def test_histograms_carry_their_upstream_buckets_and_only_histograms_do() -> None:
    for s in series.CATALOGUE:
        if s.type != "histogram" or s.condition:
            assert s.type == "histogram" or not s.buckets, s.name
            continue
        assert s.buckets and list(s.buckets) == sorted(set(s.buckets)), s.name  # strictly increasing
    by = series.BY_NAME
    # vLLM's TTFT starts at 1 ms and ends at 2560 s (22 bounds); the llm-d EPP's at 5 ms and 120 s (24)
    assert (by[series.TTFT_HIST].buckets[0], by[series.TTFT_HIST].buckets[-1], len(by[series.TTFT_HIST].buckets)) \
        == (0.001, 2560.0, 22)
    assert (by[series.EPP_TTFT_HIST].buckets[0], by[series.EPP_TTFT_HIST].buckets[-1],
            len(by[series.EPP_TTFT_HIST].buckets)) == (0.005, 120.0, 24)
    assert len(by[series.EPP_TPOT_HIST].buckets) == 13


def test_every_series_has_one_exporter_and_the_kube_state_values_follow_upstream() -> None:
    exporters = {s.exporter for s in series.CATALOGUE}
    assert exporters == {"engine", "epp", "gateway", "kube-state-metrics"}
    assert sum(len(series.of_exporter(e)) for e in exporters) == len(series.CATALOGUE)
    # 3 desired, 4 not terminating (one still starting), 2 ready: unavailable = 3 - 2 = 1
    assert dict(series.deployment_values(3, 4, 2)) == {
        series.KSM_SPEC_REPLICAS: 3.0, series.KSM_REPLICAS: 4.0, series.KSM_REPLICAS_READY: 2.0,
        series.KSM_REPLICAS_UNAVAILABLE: 1.0}
    assert dict(series.deployment_values(1, 3, 3))[series.KSM_REPLICAS_UNAVAILABLE] == 0.0  # floored at 0
    assert series.epp_labels("m") == {"namespace": "scalearena", "service": "m-epp", "model_name": "m",
                                      "inference_pool": "m"}
