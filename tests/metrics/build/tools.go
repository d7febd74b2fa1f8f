//go:build tools

// The commands this module builds (tests/metrics/prometheus.sh): prometheus and promtool of one
// pinned release (v0.316.0 is Prometheus 3.16.0).
package tools

import (
	_ "github.com/prometheus/prometheus/cmd/prometheus"
	_ "github.com/prometheus/prometheus/cmd/promtool"
)
