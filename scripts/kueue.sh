#!/usr/bin/env bash
# Builds the real Kueue the kueue tests start against the real control plane: its manager
# (sigs.k8s.io/kueue/cmd/kueue at the release pinned in tests/kueue/build/go.mod; v0.17.0 is the
# only one the Go module proxy serves), from the Go module proxy, checked against the committed
# go.sum, and copies the manifests the test fixture applies out of that same module: the CRDs
# (config/components/crd/bases), the webhook configurations (config/components/webhook/
# manifests.yaml) and the manager's RBAC (config/components/rbac, for reference: the fixture runs
# Kueue with the admin kubeconfig).
#
# Everything goes to a cache outside the clone keyed by the pin, go.sum's hash and the Go release:
#   ${TRAINBENCH_CACHE:-$HOME/.cache/trainbench}/kueue/kueue-vX.Y.Z-HASH/{bin/kueue,manifests/}
# so a machine builds it once. Prints that bin directory on stdout (progress goes to stderr); the
# manifests are in ../manifests beside it.
#   scripts/kueue.sh          build if absent, print the directory
#   scripts/kueue.sh --path   print the directory only (exit 1 when not built)
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
mod="$here/tests/kueue/build"
# shellcheck source=lib/go-build.sh
source "$here/scripts/lib/go-build.sh"
go_require "$mod" kueue
pin=$(go_pin "$mod" sigs.k8s.io/kueue kueue)
ldflags="-s -w -X sigs.k8s.io/kueue/pkg/version.GitVersion=$pin -X sigs.k8s.io/kueue/pkg/version.BuildDate=1970-01-01T00:00:00Z"
# Compiled without optimisation or inlining (-N -l), Go's debug build: Kueue's k8s.io v0.35
# packages are its alone (none is the control plane's v0.37, so the build cache has none of them
# from another build), and its compile is the suite's largest after the control plane's. The
# compile of k8s.io/client-go/kubernetes and its dependencies, cold: 74 core-seconds this way against
# 113 optimised with DWARF and 97 optimised without (docs/development.md, "Where the time goes").
# The same source and the same behaviour; a controller of a few test queues does not need the
# optimiser's speed.
gcflags="all=-N -l -dwarf=false"
hash=$(go_key "$ldflags $gcflags manifests:crd,webhook,rbac" "$mod/go.mod" "$mod/go.sum" "$mod/tools.go")
root="${TRAINBENCH_CACHE:-$HOME/.cache/trainbench}/kueue"
dir="$root/kueue-$pin-$hash"
# After the build, before the rename into place: the version check, and the manifests from the
# module's own source (the module cache holds it once the build has downloaded it).
go_after_build() {
  local src m
  src=$(cd "$mod" && GOFLAGS=-mod=readonly go list -m -f '{{.Dir}}' sigs.k8s.io/kueue)
  [ -d "$src/config/components/crd/bases" ] || { echo "kueue: no CRDs in $src" >&2; return 1; }
  m="$1/../manifests"
  mkdir -p "$m/crd" "$m/rbac"
  cp "$src"/config/components/crd/bases/*.yaml "$m/crd/"
  cp "$src/config/components/webhook/manifests.yaml" "$m/webhook.yaml"
  cp "$src"/config/components/rbac/*.yaml "$m/rbac/"
  chmod -R u+w "$m"
  # --help exits 0 after printing the flags: the binary runs.
  "$1/kueue" --help >/dev/null 2>&1 || { echo "kueue: $1/kueue does not run" >&2; return 1; }
}
[ "${1:-}" = --path ] || [ -x "$dir/bin/kueue" ] ||
  echo "kueue: Kueue $pin (cold: about 9 minutes on 2 busy cores, measured)" >&2
go_cached_build "kueue $pin" "$dir" "$mod" "${1:-}" kueue -- -gcflags "$gcflags" -ldflags "$ldflags" \
  sigs.k8s.io/kueue/cmd/kueue
# Builds of other pins are not needed any more (Go's own cache keeps a rebuild of them quick).
for old in "$root"/kueue-*; do [ "$old" = "$dir" ] || rm -rf "$old"; done
