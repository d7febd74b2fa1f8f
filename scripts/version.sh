#!/usr/bin/env bash
# Prints trainbench's version, the one place it is defined: project(trainbench VERSION x.y.z) in
# CMakeLists.txt. The image tags and the chart's appVersion follow it.
set -euo pipefail
sed -n 's/^project(trainbench VERSION \([0-9][0-9.]*\).*/\1/p' "$(dirname "$0")/../CMakeLists.txt"
