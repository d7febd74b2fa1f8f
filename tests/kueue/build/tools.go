//go:build tools

// The command this module builds (scripts/kueue.sh): importing Kueue's manager main package here
// keeps it, and everything it needs, in go.mod and go.sum.
package tools

import (
	_ "sigs.k8s.io/kueue/cmd/kueue"
)
