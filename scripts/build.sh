#!/usr/bin/env bash
# Configures and builds trainbench into build/ (RelWithDebInfo, Ninja, ccache when present).
# Usage: [BUILD_TARGETS="t1 t2"] [TORCH_FLAVOUR=cpu|cuda] scripts/build.sh [extra cmake args...]
#   (default: every target, the cpu libtorch; TORCH_FLAVOUR=cuda builds against libtorch_cuda and
#   NCCL, cmake/TrainbenchTorch.cmake, best in a BUILD_DIR of its own with the tests off)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
jobs=$(nproc 2>/dev/null || echo 2)
# (ccache, when present, keys on paths relative to the source tree: CMakeLists.txt's launcher; so
# the image builds, docker/*.Dockerfile in /src with the same flags, reuse these objects.)
# The pinned libtorch (PyPI's torch wheel, unpacked into a cache outside the clone).
flavour=${TORCH_FLAVOUR:-cpu}
bash scripts/torch.sh "$flavour" >/dev/null
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" -DTRAINBENCH_TORCH_FLAVOUR="$flavour" \
  "$@" >/dev/null
# shellcheck disable=SC2086
cmake --build "$BUILD_DIR" -j"$jobs" ${BUILD_TARGETS:+--target $BUILD_TARGETS}
ln -sf "$BUILD_DIR/compile_commands.json" compile_commands.json 2>/dev/null || true
