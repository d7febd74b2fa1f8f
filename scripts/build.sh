#!/usr/bin/env bash
# Configures and builds trainbench into build/ (RelWithDebInfo, Ninja, ccache when present).
# Usage: [BUILD_TARGETS="t1 t2"] scripts/build.sh [extra cmake args...]   (default: every target)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
jobs=$(nproc 2>/dev/null || echo 2)
# ccache keys on paths relative to the source tree, so the image builds (docker/*.Dockerfile,
# scripts/images.sh: the same flags in /src) reuse these objects.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
# The pinned libtorch (PyPI's torch wheel, unpacked into a cache outside the clone).
bash scripts/torch.sh >/dev/null
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" "$@" >/dev/null
# shellcheck disable=SC2086
cmake --build "$BUILD_DIR" -j"$jobs" ${BUILD_TARGETS:+--target $BUILD_TARGETS}
ln -sf "$BUILD_DIR/compile_commands.json" compile_commands.json 2>/dev/null || true
