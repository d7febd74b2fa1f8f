#!/usr/bin/env bash
# Builds the real Kubernetes control plane the `controlplane` tests start: kube-apiserver,
# kube-controller-manager, kube-scheduler (k8s.io/kubernetes, pinned in tests/controlplane/build/go.mod),
# the kubectl of the same release (the machine's kubectl is 1.33 at most, beyond the supported
# skew of one minor version) and etcd (go.etcd.io/etcd/server/v3 at the version that release requires), from the Go module
# proxy, checked against the committed go.sum.
#
# The binaries go to a cache outside the clone keyed by the pinned versions and go.sum's hash:
#   ${TRAINBENCH_CACHE:-$HOME/.cache/trainbench}/controlplane/k8s-vX.Y.Z-etcd-vA.B.C-HASH/bin
# so a machine builds them once. Prints that bin directory on stdout (progress goes to stderr).
#   scripts/controlplane.sh          build if absent, print the directory
#   scripts/controlplane.sh --path   print the directory only (exit 1 when not built)
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
mod="$here/tests/controlplane/build"
# shellcheck source=lib/go-build.sh
source "$here/scripts/lib/go-build.sh"
go_require "$mod" controlplane

k8s=$(awk '$1=="k8s.io/kubernetes"{print $2} $1=="require" && $2=="k8s.io/kubernetes"{print $3}' "$mod/go.mod")
etcd=$(awk '$1=="go.etcd.io/etcd/server/v3"{print $2}' "$mod/go.mod")
[ -n "$k8s" ] && [ -n "$etcd" ] || { echo "controlplane: cannot read the pinned versions from $mod/go.mod" >&2; exit 1; }
minor=${k8s#v1.}; minor=${minor%%.*}
pkg=k8s.io/component-base/version
ldflags="-s -w -X $pkg.gitVersion=$k8s -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
# The key: what decides the binaries (the pins, the sources, the link flags, the Go release).
hash=$(go_key "$ldflags" "$mod/go.mod" "$mod/go.sum" "$mod/tools.go" "$mod/etcd/main.go")
root="${TRAINBENCH_CACHE:-$HOME/.cache/trainbench}/controlplane"
dir="$root/k8s-$k8s-etcd-$etcd-$hash"
go_after_build() {
  "$1/kube-apiserver" --version >&2
  "$1/etcd" --version | head -1 >&2
}
[ "${1:-}" = --path ] || [ -x "$dir/bin/kubectl" ] ||
  echo "controlplane: Kubernetes $k8s and etcd $etcd (cold: about 8 minutes on 2 cores)" >&2
go_cached_build controlplane "$dir" "$mod" "${1:-}" etcd kube-apiserver kube-controller-manager kube-scheduler kubectl -- \
  -ldflags "$ldflags" k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
  k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl ./etcd
# Builds of other pins are not needed any more (Go's own cache keeps a rebuild of them quick).
for old in "$root"/k8s-*; do [ "$old" = "$dir" ] || rm -rf "$old"; done
