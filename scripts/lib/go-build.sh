# shellcheck shell=bash
# Sourced by the scripts that build a pinned upstream tool from the Go module proxy into a cache
# outside the clone (scripts/controlplane.sh, tests/metrics/prometheus.sh, ...): the Go check, the
# cache key, and the locked build that a second caller waits for and then finds done.
#
#   go_require MOD_DIR WHO          fails unless the Go in /usr/local/go is at least go.mod's `go` line;
#                                   sets GO_VERSION
#   go_key TEXT FILE...             12 hex digits of TEXT (build flags), the files, GO_VERSION and
#                                   GO_GCFLAGS: a cache key
#   go_cached_build WHO DIR MOD_DIR MODE BIN... -- GO_BUILD_ARGS...
#       prints DIR/bin when every BIN is there; otherwise (MODE --path: exit 1) builds them with
#       `go build -o DIR/bin/ GO_BUILD_ARGS` in MOD_DIR (-o first: go build reads no flag after a
#       package), checked against its committed go.sum (-mod=readonly), one build per machine at
#       a time (a lock beside DIR), into a temporary directory renamed into place, and then prints
#       DIR/bin. go_after_build, when the caller defines it, runs with the temporary bin directory
#       before the rename (a version check).
export PATH="/usr/local/go/bin:$PATH"
# Every build here compiles with no DWARF (the links strip it anyway: -ldflags -s -w), and with
# the same flags, so that a package one build compiled (k8s.io at the control plane's version)
# serves the next from Go's build cache. The compile of k8s.io/client-go/kubernetes and its
# dependencies, cold: 97 core-seconds against 113 with DWARF (docs/development.md). A caller's
# own `-gcflags all=...` after it replaces it for that build.
GO_GCFLAGS="all=-dwarf=false"
# The compiler and linker with GOGC=400 (Go's default 100): less of their time collecting garbage,
# for more memory (a compile's peak 0.5 GB against 0.35 GB). The same client-go compile, cold,
# without DWARF, on the quiet machine, alternating: 99 and 102 core-seconds against 123 and 125.
# The binaries are the same (GOGC is no input of Go's build cache).
GO_BUILD_GOGC=400

go_require() {
  local mod=$1 who=$2 need
  need=$(awk '$1=="go"{print $2}' "$mod/go.mod")
  GO_VERSION=$(go env GOVERSION 2>/dev/null | sed 's/^go//') || true
  if [ -z "$GO_VERSION" ] || [ "$(printf '%s\n%s\n' "$need" "$GO_VERSION" | sort -V | head -1)" != "$need" ]; then
    echo "$who: Go >= $need is needed (found: ${GO_VERSION:-none}); the polyglot machines have it in /usr/local/go" >&2
    exit 1
  fi
}

# go_pin MOD_DIR MODULE WHO: the version go.mod's require line pins MODULE to (exits when none).
go_pin() {
  local pin
  pin=$(awk -v m="$2" '$1 == "require" && $2 == m {print $3} $1 == m {print $2}' "$1/go.mod" | head -1)
  [ -n "$pin" ] || { echo "$3: cannot read the pinned version of $2 from $1/go.mod" >&2; exit 1; }
  echo "$pin"
}

go_key() {
  local text=$1
  shift
  { cat "$@"; echo "$text"; echo "$GO_VERSION"; echo "$GO_GCFLAGS"; } | sha256sum | cut -c1-12
}

go_cached_build() {
  local who=$1 dir=$2 mod=$3 mode=$4 bins=() b
  shift 4
  while [ "$#" -gt 0 ] && [ "$1" != -- ]; do bins+=("$1"); shift; done
  shift
  _go_built() { for b in "${bins[@]}"; do [ -x "$dir/bin/$b" ] || return 1; done; }
  if [ "$mode" = --path ]; then _go_built && { echo "$dir/bin"; return 0; }; exit 1; fi
  if _go_built; then echo "$dir/bin"; return 0; fi
  local root
  root=$(dirname "$dir")
  mkdir -p "$root"
  exec 9>"$root/.lock"
  flock 9  # one build at a time per machine; a second caller waits, then finds it built
  if _go_built; then echo "$dir/bin"; return 0; fi
  local tmp start
  tmp=$(mktemp -d "$root/.build.XXXXXX")
  # shellcheck disable=SC2064
  trap "rm -rf '$tmp'" EXIT
  start=$(date +%s)
  echo "$who: building into $dir (once per machine)" >&2
  # -mod=readonly: go.sum must already hold every module (a changed pin is committed with its go.sum).
  # CGO_ENABLED=0 as the upstream release builds.
  (cd "$mod" && GOGC=$GO_BUILD_GOGC CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false" go build -trimpath -gcflags="$GO_GCFLAGS" -o "$tmp/bin/" "$@")
  if declare -F go_after_build >/dev/null; then go_after_build "$tmp/bin"; fi
  rm -rf "$dir"
  mv "$tmp" "$dir"
  trap - EXIT
  echo "$who: built in $(($(date +%s) - start)) s" >&2
  echo "$dir/bin"
}
