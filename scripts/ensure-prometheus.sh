#!/usr/bin/env bash
# Make sure a `prometheus` binary exists for the CLUSTER=local backend.
#
# The local backend starts its own Prometheus process (own config, own port on
# 127.0.0.1, TSDB inside the run folder); it never touches a system service.
# This script only installs the Debian package when the binary is missing.
# Set PROMETHEUS_BIN to use a binary elsewhere (the harness honours it too).
set -euo pipefail

if [[ -n "${PROMETHEUS_BIN:-}" && -x "${PROMETHEUS_BIN}" ]]; then
  echo "prometheus: using PROMETHEUS_BIN=${PROMETHEUS_BIN}"
  exit 0
fi
if command -v prometheus >/dev/null 2>&1; then
  echo "prometheus: $(command -v prometheus) ($(prometheus --version 2>&1 | head -1))"
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "prometheus: not found and apt-get is not available;" \
       "install Prometheus >= 2.x and put it on PATH or set PROMETHEUS_BIN" >&2
  exit 1
fi
SUDO=""
if [[ "$(id -u)" != "0" ]]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "prometheus: not found; run as root: apt-get update && apt-get install -y prometheus" >&2
    exit 1
  fi
fi
echo "prometheus: installing the Debian package (apt-get install -y prometheus)"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q -o DPkg::Lock::Timeout=600
# --no-install-recommends keeps node-exporter and friends out; policy-rc.d-less
# containers may try to start the service: that failure is harmless, we run our own.
$SUDO apt-get install -y -q -o DPkg::Lock::Timeout=600 --no-install-recommends prometheus || {
  command -v prometheus >/dev/null 2>&1 || exit 1
}
# The package may start a system service on :9090; we never use it (own process, own port).
echo "prometheus: $(command -v prometheus) ($(prometheus --version 2>&1 | head -1))"
