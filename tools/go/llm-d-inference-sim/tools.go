//go:build tools

// Package tools keeps the simulator's command in this module's build list, so that
// `go mod tidy` records every dependency it needs in go.sum.
package tools

import (
	_ "github.com/llm-d/llm-d-inference-sim/cmd/llm-d-inference-sim"
)
