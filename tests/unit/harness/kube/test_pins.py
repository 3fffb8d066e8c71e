"""`make pins` (scripts/refresh-pins.sh) pins every third-party image, and a pinned tree still renders.

The script runs on a copy of manifests/ with a fake `crane` whose digest of a reference is
sha256(reference), so each expected pin is worked out here without a registry. The offline
renderer must then read `REPO:TAG@sha256:...` as kustomize does (its imagetag updater: a new
tag or digest replaces both the old tag and digest), or the gpu-pool overlay would silently
stop swapping the simulator for vLLM once the base image carries a digest.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from scalearena.harness.kube.render import _set_image, render
from tests.unit.pinskit import fake_digest, run_pins

ROOT = Path(__file__).resolve().parents[4]


@pytest.mark.parametrize(("source", "override", "expected"), [
    # newName only: tag and digest kept
    ("sim:v1@sha256:aaa", {"newName": "vllm"}, "vllm:v1@sha256:aaa"),
    # a new tag drops the old digest (it named the old tag's image)
    ("sim:v1@sha256:aaa", {"newName": "vllm", "newTag": "v2"}, "vllm:v2"),
    # a digest pinned inside newTag (what `make pins` writes in an overlay) is kept whole
    ("sim:v1@sha256:aaa", {"newName": "vllm", "newTag": "v2@sha256:bbb"}, "vllm:v2@sha256:bbb"),
    # digest only: the tag goes; both: tag@digest
    ("sim:v1", {"digest": "sha256:ccc"}, "sim@sha256:ccc"),
    ("sim:v1", {"newTag": "v2", "digest": "sha256:ccc"}, "sim:v2@sha256:ccc"),
    # a registry port is not a tag
    ("localhost:5000/sim", {"newTag": "v3"}, "localhost:5000/sim:v3"),
])
def test_image_overrides_render_as_kustomize(source: str, override: dict[str, str], expected: str) -> None:
    name = "localhost:5000/sim" if source.startswith("localhost") else "sim"
    objs = [{"kind": "Deployment", "spec": {"template": {"spec": {"containers": [{"image": source}]}}}}]
    _set_image(objs, {"name": name, **override})
    assert objs[0]["spec"]["template"]["spec"]["containers"][0]["image"] == expected


def test_make_pins_pins_every_third_party_image_and_the_overlays_still_render(tmp_path: Path) -> None:
    done = run_pins(tmp_path)
    assert done.returncode == 0, done.stderr
    # every `image:` with a registry host is pinned; only our own scalearena/* images and the kind
    # node image (its digest from kind's release notes, kept by hand) are not rewritten
    images = set()
    for f in (tmp_path / "manifests").rglob("*.yaml"):
        if f.parent.name == "kwok":  # KWOK Stage templates (manifests/kwok/stages.yaml), no image of their own
            continue
        images |= set(re.findall(r"^ *(?:- )?image: *(\S+)", f.read_text(), re.M))
    unpinned = {i for i in images if "@sha256:" not in i}
    assert unpinned == {"scalearena/serve-router:dev", "scalearena/wva-controller:dev"}
    sim = "ghcr.io/llm-d/llm-d-inference-sim:v0.10.2"
    vllm = "vllm/vllm-openai:v0.10.2"
    assert f"pinned {vllm}@{fake_digest(vllm)} (manifests/overlays/gpu-pool/kustomization.yaml)" in done.stdout

    def variant_images(overlay: str) -> set[str]:
        return {c["image"] for o in render(tmp_path / "manifests" / overlay) if o["kind"] == "Deployment"
                and o["metadata"]["labels"].get("scalearena.io/component") == "variant"
                for c in o["spec"]["template"]["spec"]["containers"]}

    assert variant_images("overlays/kind") == {f"{sim}@{fake_digest(sim)}"}
    assert variant_images("overlays/gpu-pool") == {f"{vllm}@{fake_digest(vllm)}"}
    # a second run re-resolves the pins in place instead of stacking digests
    again = run_pins(tmp_path)
    assert again.returncode == 0, again.stderr
    assert variant_images("overlays/gpu-pool") == {f"{vllm}@{fake_digest(vllm)}"}
