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
export PATH="/usr/local/go/bin:$PATH"
need_go=$(awk '$1=="go"{print $2}' "$mod/go.mod")
have_go=$(go env GOVERSION 2>/dev/null | sed 's/^go//') || true
if [ -z "$have_go" ] || [ "$(printf '%s\n%s\n' "$need_go" "$have_go" | sort -V | head -1)" != "$need_go" ]; then
  echo "prometheus: Go >= $need_go is needed (found: ${have_go:-none}); the polyglot machines have it in /usr/local/go" >&2
  exit 1
fi
pin=$(awk '$1=="require" && $2=="github.com/prometheus/prometheus"{print $3}' "$mod/go.mod")
[ -n "$pin" ] || { echo "prometheus: cannot read the pinned version from $mod/go.mod" >&2; exit 1; }
# Module v0.MINOR.PATCH is Prometheus 3.MINOR-300.PATCH (v0.316.0: 3.16.0).
minor=$(cut -d. -f2 <<<"$pin") patch=$(cut -d. -f3 <<<"$pin")
version="3.$((minor - 300)).$patch"
tags=remove_all_sd,enable_kubernetes_sd
ldflags="-s -w -X github.com/prometheus/common/version.Version=$version -X github.com/prometheus/common/version.Branch=module-$pin"
hash=$( (cat "$mod/go.mod" "$mod/go.sum" "$mod/tools.go"; echo "$tags $ldflags"; echo "$have_go") | sha256sum | cut -c1-12)
root="${TRAINBENCH_CACHE:-$HOME/.cache/trainbench}/prometheus"
dir="$root/prometheus-$pin-$hash"

built() { [ -x "$dir/bin/prometheus" ] && [ -x "$dir/bin/promtool" ]; }
if [ "${1:-}" = "--path" ]; then built && { echo "$dir/bin"; exit 0; }; exit 1; fi
if built; then echo "$dir/bin"; exit 0; fi

mkdir -p "$root"
exec 9>"$root/.lock"
flock 9  # one build at a time per machine; a second caller waits, then finds it built
if built; then echo "$dir/bin"; exit 0; fi

tmp=$(mktemp -d "$root/.build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
start=$(date +%s)
echo "prometheus: building Prometheus $version ($pin) into $dir (cold: several minutes on 2 cores)" >&2
cd "$mod"
# -mod=readonly: go.sum must already hold every module (a changed pin is committed with its go.sum).
CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false" go build -trimpath -tags "$tags" -ldflags "$ldflags" -o "$tmp/bin/" \
  github.com/prometheus/prometheus/cmd/prometheus github.com/prometheus/prometheus/cmd/promtool
"$tmp/bin/prometheus" --version 2>&1 | head -1 >&2
rm -rf "$dir"; mv "$tmp" "$dir"
trap - EXIT
echo "prometheus: built in $(( $(date +%s) - start )) s" >&2
echo "$dir/bin"
