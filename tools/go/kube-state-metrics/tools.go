//go:build tools

// Package tools keeps kube-state-metrics' command in this module's build list, so that
// `go mod tidy` records every dependency it needs in go.sum.
package tools

import (
	_ "k8s.io/kube-state-metrics/v2"
)
