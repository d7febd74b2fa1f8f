// The Prometheus the metrics e2e test runs: upstream's, with its Kubernetes service discovery
// (Debian's prometheus package leaves it out), built from the Go module proxy by
// tests/metrics/prometheus.sh with only the kubernetes, file and http discovery compiled in.
module trainbench.dev/prometheus

go 1.26.7

require github.com/prometheus/prometheus v0.316.0
