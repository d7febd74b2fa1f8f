// The Prometheus the metrics e2e test runs: upstream's, with its Kubernetes service discovery
// (Debian's prometheus package leaves it out), built from the Go module proxy by
// tests/metrics/prometheus.sh with only the kubernetes, file and http discovery compiled in. Its
// k8s.io modules are required at the control plane's versions (tests/controlplane/build/go.mod,
// v0.37.2; Prometheus v0.316.0 asks for v0.37.1), so that packages the Go build cache compiled for
// the control plane can serve this build too (issue 31).
module trainbench.dev/prometheus

go 1.26.7

require github.com/prometheus/prometheus v0.316.0

require (
	k8s.io/api v0.37.2 // indirect
	k8s.io/apimachinery v0.37.2 // indirect
	k8s.io/client-go v0.37.2 // indirect
)
