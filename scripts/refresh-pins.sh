#!/usr/bin/env bash
# Pin every third-party image in manifests/ by digest: `image: REPO:TAG` -> `image: REPO:TAG@sha256:...`
# (the tag stays for readers; the runtime pulls by digest). `make pins` runs it; re-run after changing a tag.
# Needs network access and `docker buildx imagetools` (Docker 23+) or `crane`; without them it stops with
# exit 1 and says so. The scalearena/* images are built locally and are not pinned; the kind node image
# (manifests/kind/cluster.yaml, no registry host) keeps the digest kind's release notes publish for it.
set -euo pipefail
cd "$(dirname "$0")/.."

resolve() {  # REPO:TAG -> sha256:... (the multi-platform index digest)
  if command -v crane >/dev/null 2>&1; then
    crane digest "$1"
  elif command -v docker >/dev/null 2>&1 && docker buildx version >/dev/null 2>&1; then
    docker buildx imagetools inspect "$1" --format '{{json .Manifest}}' | python3 -c 'import json,sys; print(json.load(sys.stdin)["digest"])'
  else
    echo "error: refresh-pins needs \`crane\` or \`docker buildx imagetools\` on PATH (and network access)" >&2
    exit 1
  fi
}

mapfile -t refs < <(grep -rhoE 'image: *[a-z0-9.-]+\.[a-z]+/[^ @"]+:[^ @"]+' manifests | sed -E 's/image: *//' | sort -u)
if [ "${#refs[@]}" -eq 0 ]; then
  echo "error: no third-party image references found under manifests/" >&2
  exit 1
fi
for ref in "${refs[@]}"; do
  if ! digest=$(resolve "$ref" 2>/tmp/refresh-pins.err); then
    echo "error: cannot resolve $ref: $(tail -n 2 /tmp/refresh-pins.err | tr '\n' ' ')" >&2
    exit 1
  fi
  case "$digest" in sha256:*) ;; *) echo "error: $ref resolved to '$digest', not a digest" >&2; exit 1 ;; esac
  grep -rlE "image: *${ref//./\\.}(@sha256:[0-9a-f]+)?\$" manifests | while read -r f; do
    sed -i -E "s#image: *${ref//./\\.}(@sha256:[0-9a-f]+)?\$#image: ${ref}@${digest}#" "$f"
  done
  echo "pinned $ref@$digest"
done
# kustomize `images:` overrides (manifests/overlays/gpu-pool swaps the simulator for vllm/vllm-openai):
# `newName: REPO` followed by `newTag: TAG[@sha256:...]` becomes `newTag: TAG@sha256:...`, which kustomize
# and harness/kube/render.py both append to the name as REPO:TAG@sha256:...
mapfile -t overrides < <(grep -rlE '^ *newTag:' manifests | sort | while read -r f; do
  awk -v f="$f" '/^ *- / { name = ""; new = "" }
                 /^ *(- )?name:/ { name = $NF }
                 /^ *(- )?newName:/ { new = $NF }
                 /^ *(- )?newTag:/ { tag = $NF; sub(/@sha256:.*/, "", tag)
                                     print f "\t" NR "\t" (new != "" ? new : name) ":" tag }' "$f"
done)
for row in "${overrides[@]}"; do
  IFS=$'\t' read -r f line ref <<<"$row"
  if ! digest=$(resolve "$ref" 2>/tmp/refresh-pins.err); then
    echo "error: cannot resolve $ref: $(tail -n 2 /tmp/refresh-pins.err | tr '\n' ' ')" >&2
    exit 1
  fi
  case "$digest" in sha256:*) ;; *) echo "error: $ref resolved to '$digest', not a digest" >&2; exit 1 ;; esac
  sed -i -E "${line}s#newTag: *[^ ]+#newTag: ${ref##*:}@${digest}#" "$f"
  echo "pinned $ref@$digest ($f)"
done
echo "checked $(date -u +%Y-%m-%d): update the pin table in docs/kubernetes.md"
