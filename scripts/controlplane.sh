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
export PATH="/usr/local/go/bin:$PATH"
need_go=$(awk '$1=="go"{print $2}' "$mod/go.mod")
have_go=$(go env GOVERSION 2>/dev/null | sed 's/^go//') || true
if [ -z "$have_go" ] || [ "$(printf '%s\n%s\n' "$need_go" "$have_go" | sort -V | head -1)" != "$need_go" ]; then
  echo "controlplane: Go >= $need_go is needed (found: ${have_go:-none}); the polyglot machines have it in /usr/local/go" >&2
  exit 1
fi

k8s=$(awk '$1=="k8s.io/kubernetes"{print $2} $1=="require" && $2=="k8s.io/kubernetes"{print $3}' "$mod/go.mod")
etcd=$(awk '$1=="go.etcd.io/etcd/server/v3"{print $2}' "$mod/go.mod")
[ -n "$k8s" ] && [ -n "$etcd" ] || { echo "controlplane: cannot read the pinned versions from $mod/go.mod" >&2; exit 1; }
minor=${k8s#v1.}; minor=${minor%%.*}
pkg=k8s.io/component-base/version
ldflags="-s -w -X $pkg.gitVersion=$k8s -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
# The key: what decides the binaries (the pins, the sources, the link flags, the Go release).
hash=$( (cat "$mod/go.mod" "$mod/go.sum" "$mod/tools.go" "$mod/etcd/main.go"; echo "$ldflags"; echo "$have_go") |
  sha256sum | cut -c1-12)
root="${TRAINBENCH_CACHE:-$HOME/.cache/trainbench}/controlplane"
dir="$root/k8s-$k8s-etcd-$etcd-$hash"
bins=(etcd kube-apiserver kube-controller-manager kube-scheduler kubectl)

built() { for b in "${bins[@]}"; do [ -x "$dir/bin/$b" ] || return 1; done; }
if [ "${1:-}" = "--path" ]; then built && { echo "$dir/bin"; exit 0; }; exit 1; fi
if built; then echo "$dir/bin"; exit 0; fi

mkdir -p "$root"
exec 9>"$root/.lock"
flock 9  # one build at a time per machine; a second caller waits, then finds it built
if built; then echo "$dir/bin"; exit 0; fi

tmp=$(mktemp -d "$root/.build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
start=$(date +%s)
echo "controlplane: building Kubernetes $k8s and etcd $etcd into $dir (cold: about 8 minutes on 2 cores)" >&2
cd "$mod"
# -mod=readonly: go.sum must already hold every module (a changed pin is committed with its go.sum).
# CGO_ENABLED=0 as upstream's release builds.
CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false" go build -trimpath -ldflags "$ldflags" -o "$tmp/bin/" \
  k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
  k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl ./etcd
"$tmp/bin/kube-apiserver" --version >&2
"$tmp/bin/etcd" --version | head -1 >&2
rm -rf "$dir"; mkdir -p "$(dirname "$dir")"; mv "$tmp" "$dir"
trap - EXIT
# Builds of other pins are not needed any more (Go's own cache keeps a rebuild of them quick).
for old in "$root"/k8s-*; do [ "$old" = "$dir" ] || rm -rf "$old"; done
echo "controlplane: built in $(( $(date +%s) - start )) s" >&2
echo "$dir/bin"
