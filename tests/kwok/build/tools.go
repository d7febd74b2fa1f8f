//go:build tools

// The kwok controller the scale tests run (scripts/kwok.sh builds it): importing its main package
// here keeps it, and everything it needs, in go.mod and go.sum.
package tools

import (
	_ "sigs.k8s.io/kwok/cmd/kwok"
)
