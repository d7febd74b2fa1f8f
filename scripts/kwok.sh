#!/usr/bin/env bash
# Builds the real kwok controller the scale tests run against the real control plane
# (sigs.k8s.io/kwok/cmd/kwok at the release pinned in tests/kwok/build/go.mod: fake nodes whose
# status, heartbeat and pods a controller plays from Stage manifests, so that hundreds of nodes
# with GPUs cost one process and no kubelet), from the Go module proxy, checked against the
# committed go.sum, and copies the stages tests/kwok/kwok.sh gives it out of that same module:
# kustomize/stage/node/fast (node-initialize: Ready, addresses, capacity kept),
# kustomize/stage/node/heartbeat (node-heartbeat: the Ready condition renewed every 20-45 s) and
# kustomize/stage/pod/fast (pod-ready: a bound pod Running and Ready with a pod IP; pod-complete:
# only pods owned by a batch Job, none of ours; pod-delete: a pod with a deletionTimestamp is
# deleted at once, as a kubelet does once its containers have stopped).
#
# Everything goes to a cache outside the clone keyed by the pin, go.sum's hash and the Go release:
#   ${TRAINBENCH_CACHE:-$HOME/.cache/trainbench}/kwok/kwok-vX.Y.Z-HASH/{bin/kwok,stages/*.yaml}
# so a machine builds it once. Prints that bin directory on stdout (progress goes to stderr); the
# stages are in ../stages beside it.
#   scripts/kwok.sh          build if absent, print the directory
#   scripts/kwok.sh --path   print the directory only (exit 1 when not built)
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
mod="$here/tests/kwok/build"
# shellcheck source=lib/go-build.sh
source "$here/scripts/lib/go-build.sh"
go_require "$mod" kwok
pin=$(go_pin "$mod" sigs.k8s.io/kwok kwok)
stages="node/fast node/heartbeat pod/fast"
ldflags="-s -w"
hash=$(go_key "$ldflags stages:$stages" "$mod/go.mod" "$mod/go.sum" "$mod/tools.go")
root="${TRAINBENCH_CACHE:-$HOME/.cache/trainbench}/kwok"
dir="$root/kwok-$pin-$hash"
# After the build, before the rename into place: the stages from the module's own source (the
# module cache holds it once the build has downloaded it; kustomization.yaml, READMEs and
# testdata stay behind), and a check that the binary runs.
go_after_build() {
  local src s f n=0
  src=$(cd "$mod" && GOFLAGS=-mod=readonly go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)
  mkdir -p "$1/../stages"
  for s in $stages; do
    for f in "$src/kustomize/stage/$s"/*.yaml; do
      [ "$(basename "$f")" = kustomization.yaml ] && continue
      grep -q '^kind: Stage$' "$f" || continue
      cp "$f" "$1/../stages/"
      n=$((n + 1))
    done
  done
  chmod -R u+w "$1/../stages"
  [ "$n" -ge 4 ] || { echo "kwok: only $n stages in $src/kustomize/stage" >&2; return 1; }
  "$1/kwok" --help >/dev/null 2>&1 || { echo "kwok: $1/kwok does not run" >&2; return 1; }
}
[ "${1:-}" = --path ] || [ -x "$dir/bin/kwok" ] ||
  echo "kwok: kwok $pin (cold: about a minute on 2 cores after the control plane's build, whose k8s.io packages it shares)" >&2
go_cached_build "kwok $pin" "$dir" "$mod" "${1:-}" kwok -- -ldflags "$ldflags" sigs.k8s.io/kwok/cmd/kwok
# Builds of other pins are not needed any more (Go's own cache keeps a rebuild of them quick).
for old in "$root"/kwok-*; do [ "$old" = "$dir" ] || rm -rf "$old"; done
