#!/usr/bin/env bash
# The long chaos soak (docs/reliability.md): scripts/chaos.sh [SECONDS] [SEED]
# Starts a real control plane of its own (tests/controlplane/controlplane.sh, in a temp dir;
# scripts/controlplane.sh builds it once), installs the chart's CRD with the real helm, runs
# tests/chaos/chaos_soak.sh against the binaries in build/ (scripts/build.sh first) for SECONDS
# (default 900) of chaos with SEED (default 1), prints its figures and stops the control plane.
# With CHAOS_FIGURES=FILE the figures are also written to FILE as one JSON line. Exits non-zero
# when a check fails. The ctest test controlplane.chaos.soak is the short variant (150 s).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
b=$(cd "$BUILD_DIR" && pwd)
for f in "$b/operator/trainbench-operator" "$b/cli/trainbench" "$b/worker/trainbench-worker" \
         "$b/tests/nodeagent/trainbench-nodeagent" "$b/tests/faultproxy/bin/faultproxy"; do
  [ -x "$f" ] || { echo "scripts/chaos.sh: $f missing: run scripts/build.sh first" >&2; exit 2; }
done
[ -x .tools/helm/helm ] || { echo "scripts/chaos.sh: no helm: run scripts/fetch-helm.sh" >&2; exit 2; }
bash scripts/controlplane.sh >/dev/null
CP=$(mktemp -d "${TMPDIR:-/tmp}/tb-chaos-cp.XXXXXX")
trap 'bash tests/controlplane/controlplane.sh stop "$CP" >/dev/null 2>&1 || true; rm -rf "$CP"' EXIT
bash tests/controlplane/controlplane.sh start "$CP"
export KUBECONFIG="$CP/kubeconfig" CONTROLPLANE_DIR="$CP" HELM="$PWD/.tools/helm/helm" REPO="$PWD"
bash tests/controlplane/chart_install.sh >/dev/null
export OPERATOR="$b/operator/trainbench-operator" BIN_DIRS="$b/cli:$b/worker"
export NODEAGENT="$b/tests/nodeagent/trainbench-nodeagent" FAULTPROXY="$b/tests/faultproxy/bin/faultproxy"
export CRD="$PWD/crds/trainbench.dev_benchmarkjobs.yaml"
bash tests/chaos/chaos_soak.sh "${1:-900}" "${2:-1}"
