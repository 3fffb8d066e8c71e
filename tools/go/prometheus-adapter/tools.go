//go:build tools

// Package tools keeps prometheus-adapter's command in this module's build list, so that
// `go mod tidy` records every dependency it needs in go.sum.
package tools

import (
	_ "sigs.k8s.io/prometheus-adapter/cmd/adapter"
)
