//go:build tools

// Package tools keeps KEDA's operator and metrics API server in this module's build list, so that
// `go mod tidy` records every dependency they need in go.sum.
package tools

import (
	_ "github.com/kedacore/keda/v2/cmd/adapter"
	_ "github.com/kedacore/keda/v2/cmd/operator"
)
