#!/usr/bin/env bash
# Render a report.html to a PNG with headless Chromium, to check legibility at
# laptop width (1366 px) or to put a picture of a report in the README.
#
#   scripts/render_report.sh REPORT.html [OUT.png] [HEIGHT_PX]
#
# Without HEIGHT_PX the whole page is captured: a first headless pass measures
# the page's height (a copy of it with a one-line script that writes
# scrollHeight into the DOM, read back with --dump-dom), the second takes the
# screenshot at that height. WIDTH (env, default 1366) sets the viewport.
# Needs the Debian package `chromium` (installed with apt-get when missing and
# running as root). Networking is disabled: the report must be self-contained.
set -euo pipefail

if [[ $# -lt 1 || "$1" == "-h" || "$1" == "--help" ]]; then
  echo "usage: $0 REPORT.html [OUT.png] [HEIGHT_PX]" >&2
  exit 2
fi
report="$1"
out="${2:-${report%.html}.png}"
height="${3:-}"
width="${WIDTH:-1366}"

if [[ ! -f "$report" ]]; then
  echo "$report: no such file" >&2
  exit 2
fi

browser="$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)"
if [[ -z "$browser" ]]; then
  if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null; then
    apt-get update -qq && apt-get install -y -qq chromium >/dev/null
    browser="$(command -v chromium)"
  else
    echo "chromium not found: install it (Debian: sudo apt-get install -y chromium)" >&2
    exit 2
  fi
fi

profile="$(mktemp -d)"
trap 'rm -rf "$profile"' EXIT
abs="$(cd "$(dirname "$report")" && pwd)/$(basename "$report")"
out_abs="$(cd "$(dirname "$out")" && pwd)/$(basename "$out")"

echo "rendering $report at ${width} px with headless Chromium (a few seconds)..." >&2
flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking
       --disable-component-update --disable-sync --hide-scrollbars --user-data-dir="$profile")
if [[ -z "$height" ]]; then
  probe="$profile/probe.html"
  { cat "$abs"; echo '<script>document.body.setAttribute("data-page-height", String(document.documentElement.scrollHeight));</script>'; } > "$probe"
  height="$("$browser" "${flags[@]}" --window-size="${width},800" --dump-dom "file://$probe" 2>/dev/null \
            | grep -o 'data-page-height="[0-9]*"' | head -1 | grep -o '[0-9]*' || true)"
  height="${height:-4000}"
fi

"$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --hide-scrollbars --user-data-dir="$profile" \
  --window-size="${width},${height}" --screenshot="$out_abs" "file://$abs" >/dev/null 2>&1
echo "$out_abs"
