"""The series catalogue: docs/metrics.md shows it verbatim, and every name is listed once."""
from __future__ import annotations

import re
from pathlib import Path

from scalearena.contracts import series

DOC = Path(__file__).resolve().parents[2] / "docs" / "metrics.md"


def test_docs_table_is_the_catalogue() -> None:
    text = DOC.read_text(encoding="utf-8")
    block = re.search(r"<!-- series-catalogue:begin -->\n(.*)<!-- series-catalogue:end -->", text, re.S)
    assert block is not None, "docs/metrics.md lost its series-catalogue markers"
    assert block.group(1) == series.catalogue_markdown(), "regenerate with series.catalogue_markdown()"


def test_every_name_constant_is_catalogued_once_with_upstream_label_names() -> None:
    names = [s.name for s in series.CATALOGUE]
    assert len(names) == len(set(names))
    constants = {v for k, v in vars(series).items()
                 if k.isupper() and isinstance(v, str) and not k.startswith("_") and k != "NAMESPACE"}
    assert constants == set(names)
    # the llm-d recipes select on these labels (SPEC section 4)
    assert set(series.BY_NAME[series.EPP_INFLIGHT_TOKENS].labels) >= {"endpoint_name", "producer_name", "namespace"}
    assert set(series.BY_NAME[series.KSM_REPLICAS_UNAVAILABLE].labels) == {"namespace", "deployment"}
    assert series.BY_NAME[series.REQUEST_SUCCESS].type == "counter"
