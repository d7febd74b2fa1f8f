#!/usr/bin/env bash
# README command 1: install the dependencies, build, and run the local quickstart benchmark.
set -euo pipefail
cd "$(dirname "$0")/.."
# Only what the quickstart needs: the build packages, the pinned torch wheel, and the two binaries
# (no tests; scripts/test.sh installs and builds the rest).
bash scripts/install-deps.sh --build-only
BUILD_TARGETS="trainbench trainbench-worker" bash scripts/build.sh -DTRAINBENCH_BUILD_TESTS=OFF
exec ./build/cli/trainbench run examples/quickstart.yaml --json build/quickstart-report.json
