#!/usr/bin/env bash
# Builds the Prometheus the metrics e2e test runs: upstream's prometheus and promtool at the
# release pinned in tests/metrics/build/go.mod, from the Go module proxy, checked against the
# committed go.sum. Debian's prometheus package leaves Kubernetes service discovery out (its
# NEWS.Debian: "Kubernetes support has been completely removed"), and the test discovers the
# workers as a cluster's Prometheus does, with kubernetes_sd_configs against the real API
# server. Built with upstream's build tags remove_all_sd,enable_kubernetes_sd (the kubernetes,
# file and http discovery only) and without the web UI's assets (the HTTP API is all the test
# uses).
#
# The binaries go to a cache outside the clone keyed by the pin, go.sum's hash and the Go release:
#   ${TRAINBENCH_CACHE:-$HOME/.cache/trainbench}/prometheus/prometheus-vX.Y.Z-HASH/bin
# so a machine builds them once. Prints that bin directory on stdout (progress goes to stderr).
#   tests/metrics/prometheus.sh          build if absent, print the directory
#   tests/metrics/prometheus.sh --path   print the directory only (exit 1 when not built)
set -euo pipefail
mod="$(cd "$(dirname "$0")" && pwd)/build"
# shellcheck source=../../scripts/lib/go-build.sh
source "$mod/../../../scripts/lib/go-build.sh"
go_require "$mod" prometheus
pin=$(go_pin "$mod" github.com/prometheus/prometheus prometheus)
# Module v0.MINOR.PATCH is Prometheus 3.MINOR-300.PATCH (v0.316.0: 3.16.0).
minor=$(cut -d. -f2 <<<"$pin") patch=$(cut -d. -f3 <<<"$pin")
version="3.$((minor - 300)).$patch"
tags=remove_all_sd,enable_kubernetes_sd
ldflags="-s -w -X github.com/prometheus/common/version.Version=$version -X github.com/prometheus/common/version.Branch=module-$pin"
hash=$(go_key "$tags $ldflags" "$mod/go.mod" "$mod/go.sum" "$mod/tools.go")
dir="${TRAINBENCH_CACHE:-$HOME/.cache/trainbench}/prometheus/prometheus-$pin-$hash"
go_after_build() { "$1/prometheus" --version 2>&1 | head -1 >&2; }
go_cached_build "prometheus $version" "$dir" "$mod" "${1:-}" prometheus promtool -- -tags "$tags" -ldflags "$ldflags" \
  github.com/prometheus/prometheus/cmd/prometheus github.com/prometheus/prometheus/cmd/promtool
