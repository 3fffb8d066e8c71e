//go:build tools

// Package tools keeps Prometheus' server command in this module's build list. Debian's prometheus package is
// built without Kubernetes service discovery, which the stack's scrape config uses (kubernetes_sd_configs), so
// CLUSTER=kwok builds the release kind runs (quay.io/prometheus/prometheus:v2.53.4; Go module v0.53.4). Built
// without the `builtinassets` tag: the API and /metrics are served, the web UI is not.
package tools

import _ "github.com/prometheus/prometheus/cmd/prometheus"
