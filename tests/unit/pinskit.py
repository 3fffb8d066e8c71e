"""`make pins` (scripts/refresh-pins.sh) run offline: on a copy of manifests/ with a fake `crane` whose
digest of a reference is sha256(reference), so each expected pin can be worked out in a test."""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def fake_digest(ref: str) -> str:
    return "sha256:" + hashlib.sha256(ref.encode()).hexdigest()  # what the fake crane answers


def run_pins(tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """refresh-pins.sh over ``tmp_path/manifests`` (a copy of the project's, made by the first call; a
    second call runs the script again over what the first one pinned), the fake crane first on PATH."""
    fake = tmp_path / "bin"
    if not fake.exists():
        shutil.copytree(ROOT / "manifests", tmp_path / "manifests")
        (tmp_path / "scripts").mkdir()
        shutil.copy(ROOT / "scripts/refresh-pins.sh", tmp_path / "scripts/refresh-pins.sh")
        fake.mkdir()
        (fake / "crane").write_text(
            '#!/usr/bin/env bash\n[ "$1" = digest ] && echo "sha256:$(printf %s "$2" | sha256sum | cut -c1-64)"\n')
        (fake / "crane").chmod(0o755)
    return subprocess.run(["bash", str(tmp_path / "scripts/refresh-pins.sh")], capture_output=True, text=True,
                          env={**os.environ, "PATH": f"{fake}:{os.environ['PATH']}"}, timeout=120)
