"""docs/reliability.md's limits table is the code's (scripts/limits_doc.py renders it from the constants)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def _module():
    spec = importlib.util.spec_from_file_location("limits_doc", ROOT / "scripts" / "limits_doc.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_docs_table_is_generated_from_the_constants():
    mod = _module()
    text = (ROOT / "docs" / "reliability.md").read_text(encoding="utf-8")
    assert mod.spliced(text) == text, "docs/reliability.md's limits differ from the code: scripts/limits_doc.py --write"


def test_a_changed_constant_changes_the_table(monkeypatch):
    """The table reads the constant itself: 1,000 replicas documented as 1 000; raised to 2,000 the row follows."""
    from scalearena.contracts import limits

    mod = _module()
    assert "| any `*replicas*` | at most 1 000 |" in mod.render()
    monkeypatch.setattr(limits, "MAX_REPLICAS", 2000)
    assert "| any `*replicas*` | at most 2 000 |" in mod.render()
