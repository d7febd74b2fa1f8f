#!/usr/bin/env bash
# README command 1: install the dependencies, build, and run the local quickstart benchmark.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
exec ./build/cli/trainbench run examples/quickstart.yaml --json build/quickstart-report.json
