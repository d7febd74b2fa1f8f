#!/usr/bin/env bash
# The long chaos soak (docs/reliability.md): scripts/chaos.sh [SECONDS] [SEED]
# Runs tests/chaos/chaos_soak.sh against the binaries in build/ (scripts/build.sh first) for
# SECONDS (default 900) of chaos with SEED (default 1) and prints its figures; with
# CHAOS_FIGURES=FILE they are also written to FILE as one JSON line. Exits non-zero when a
# check fails. The ctest test chaos.soak is the short variant (150 s).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
b=$(cd "$BUILD_DIR" && pwd)
for f in "$b/tests/kubesim/kubesim" "$b/operator/trainbench-operator" "$b/cli/trainbench" "$b/worker/trainbench-worker"; do
  [ -x "$f" ] || { echo "scripts/chaos.sh: $f missing: run scripts/build.sh first" >&2; exit 2; }
done
export KUBESIM="$b/tests/kubesim/kubesim" OPERATOR="$b/operator/trainbench-operator"
export BIN_DIRS="$b/cli:$b/worker" CRD="$PWD/crds/trainbench.dev_benchmarkjobs.yaml"
exec bash tests/chaos/chaos_soak.sh "${1:-900}" "${2:-1}"
