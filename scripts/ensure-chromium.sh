#!/usr/bin/env bash
# Make sure headless Chromium is available for the report legibility tests and `make render`.
# Installs the Debian package `chromium` when it is missing and we are root with apt-get; otherwise
# says so and succeeds: the browser tests then skip, naming the reason.
set -euo pipefail
if command -v chromium >/dev/null || command -v chromium-browser >/dev/null || command -v google-chrome >/dev/null; then
  exit 0
fi
if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null; then
  echo "installing chromium (Debian package) for the report legibility tests..." >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
else
  echo "note: chromium not installed and cannot be (not root or no apt-get); report browser tests will skip" >&2
fi
